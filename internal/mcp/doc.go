// Package mcp is errand's MCP server: the v1 API as tools for an AI agent,
// over the official Go SDK (github.com/modelcontextprotocol/go-sdk).
//
// It is a surface over the Go client (github.com/errandhq/errand/client),
// never a second implementation: every tool is one or two client calls,
// so every call is checked by the API itself (key, grant, rate limit,
// validation) and refusals come back as tool errors carrying the API's
// code. The tools a session lists are those its key's grants allow
// (GET /v1/keys/self); errand dev lists all of them.
//
// Two transports: `errand mcp` serves stdio against a server (Serve), and
// every errand node serves streamable HTTP at /mcp (NewHTTPHandler), where
// each call uses the caller's own Bearer key against the node's API in
// process.
package mcp
