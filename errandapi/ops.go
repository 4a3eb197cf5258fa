package errandapi

import (
	"encoding/json"
	"strings"
)

// CodeUnknownTaskKind refuses an operations task whose kind is not one of
// the closed set (dlq.replay, dlq.purge, backup.export, instance.backup).
const CodeUnknownTaskKind Code = "UNKNOWN_TASK_KIND"

// ErrUnknownTaskKind is the sentinel of CodeUnknownTaskKind.
var ErrUnknownTaskKind = &Error{Code: CodeUnknownTaskKind, Message: "unknown task kind", Status: 400}

// The closed set of operations kinds (the kind of OpsSubmit).
const (
	KindDLQReplay      = "dlq.replay"
	KindDLQPurge       = "dlq.purge"
	KindBackupExport   = "backup.export"
	KindInstanceBackup = "instance.backup"
)

// OpsStatusOf is the HTTP status of an operations API refusal: the v1
// table's, and 400 for the operations API's own unknown_task_kind.
func OpsStatusOf(c Code) int {
	if c == CodeUnknownTaskKind {
		return 400
	}
	return StatusOf(c)
}

// OpsCode returns code in the operations API's lowercase spelling
// (`not_cancellable`); the statuses are OpsStatusOf's.
func OpsCode(c Code) string { return strings.ToLower(string(c)) }

// OpsErrorResponse is the body of a refused operations call:
// {"error": {"code": "not_cancellable", "message": "…"}}.
type OpsErrorResponse struct {
	Error OpsErrorDetail `json:"error"`
}

// OpsErrorDetail is the error object of an OpsErrorResponse; Code is
// lowercase.
type OpsErrorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// OpsSubmit is the body of POST /api/tasks. MaxAttempts defaults to 3 and is
// clamped to 8.
type OpsSubmit struct {
	Kind           string          `json:"kind"`
	Payload        json.RawMessage `json:"payload,omitempty"`
	IdempotencyKey string          `json:"idempotency_key"`
	MaxAttempts    *int64          `json:"max_attempts,omitempty"`
}

// OpsShortcut is the body of the routes that start one kind (DELETE
// /api/dlq, POST /api/backup/export, POST /api/instances/{id}/backup): an
// OpsSubmit without kind, which the path names. Without an IdempotencyKey
// every call is a new job.
type OpsShortcut struct {
	Payload        json.RawMessage `json:"payload,omitempty"`
	IdempotencyKey string          `json:"idempotency_key,omitempty"`
	MaxAttempts    *int64          `json:"max_attempts,omitempty"`
}

// OpsTask is one operations task (a job) as the operations API shows it.
// Times are epoch seconds, as docs/ops.md says.
type OpsTask struct {
	ID             string          `json:"id"`
	Owner          string          `json:"owner"`
	Kind           string          `json:"kind"`
	Status         string          `json:"status"`
	IdempotencyKey string          `json:"idempotency_key"`
	Attempt        int             `json:"attempt"`
	MaxAttempts    int             `json:"max_attempts"`
	CreatedAt      int64           `json:"created_at"`
	RunAt          int64           `json:"run_at"`
	FinishedAt     int64           `json:"finished_at,omitempty"`
	LastError      string          `json:"last_error,omitempty"`
	Payload        json.RawMessage `json:"payload,omitempty"`
	// Progress is items done of total while the job runs and once it ends.
	Progress *OpsProgress `json:"progress,omitempty"`
	// Result is what the job produced (SUCCEEDED), or its last checkpoint.
	Result json.RawMessage `json:"result,omitempty"`
}

// OpsProgress counts a job's items.
type OpsProgress struct {
	Done  int `json:"done"`
	Total int `json:"total"`
}

// OpsTaskResponse answers a submission, a read, a cancel and a retry: the
// task, and its id and status again at the top level. AlreadyExisted is
// true when a submission found the job of the same (owner, kind,
// idempotency_key).
type OpsTaskResponse struct {
	Task           OpsTask `json:"task"`
	AlreadyExisted bool    `json:"already_existed"`
	ID             string  `json:"id"`
	Status         string  `json:"status"`
}

// OpsTaskList answers GET /api/tasks: one page, newest first, with the
// limit and offset actually used (after clamping).
type OpsTaskList struct {
	Tasks  []OpsTask `json:"tasks"`
	Limit  int       `json:"limit"`
	Offset int       `json:"offset"`
}

// DLQSelector names the dead letters a dlq.replay or dlq.purge works on:
// exactly one of IDs (failed tasks of the instance), Queue (every failed
// task of that queue) or DeadLetterQueue (the copies in that queue).
type DLQSelector struct {
	Instance        string   `json:"instance"`
	IDs             []string `json:"ids,omitempty"`
	Queue           string   `json:"queue,omitempty"`
	DeadLetterQueue string   `json:"dead_letter_queue,omitempty"`
}

// DLQResult is the result of a dlq.replay or dlq.purge: how many tasks were
// replayed (or purged), skipped (no longer failed, or running) and refused
// (no such task of the instance).
type DLQResult struct {
	Progress OpsProgress `json:"progress"`
	Replayed int         `json:"replayed,omitempty"`
	Purged   int         `json:"purged,omitempty"`
	Skipped  int         `json:"skipped"`
	Refused  int         `json:"refused"`
}

// ExportResult is the result of a backup.export job: what its configuration
// bundle holds, and where to read it. The bundle itself (any size) is read
// with GET /api/tasks/{id}/bundle (Bundle), since a result is capped at
// 64 KiB; Bytes and SHA256 check the download.
type ExportResult struct {
	Version   int    `json:"version"`
	Instances int    `json:"instances"`
	Queues    int    `json:"queues"`
	Triggers  int    `json:"triggers"`
	Bytes     int64  `json:"bytes"`
	SHA256    string `json:"sha256"`
	// Parts is how many stored parts the bundle is kept in beside the job,
	// and Attempt the job's attempt that wrote them.
	Parts   int    `json:"parts"`
	Attempt int    `json:"attempt"`
	Bundle  string `json:"bundle"`
}
