package httpapi

import (
	"encoding/json"

	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/task"
)

// The v1 JSON shapes. Times are epoch milliseconds; absent values are null.

type taskJSON struct {
	ID              string          `json:"id"`
	Queue           string          `json:"queue"`
	Name            *string         `json:"name"`
	State           string          `json:"state"`
	Attempt         int             `json:"attempt"`
	MaxAttempts     int             `json:"maxAttempts"`
	RunAt           int64           `json:"runAt"`
	CreatedAt       int64           `json:"createdAt"`
	DeadlineAt      *int64          `json:"deadlineAt"`
	FinishedAt      *int64          `json:"finishedAt"`
	LeaseExpiresAt  *int64          `json:"leaseExpiresAt,omitempty"`
	Source          string          `json:"source"`
	Depth           int             `json:"depth"`
	Params          json.RawMessage `json:"params"`
	DeadLetterOf    *string         `json:"deadLetterOf"`
	Target          *task.Target    `json:"target"`
	DeadlineSeconds *int            `json:"deadlineSeconds,omitempty"`
	Payload         json.RawMessage `json:"payload,omitempty"`
	Result          json.RawMessage `json:"result,omitempty"`
	LastError       *string         `json:"lastError"`
	Attempts        []attemptJSON   `json:"attempts,omitempty"`
}

type attemptJSON struct {
	Attempt    int     `json:"attempt"`
	Status     string  `json:"status"`
	StartedAt  int64   `json:"startedAt"`
	EndedAt    *int64  `json:"endedAt"`
	HTTPStatus *int    `json:"httpStatus"`
	Error      *string `json:"error"`
}

func strPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func msPtr(v int64) *int64 {
	if v == 0 {
		return nil
	}
	return &v
}

func intPtr(v int) *int {
	if v == 0 {
		return nil
	}
	return &v
}

// toTaskJSON renders t; full adds payload, result and every attempt (the
// one in flight included).
func toTaskJSON(t *task.Task, full bool) *taskJSON {
	j := &taskJSON{
		ID: t.ID, Queue: t.Queue, Name: strPtr(t.Name), State: t.State.V1(t.Pull),
		Attempt: t.Attempt, MaxAttempts: t.MaxAttempts, RunAt: t.RunAt, CreatedAt: t.CreatedAt,
		DeadlineAt: msPtr(t.DeadlineAt), FinishedAt: msPtr(t.FinishedAt),
		Source: t.Source, Depth: t.Depth, Params: t.Params, DeadLetterOf: strPtr(t.DeadLetterOf),
		Target: t.Target, DeadlineSeconds: intPtr(t.DeadlineSeconds), LastError: strPtr(t.LastError),
	}
	if j.Params == nil {
		j.Params = json.RawMessage("null")
	}
	if t.State == task.Running && t.Pull {
		j.LeaseExpiresAt = msPtr(t.LeaseExpiresAt)
	}
	if !full {
		return j
	}
	j.Payload = t.Payload
	j.Result = t.Result
	if j.Result == nil {
		j.Result = json.RawMessage("null")
	}
	j.Attempts = make([]attemptJSON, 0, len(t.Attempts)+1)
	for _, a := range t.Attempts {
		j.Attempts = append(j.Attempts, attemptJSON{Attempt: a.Attempt, Status: a.Status, StartedAt: a.StartedAt,
			EndedAt: msPtr(a.EndedAt), HTTPStatus: intPtr(a.HTTPStatus), Error: strPtr(a.Error)})
	}
	if t.State == task.Running {
		j.Attempts = append(j.Attempts, attemptJSON{Attempt: t.Attempt, Status: task.AttemptRunning, StartedAt: t.StartedAt})
	}
	return j
}

type queueJSON struct {
	Name              string         `json:"name"`
	Mode              task.Mode      `json:"mode"`
	Target            *task.Target   `json:"target"`
	RatePerSecond     *float64       `json:"ratePerSecond"`
	MaxConcurrent     *int           `json:"maxConcurrent"`
	MaxAttempts       int            `json:"maxAttempts"`
	MinBackoffSeconds float64        `json:"minBackoffSeconds"`
	MaxBackoffSeconds float64        `json:"maxBackoffSeconds"`
	MaxDoublings      int            `json:"maxDoublings"`
	MaxAgeSeconds     *int64         `json:"maxAgeSeconds"`
	DeadlineSeconds   int            `json:"deadlineSeconds"`
	DeadLetterQueue   *string        `json:"deadLetterQueue"`
	TargetControl     bool           `json:"targetControl"`
	Paused            bool           `json:"paused"`
	CreatedAt         int64          `json:"createdAt"`
	Counts            map[string]int `json:"counts,omitempty"`
	Capped            []string       `json:"capped"`
}

func toQueueJSON(q *task.Queue, counts map[task.State]int) *queueJSON {
	j := &queueJSON{
		Name: q.Name, Mode: q.Mode, Target: q.Target, MaxConcurrent: intPtr(q.MaxConcurrent),
		MaxAttempts: q.MaxAttempts, MinBackoffSeconds: q.MinBackoffSeconds, MaxBackoffSeconds: q.MaxBackoffSeconds,
		MaxDoublings: q.MaxDoublings, MaxAgeSeconds: msPtr(q.MaxAgeSeconds), DeadlineSeconds: q.DeadlineSeconds,
		DeadLetterQueue: strPtr(q.DeadLetterQueue), TargetControl: q.TargetControl, Paused: q.Paused, CreatedAt: q.CreatedAt,
	}
	if q.RatePerSecond > 0 {
		v := q.RatePerSecond
		j.RatePerSecond = &v
	}
	if counts != nil {
		j.Counts = map[string]int{}
		j.Capped = []string{}
		for _, s := range task.States {
			name := s.V1(q.Mode == task.ModePull)
			j.Counts[name] = counts[s]
			if counts[s] >= engine.CountLimit {
				j.Capped = append(j.Capped, name)
			}
		}
	}
	return j
}

// queueBody is a queue create or PATCH body. Fields absent stay as they are;
// null clears a nullable setting.
type queueBody struct {
	Name              *string               `json:"name"`
	Mode              *task.Mode            `json:"mode"`
	Target            Nullable[task.Target] `json:"target"`
	RatePerSecond     Nullable[float64]     `json:"ratePerSecond"`
	MaxConcurrent     Nullable[int]         `json:"maxConcurrent"`
	MaxAttempts       *int                  `json:"maxAttempts"`
	MinBackoffSeconds *float64              `json:"minBackoffSeconds"`
	MaxBackoffSeconds *float64              `json:"maxBackoffSeconds"`
	MaxDoublings      *int                  `json:"maxDoublings"`
	MaxAgeSeconds     Nullable[int64]       `json:"maxAgeSeconds"`
	DeadlineSeconds   *int                  `json:"deadlineSeconds"`
	DeadLetterQueue   Nullable[string]      `json:"deadLetterQueue"`
	TargetControl     *bool                 `json:"targetControl"`
	Paused            *bool                 `json:"paused"`
}

func (b *queueBody) patch() *task.QueuePatch {
	return &task.QueuePatch{
		Mode: b.Mode, Target: ptrPtr(b.Target), RatePerSecond: ptrPtr(b.RatePerSecond),
		MaxConcurrent: ptrPtr(b.MaxConcurrent), MaxAttempts: b.MaxAttempts, MinBackoffSeconds: b.MinBackoffSeconds,
		MaxBackoffSeconds: b.MaxBackoffSeconds, MaxDoublings: b.MaxDoublings, MaxAgeSeconds: ptrPtr(b.MaxAgeSeconds),
		DeadlineSeconds: b.DeadlineSeconds, DeadLetterQueue: ptrPtr(b.DeadLetterQueue),
		TargetControl: b.TargetControl, Paused: b.Paused,
	}
}

// addTaskBody is one task of an add.
type addTaskBody struct {
	Name            string          `json:"name"`
	Payload         json.RawMessage `json:"payload"`
	Params          json.RawMessage `json:"params"`
	Target          *task.Target    `json:"target"`
	Delay           *float64        `json:"delay"`
	RunAt           *int64          `json:"runAt"`
	DeadlineSeconds *int            `json:"deadlineSeconds"`
}

type addResultJSON struct {
	OK      bool      `json:"ok"`
	ID      string    `json:"id,omitempty"`
	Name    *string   `json:"name"`
	State   string    `json:"state,omitempty"`
	RunAt   int64     `json:"runAt,omitempty"`
	Code    task.Code `json:"code,omitempty"`
	Message string    `json:"message,omitempty"`
}

type instanceJSON struct {
	Name      string `json:"name"`
	CreatedAt int64  `json:"createdAt"`
}

type settingsJSON struct {
	RetentionDays int      `json:"retentionDays"`
	RateLimit     *float64 `json:"rateLimit"`
	MaxInFlight   int      `json:"maxInFlight"`
}

func toSettingsJSON(s task.Settings) settingsJSON {
	j := settingsJSON{RetentionDays: s.RetentionDays, MaxInFlight: s.MaxInFlight}
	if s.RateLimit > 0 {
		v := s.RateLimit
		j.RateLimit = &v
	}
	return j
}

type settingsBody struct {
	RetentionDays *int              `json:"retentionDays"`
	RateLimit     Nullable[float64] `json:"rateLimit"`
	MaxInFlight   *int              `json:"maxInFlight"`
}

type leasedJSON struct {
	ID             string          `json:"id"`
	Queue          string          `json:"queue"`
	Name           *string         `json:"name"`
	Payload        json.RawMessage `json:"payload"`
	Params         json.RawMessage `json:"params"`
	Attempts       int             `json:"attempts"`
	LeaseID        string          `json:"leaseId"`
	LeaseExpiresAt int64           `json:"leaseExpiresAt"`
	RunAt          int64           `json:"runAt"`
	CreatedAt      int64           `json:"createdAt"`
	Source         string          `json:"source"`
	Depth          int             `json:"depth"`
	DeadLetterOf   *string         `json:"deadLetterOf"`
}

func toLeasedJSON(t *task.Task) leasedJSON {
	p := t.Params
	if p == nil {
		p = json.RawMessage("null")
	}
	return leasedJSON{ID: t.ID, Queue: t.Queue, Name: strPtr(t.Name), Payload: t.Payload, Params: p,
		Attempts: t.Attempt, LeaseID: t.LeaseID, LeaseExpiresAt: t.LeaseExpiresAt, RunAt: t.RunAt,
		CreatedAt: t.CreatedAt, Source: t.Source, Depth: t.Depth, DeadLetterOf: strPtr(t.DeadLetterOf)}
}
