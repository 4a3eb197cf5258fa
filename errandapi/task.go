package errandapi

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
)

// State is a task's state as the v1 API names it.
type State string

// The v1 states. A pull queue's task in flight is leased, a push queue's
// running.
const (
	StateScheduled State = "scheduled"
	StateRunning   State = "running"
	StateLeased    State = "leased"
	StateRetrying  State = "retrying"
	StateSucceeded State = "succeeded"
	StateFailed    State = "failed"
	StateCancelled State = "cancelled"
)

// Ended reports whether s is a final state: succeeded, failed or
// cancelled.
func (s State) Ended() bool {
	return s == StateSucceeded || s == StateFailed || s == StateCancelled
}

// Attempt statuses in a task's history.
const (
	AttemptRunning      = "running"
	AttemptSucceeded    = "succeeded"
	AttemptFailed       = "failed"
	AttemptTimedOut     = "timed_out"
	AttemptDeferred     = "deferred"
	AttemptReleased     = "released"
	AttemptLeaseExpired = "lease_expired"
)

// Target is where a push task goes: exactly one field is set.
type Target struct {
	Webhook  string `json:"webhook,omitempty"`
	Function string `json:"function,omitempty"`
	Channel  string `json:"channel,omitempty"`
	// Headers, with Webhook only, are sent with every delivery, as a
	// receiver behind a gateway asks (Authorization, X-Api-Key …): at most
	// 20, names and values at most 8 KiB together, none errand sets itself.
	// Answers show each value as HiddenHeaderValue. Target is therefore not
	// comparable with ==.
	Headers map[string]string `json:"headers,omitempty"`
}

// String names the target for people: "webhook https://…" (and
// " with headers A, B" when it sends some), "function app/send-receipt",
// "channel room-1", or "" for none.
func (t *Target) String() string {
	switch {
	case t == nil:
		return ""
	case t.Webhook != "" && len(t.Headers) > 0:
		return "webhook " + t.Webhook + " with headers " + strings.Join(slices.Sorted(maps.Keys(t.Headers)), ", ")
	case t.Webhook != "":
		return "webhook " + t.Webhook
	case t.Function != "":
		return "function " + t.Function
	case t.Channel != "":
		return "channel " + t.Channel
	}
	return ""
}

// Task is a task in v1 JSON. A list's tasks have no Payload, Result or
// Attempts; one task's (GET, run, cancel, retry, ack, extend, release)
// have all three.
type Task struct {
	ID          string  `json:"id"`
	Queue       string  `json:"queue"`
	Name        *string `json:"name"`
	State       State   `json:"state"`
	Attempt     int     `json:"attempt"`
	MaxAttempts int     `json:"maxAttempts"`
	RunAt       int64   `json:"runAt"`
	CreatedAt   int64   `json:"createdAt"`
	DeadlineAt  *int64  `json:"deadlineAt"`
	FinishedAt  *int64  `json:"finishedAt"`
	// LeaseExpiresAt is set on a leased task; its leaseId never is.
	LeaseExpiresAt  *int64          `json:"leaseExpiresAt,omitempty"`
	Source          string          `json:"source"`
	Depth           int             `json:"depth"`
	Priority        int             `json:"priority"` // higher goes first among the queue's due tasks (0–9)
	Params          json.RawMessage `json:"params"`
	DeadLetterOf    *string         `json:"deadLetterOf"`
	Target          *Target         `json:"target"`
	DeadlineSeconds *int            `json:"deadlineSeconds,omitempty"`
	Payload         json.RawMessage `json:"payload,omitempty"`
	Result          json.RawMessage `json:"result,omitempty"`
	LastError       *string         `json:"lastError"`
	// Attempts is [] on a task with none; a list's tasks leave it out (nil).
	Attempts []Attempt `json:"attempts,omitzero"`
}

// Attempt is one entry of a task's history, the one in flight included.
type Attempt struct {
	Attempt    int     `json:"attempt"`
	Status     string  `json:"status"`
	StartedAt  int64   `json:"startedAt"`
	EndedAt    *int64  `json:"endedAt"`
	HTTPStatus *int    `json:"httpStatus"`
	Error      *string `json:"error"`
}

// TaskPatchRequest is the body of a task's PATCH: only the fields sent
// change, all or (refused) none of them. Priority (0–MaxPriority) orders
// the task among its queue's due tasks whenever it waits for a claim: at
// once for a scheduled or retrying task, from its next retry for a
// running or leased one, after a retry for a failed one. Delay (seconds
// from now) or RunAt (epoch ms; a past time means now), as an add takes
// them, reschedule a scheduled or retrying task (NOT_RUNNABLE for any
// other).
type TaskPatchRequest struct {
	Priority *int     `json:"priority,omitempty"`
	Delay    *float64 `json:"delay,omitempty"`
	RunAt    *int64   `json:"runAt,omitempty"`
}

// TaskResponse is the answer of GET, PATCH, run, cancel, retry, ack,
// extend and release of one task.
type TaskResponse struct {
	Task *Task `json:"task"`
}

// TaskPage is one page of a queue's tasks; Cursor is nil on the last.
type TaskPage struct {
	Cursor *string `json:"cursor"`
	Tasks  []Task  `json:"tasks"`
}

// NewTask is one task of an add. Delay (seconds, fractions allowed) and
// RunAt (epoch ms) are exclusive. Priority: the queue's due tasks of a
// higher priority are delivered or leased first, each priority in runAt
// order.
type NewTask struct {
	Name            string          `json:"name,omitempty"`
	Payload         json.RawMessage `json:"payload,omitempty"`
	Params          json.RawMessage `json:"params,omitempty"`
	Target          *Target         `json:"target,omitempty"`
	Delay           *float64        `json:"delay,omitempty"`
	RunAt           *int64          `json:"runAt,omitempty"`
	DeadlineSeconds *int            `json:"deadlineSeconds,omitempty"`
	Priority        *int            `json:"priority,omitempty"` // 0–MaxPriority, default 0: higher goes first
}

// MaxPriority is the highest priority a task may have (NewTask.Priority).
const MaxPriority = 9

// AddRequest is the body of an add in its envelope form; the server also
// takes one NewTask alone or an array of them.
type AddRequest struct {
	Tasks []NewTask `json:"tasks"`
}

// AddResult is the result of one task of an add, in request order:
// {ok: true, id, name, state, runAt} or {ok: false, code, id, name,
// message} (id is the existing task's for TASK_EXISTS).
type AddResult struct {
	OK      bool    `json:"ok"`
	ID      string  `json:"id,omitempty"`
	Name    *string `json:"name"`
	State   State   `json:"state,omitempty"`
	RunAt   int64   `json:"runAt,omitempty"`
	Code    Code    `json:"code,omitempty"`
	Message string  `json:"message,omitempty"`
}

// Err is the refusal of this task as an *Error (ID set for TASK_EXISTS),
// or nil when it was added.
func (r *AddResult) Err() error {
	if r.OK {
		return nil
	}
	return &Error{Code: r.Code, Message: r.Message, Status: StatusOf(r.Code), ID: r.ID}
}

// AddResponse is the answer of an add: 201 when at least one task was
// added, 409 with Error naming the first refusal when none was.
type AddResponse struct {
	Error *ErrorDetail `json:"error,omitempty"`
	Tasks []AddResult  `json:"tasks"`
}

// SourceHeader is the request header with which a client surface names
// itself as the source of the tasks it adds: "api" (the default),
// "console" or "mcp". Any other value is INVALID_ARGUMENT.
const SourceHeader = "X-Errand-Source"

// HiddenHeaderValue is how answers show the value of each header a
// webhook target sends (Target.Headers): the values are kept and sent,
// never answered. A queue's target sent back with it as a header's value
// keeps the value stored for that header when the URL keeps its scheme,
// host and port; anywhere else it is refused.
const HiddenHeaderValue = "(hidden)"
