package httpapi

import (
	"net/http"

	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/task"
)

// addSource is the source an add's tasks get: api, or the client surface
// the request names in the SourceHeader. Only the surfaces that call this
// API for someone else may be named (the console, the MCP server); the
// other sources (function, schedule, hook, task, deadletter, rerun) are set by errand
// itself and cannot be claimed. The header is the caller's own statement,
// like a User-Agent: it labels the task and grants nothing.
func addSource(r *http.Request) (string, error) {
	v := r.Header.Get(errandapi.SourceHeader)
	switch v {
	case "", task.SourceAPI:
		return task.SourceAPI, nil
	case task.SourceConsole, task.SourceMCP:
		return v, nil
	}
	return "", task.FieldErrorf(task.CodeInvalidArgument, errandapi.SourceHeader, "must be api, console or mcp, not %s", task.Quote(v))
}
