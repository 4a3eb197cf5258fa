package mcp

import (
	"context"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/errandhq/errand/client"
)

// Serve runs one MCP session over t (errand mcp: stdio) whose tools call
// the API with c, until the MCP client disconnects or ctx ends. The tools
// listed are those c's key allows; if the server cannot be reached at
// start, every tool is listed (each call is checked by the API anyway).
// A key the server refuses is an error at once.
func Serve(ctx context.Context, c *client.Client, t mcp.Transport, version string, log *slog.Logger) error {
	self, err := c.Self(ctx)
	if err != nil {
		if !client.IsConnectionError(err) {
			return err
		}
		log.Warn("errand is not reachable yet; listing every tool, each call is checked when it is made", "err", err)
		self = nil
	}
	s := NewServer(Options{Self: self, Version: version, Logger: log,
		Client: func(context.Context, *mcp.RequestExtra) (*client.Client, error) { return c, nil }})
	return s.Run(ctx, t)
}
