package main

import (
	"io"
	"log/slog"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/errandhq/errand/client"
	"github.com/errandhq/errand/internal/mcp"
)

// mcpVersion is the errand version reported to MCP clients.
func mcpVersion() string {
	if version != "" {
		return version
	}
	return "dev"
}

func newMCPCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "mcp",
		Short: "Serve MCP over stdio for an AI agent, against a running node",
		Long: `Serve the Model Context Protocol over stdin and stdout: the command an MCP client
(an agent's host) starts. Its tools call the node at --url or ERRAND_URL with the key of
--api-key or ERRAND_API_KEY (errand dev needs none). Logs go to stderr, as stdout carries
the protocol. Every node also serves MCP over streamable HTTP at /mcp.`,
		Example: `  errand mcp
  ERRAND_URL=https://errand.example.com ERRAND_API_KEY=errk_… errand mcp`,
		Args: noArgs,
	}
	f := apiCmd(c, false, false)
	hide(c.Flags(), "json") // the protocol is JSON already
	c.RunE = func(c *cobra.Command, _ []string) error {
		key := f.key
		if key == "" {
			key = envOr("ERRAND_API_KEY", "")
		}
		cl, err := client.New(f.url, mcp.ClientOptions(key, nil))
		if err != nil {
			return usageErrorf("%s: %w", clientFlag(err), err)
		}
		// Warnings and errors only: the SDK's INFO lines (a session
		// connected, ended) are noise in the agent's server log.
		log := slog.New(slog.NewTextHandler(c.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelWarn}))
		t := &sdk.IOTransport{Reader: io.NopCloser(c.InOrStdin()), Writer: nopWriteCloser{c.OutOrStdout()}}
		if err := mcp.Serve(c.Context(), cl, t, mcpVersion(), log); err != nil && c.Context().Err() == nil {
			return err
		}
		return nil
	}
	return c
}

// nopWriteCloser is stdout as the transport's writer: closing the session
// does not close the process's stdout.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
