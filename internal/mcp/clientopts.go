package mcp

import (
	"net/http"
	"time"

	"github.com/errandhq/errand/client"
)

// ClientOptions are the options of the client a session's tools call the
// API with, over either transport: tasks it adds get source mcp, and a
// RATE_LIMITED answer is given to the agent at once (with the wait the
// server asked, in the error's next step) instead of holding the tool call
// while the client waits it out.
func ClientOptions(key string, hc *http.Client) client.Options {
	return client.Options{APIKey: key, HTTPClient: hc, Source: "mcp", UserAgent: "errand-mcp",
		Retry: client.RetryPolicy{MaxRetryAfter: time.Millisecond}}
}
