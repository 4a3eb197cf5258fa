package client

import (
	"context"
	"net/url"
	"time"
)

// SetSleep replaces how c waits between tries (tests advance a fake clock
// or record the waits instead of sleeping).
func SetSleep(c *Client, f func(ctx context.Context, d time.Duration) error) { c.sleep = f }

// SetJitter replaces c's random draw in [0, n).
func SetJitter(c *Client, f func(n int64) int64) { c.jitter = f }

// Backoff is c's wait before retry n.
func Backoff(c *Client, n int) time.Duration { return c.backoff(n) }

// Raw sends a call the exported methods never send as they are (a delete
// without ?confirm=true), through the same path as every call.
func Raw(c *Client, ctx context.Context, method string, path []string, query url.Values) error {
	return c.do(ctx, call{method: method, path: path, query: query})
}
