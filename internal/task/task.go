package task

import (
	"encoding/json"

	"github.com/errandhq/errand/errandapi"
)

// Limits of the v1 API (docs/api.md).
const (
	MaxPayloadBytes = errandapi.MaxPayloadBytes // payload, params and result, each
	MaxAddBatch     = 100                       // tasks in one add call
	MaxDepth        = 8                         // trigger / in-delivery add chain
	MaxNameLen      = 500
	MaxWebhookLen   = 2048
)

// Sources a task may come from.
const (
	SourceAPI        = "api"
	SourceConsole    = "console"
	SourceMCP        = "mcp"
	SourceFunction   = "function" // added from inside a function's attempt (its delivery token)
	SourceWebhook    = "webhook"  // added by a webhook receiver with its delivery's token
	SourceLease      = "lease"    // added by a pull worker with its leased task's token
	SourceDeadLetter = "deadletter"
	SourceRerun      = "rerun"
)

// Attempt statuses recorded in a task's history: the contract's.
const (
	AttemptRunning   = errandapi.AttemptRunning
	AttemptSucceeded = errandapi.AttemptSucceeded
	AttemptFailed    = errandapi.AttemptFailed
	AttemptTimedOut  = errandapi.AttemptTimedOut
	AttemptDeferred  = errandapi.AttemptDeferred
	AttemptReleased  = errandapi.AttemptReleased
	AttemptExpired   = errandapi.AttemptLeaseExpired
)

// Task is one unit of work. Times are epoch milliseconds; zero means unset.
type Task struct {
	InstanceID   string
	ID           string
	Queue        string
	Name         string // "" when unnamed
	State        State
	Pull         bool // the queue is a pull queue (fixed at creation)
	Attempt      int  // counted attempts started so far
	MaxAttempts  int
	RunAt        int64
	CreatedAt    int64
	StartedAt    int64 // start of the attempt in flight
	DeadlineAt   int64 // end of the attempt in flight (push deadline)
	FinishedAt   int64
	Source       string
	Depth        int
	Params       json.RawMessage // nil or raw JSON
	DeadLetterOf string
	Target       *Target // the task's own target, nil for the queue's
	Payload      json.RawMessage
	Result       json.RawMessage
	LastError    string
	Attempts     []Attempt // finished attempts, oldest first
	// DeadlineSeconds is the task's own deadline; 0 uses the queue's.
	DeadlineSeconds int
	// Priority orders the due tasks of a queue: a higher one is claimed
	// first (0 by default, at most MaxPriority), equal ones by RunAt.
	Priority int
	// LeaseID fences the attempt in flight: every write that ends it must
	// carry the same value. LeaseExpiresAt is when the claim lapses.
	LeaseID        string
	LeaseExpiresAt int64
}

// Attempt is one finished (or deferred) attempt.
type Attempt struct {
	Attempt    int    `json:"attempt"`
	Status     string `json:"status"`
	StartedAt  int64  `json:"startedAt"`
	EndedAt    int64  `json:"endedAt,omitempty"`
	HTTPStatus int    `json:"httpStatus,omitempty"`
	Error      string `json:"error,omitempty"`
	// Lease is the lease of a pull attempt its worker acknowledged, so
	// that the same ack repeated is recognized (AckedBy). It is stored
	// (and kept in instance backups) but never answered by the API: the
	// lease has ended.
	Lease string `json:"lease,omitempty"`
}

// Target is where a push task goes: exactly one of Webhook, Function and
// Channel is set.
type Target struct {
	Webhook  string `json:"webhook,omitempty"`
	Function string `json:"function,omitempty"`
	Channel  string `json:"channel,omitempty"`
	// Headers, with Webhook only, are sent with every delivery (an
	// Authorization the receiver asks for): canonical names, values kept
	// but never answered (Masked). See ValidateTarget.
	Headers map[string]string `json:"headers,omitempty"`
}

// Kind names which kind of target t is.
func (t *Target) Kind() string {
	switch {
	case t == nil:
		return ""
	case t.Webhook != "":
		return "webhook"
	case t.Function != "":
		return "function"
	case t.Channel != "":
		return "channel"
	}
	return ""
}
