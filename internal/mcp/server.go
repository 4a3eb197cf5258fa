package mcp

import (
	"cmp"
	"context"
	"log/slog"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/errandhq/errand/client"
	"github.com/errandhq/errand/docs"
	"github.com/errandhq/errand/errandapi"
)

// GuideURI is the resource that explains errand to an agent: docs/agent-guide.md.
const GuideURI = "docs://tasks/guide"

// QueueURITemplate is the resource template of one queue: its settings and
// counts by state, as tasks_list_queues gives them.
const QueueURITemplate = "errand://tasks/{instance}/queues/{queue}"

// ClientFunc returns the client one request of a session calls the API
// with: the stdio server's one client, or over HTTP a client carrying the
// key of the request (extra is nil on stdio).
type ClientFunc func(ctx context.Context, extra *mcp.RequestExtra) (*client.Client, error)

// Options configure a server.
type Options struct {
	// Self is the key the server serves, from GET /v1/keys/self: only the
	// tools its grants allow are listed. Nil or Self.Dev lists every tool
	// (errand dev: "MCP scopes are not checked").
	Self *errandapi.KeySelf
	// Client gives each call its client.
	Client ClientFunc
	// Version is reported to the MCP client (default "dev").
	Version string
	Logger  *slog.Logger
}

// allTools is every tool in the order they are listed.
func allTools() []tool {
	return slices.Concat(queueTools, taskTools, pullTools, triggerTools, instanceTools)
}

// ToolNames returns every tool's name and the grant it needs, in order.
func ToolNames() map[string]errandapi.Role {
	out := map[string]errandapi.Role{}
	for _, t := range allTools() {
		out[t.def.Name] = t.need
	}
	return out
}

// instructions tell the model what the server is, at initialization.
const instructions = "errand is a durable task queue: add tasks (JSON payloads) to queues; errand delivers each when due to its target (push queues) or holds it for a worker to lease (pull queues), and retries with backoff. Read the resource " + GuideURI + " before first use. Every tool takes the tasks instance (a namespace of queues) by name. Errors start with the API's code and say what to do next."

// NewServer makes an MCP server with the tools opts.Self allows, the guide
// resource and the queue resource template.
func NewServer(opts Options) *mcp.Server {
	if opts.Version == "" {
		opts.Version = "dev"
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "errand", Title: "errand task queue", Version: opts.Version},
		&mcp.ServerOptions{Instructions: instructions, Logger: sdkLogger(opts.Logger), SetCacheable: private,
			// Tools and resources, announced with their list-changed
			// notifications; no logging (the server sends clients no log
			// messages).
			Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true},
				Resources: &mcp.ResourceCapabilities{ListChanged: true}}})
	s.AddReceivingMiddleware(ungranted(opts.Self))
	for _, t := range allTools() {
		if !allows(opts.Self, t.need) {
			continue
		}
		call := t.call
		s.AddTool(t.def, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			c, err := opts.Client(ctx, req.Extra)
			if err != nil {
				return errorResult(err), nil
			}
			return call(ctx, c, req.Params.Arguments), nil
		})
	}
	s.AddResource(&mcp.Resource{URI: GuideURI, Name: "guide", Title: "errand for agents", MIMEType: "text/markdown",
		Description: "How errand works, for an agent: instances, queues and tasks; targets; retries; pull workers; triggers; grants and errors.",
		Size:        int64(len(docs.AgentGuide))},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: GuideURI, MIMEType: "text/markdown", Text: docs.AgentGuide}}}, nil
		})
	if allows(opts.Self, errandapi.RoleRead) {
		s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: QueueURITemplate, Name: "queue", Title: "A queue", MIMEType: "application/json",
			Description: "One queue: its settings and its tasks' counts by state (each stops at 10,000)."},
			func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				return readQueue(ctx, opts.Client, req)
			})
	}
	return s
}

// ungranted answers a call of a tool the session does not list for want
// of a grant as a refused call (a tool error, PERMISSION_DENIED naming
// the grant), as mcp.md promises, not as the protocol's unknown tool,
// which tells an agent nothing it can act on.
func ungranted(self *errandapi.KeySelf) mcp.Middleware {
	needs := ToolNames()
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if r, ok := req.(*mcp.CallToolRequest); ok && r.Params != nil {
				if need, known := needs[r.Params.Name]; known && !allows(self, need) {
					return errorResult(refuse(errandapi.CodePermissionDenied, "%s needs the %s grant on an instance; this key's strongest grant is %s",
						r.Params.Name, need, cmp.Or(string(self.Strongest()), "none"))), nil
				}
			}
			return next(ctx, method, req)
		}
	}
}

// allows reports whether a session of self lists a tool that needs need.
func allows(self *errandapi.KeySelf, need errandapi.Role) bool {
	return self == nil || self.Dev || self.Strongest().Includes(need)
}

// readQueue reads the queue resource errand://tasks/{instance}/queues/{queue}.
func readQueue(ctx context.Context, clientFor ClientFunc, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	instance, queue, ok := parseQueueURI(uri)
	if !ok {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	c, err := clientFor(ctx, req.Extra)
	if err != nil {
		return nil, err
	}
	q, err := c.GetQueue(ctx, instance, queue)
	if err != nil {
		if e, ok := err.(*errandapi.Error); ok && e.Code == errandapi.CodeNotFound {
			return nil, mcp.ResourceNotFoundError(uri)
		}
		return nil, err
	}
	raw, err := errandapi.Marshal(errandapi.QueueResponse{Queue: q})
	if err != nil {
		return nil, err
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(raw)}}}, nil
}

// private marks every result a client may cache as its own caller's only
// (the SDK's default is public): the tools a session lists follow its
// key's grants, and a resource holds one organization's queue.
func private(_ context.Context, _ mcp.Request, c *mcp.Cacheable) { c.CacheScope = "private" }
