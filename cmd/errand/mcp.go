package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/errandhq/errand/client"
	"github.com/errandhq/errand/internal/mcp"
)

// version is the errand version reported to MCP clients.
const version = "dev"

// runMCP serves MCP over stdin and stdout against an errand server: the
// command an MCP client (an agent's host) starts. Logs go to stderr, as
// stdout carries the protocol.
func runMCP(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("mcp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	url := fs.String("url", cmp.Or(os.Getenv("ERRAND_URL"), "http://127.0.0.1:9191"), "the errand server (default $ERRAND_URL, else http://127.0.0.1:9191)")
	key := fs.String("api-key", os.Getenv("ERRAND_API_KEY"), "the API key (default $ERRAND_API_KEY; errand dev needs none)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	c, err := client.New(*url, mcp.ClientOptions(*key, nil))
	if err != nil {
		return fmt.Errorf("--url: %w", err)
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	t := &sdk.IOTransport{Reader: os.Stdin, Writer: nopWriteCloser{stdout}}
	if err := mcp.Serve(ctx, c, t, version, log); err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}

// nopWriteCloser is stdout as the transport's writer: closing the session
// does not close the process's stdout.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
