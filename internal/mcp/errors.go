package mcp

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/errandhq/errand/client"
	"github.com/errandhq/errand/errandapi"
)

// ErrorMetaKey is the _meta key of a tool error's result under which the
// API's refusal is given as data: {"code", "message", "status"} (and "id"
// for TASK_EXISTS).
const ErrorMetaKey = "errand/error"

// next tells the agent what to do after a refusal with each code.
var next = map[errandapi.Code]string{
	errandapi.CodeInvalidArgument:       "fix the argument named at the start of the message and call again.",
	errandapi.CodeNotFound:              "check the names and the id: tasks_list_queues lists an instance's queues, tasks_list a queue's tasks, tasks_list_triggers its trigger rules. An instance the key has no grant on also answers NOT_FOUND.",
	errandapi.CodeTaskExists:            "a task with this name is already in the queue (its id is in the message data); tasks_get shows it. Treat it as added, or use another name for a new task.",
	errandapi.CodeQueueExists:           "the queue exists: change it with tasks_set_queue.",
	errandapi.CodeInstanceExists:        "the instance exists already: use it.",
	errandapi.CodeNoTarget:              `the queue has no target. Adding tasks: give each task a target ({"webhook": "https://…"}, {"function": "group/name"} or {"channel": "name"}), or set one on the queue with tasks_set_queue. A trigger rule: its tasks carry no target, so set one on its queue with tasks_set_queue, or use a pull queue. Nothing of this call was changed.`,
	errandapi.CodeLeaseLost:             "the lease is over (it expired, or the task was acked or released): do not finish or report this task; lease again with tasks_lease.",
	errandapi.CodePayloadTooLarge:       "a payload, params or result is at most 64 KiB: store large data elsewhere and pass a reference.",
	errandapi.CodeNotCancellable:        "the task has finished already: there is nothing to cancel.",
	errandapi.CodeRunningNotCancellable: "an attempt is running now: wait for it to end (tasks_get), then cancel the task if it is still waiting.",
	errandapi.CodeNotRetryable:          "only a failed task can be retried: tasks_get shows its state.",
	errandapi.CodeNotRunnable:           "run now and a new due time apply to a scheduled or retrying task; this one is running or has finished (tasks_retry re-runs a failed one).",
	errandapi.CodeConfirmRequired:       "this cannot be undone: ask the user to confirm, then call again with confirm: true.",
	errandapi.CodeDepthExceeded:         "a chain of tasks adding tasks is more than 8 deep: stop adding from inside this chain.",
	errandapi.CodeWrongMode:             "tasks_lease works on pull queues only; this queue delivers its tasks itself (tasks_list_queues shows each queue's mode).",
	errandapi.CodeUnauthenticated:       "the API key is missing or not valid: the user must configure one (ERRAND_API_KEY for errand mcp, the Authorization header over HTTP).",
	errandapi.CodePermissionDenied:      "the key's grant on this instance is too small for this call: ask the user for a key with the grant the message names.",
	errandapi.CodeRateLimited:           "the instance's rateLimit was passed: wait, then call again.",
	errandapi.CodeUnavailable:           "errand cannot reach its store right now and nothing was changed: try again in a few seconds.",
	errandapi.CodeInternal:              "errand failed unexpectedly: try once more, then tell the user.",
}

// unanswered is what to do after a call that got no answer: unlike the
// server's UNAVAILABLE, it may have been applied before the connection
// failed.
const unanswered = "no answer came, so the call may or may not have been applied: check with tasks_get or tasks_list before repeating one that adds or changes something (an add with a name is safe to repeat: a second one answers TASK_EXISTS with the task's id)."

// errorResult is a refused call as a tool error: the API's code and
// message and what to do next as text, and the refusal as data in the
// result's _meta (ErrorMetaKey).
func errorResult(err error) *mcp.CallToolResult {
	var e *errandapi.Error
	hint := ""
	switch {
	case errors.As(err, &e):
	case client.IsConnectionError(err):
		e = &errandapi.Error{Code: errandapi.CodeUnavailable, Status: 503,
			Message: fmt.Sprintf("errand did not answer (%v); is the server running?", err)}
		hint = unanswered
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		e = &errandapi.Error{Code: errandapi.CodeUnavailable, Status: 503, Message: "the call was cut short: " + err.Error()}
		hint = unanswered
	default:
		e = &errandapi.Error{Code: errandapi.CodeInternal, Status: 500, Message: err.Error()}
	}
	if hint == "" {
		hint = next[e.Code]
	}
	if hint == "" {
		hint = "see the message; tasks_get or tasks_list_queues show the current state."
	}
	if e.Code == errandapi.CodeRateLimited && e.RetryAfter > 0 {
		hint = fmt.Sprintf("the instance's rateLimit was passed: wait %d s, then call again.", int(math.Ceil(e.RetryAfter.Seconds())))
	}
	data := map[string]any{"code": e.Code, "message": e.Message, "status": e.Status}
	if e.ID != "" {
		data["id"] = e.ID
	}
	res := &mcp.CallToolResult{
		IsError: true,
		Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%s: %s\nNext: %s", e.Code, e.Message, hint)}},
		Meta:    mcp.Meta{ErrorMetaKey: data},
	}
	return res
}

// refuse is a refusal of the MCP layer with an API code (a destructive
// tool called without confirm: true).
func refuse(code errandapi.Code, format string, args ...any) *errandapi.Error {
	return &errandapi.Error{Code: code, Message: fmt.Sprintf(format, args...), Status: errandapi.StatusOf(code)}
}

// renameField says an INVALID_ARGUMENT about the API's field in the
// words of the tool's argument (a header the tool sent for it, say);
// other errors pass unchanged.
func renameField(err error, field, arg string) error {
	var e *errandapi.Error
	if !errors.As(err, &e) || e.Code != errandapi.CodeInvalidArgument || !strings.HasPrefix(e.Message, field+":") {
		return err
	}
	c := *e
	c.Message = arg + strings.TrimPrefix(e.Message, field)
	return &c
}
