// Package docs holds errand's documentation as Markdown files, and embeds
// the ones the binary serves so that what a program shows and what a
// person reads are the same bytes: AgentGuide is the MCP resource
// docs://tasks/guide (docs/mcp.md).
package docs

import _ "embed"

// AgentGuide is docs/agent-guide.md: targets, retries, triggers and pull
// workers, written for an AI agent that uses errand's MCP tools.
//
//go:embed agent-guide.md
var AgentGuide string
