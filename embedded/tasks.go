package embedded

import (
	"context"
	"encoding/json"
	"time"

	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/task"
)

// Task is one task as a handler, Lease or Get sees it.
type Task struct {
	ID          string
	Queue       string
	Name        string // "" when unnamed
	State       string // the v1 name: scheduled, running, leased, retrying, succeeded, failed, cancelled
	Attempt     int    // attempts started so far, this one included while it runs
	MaxAttempts int
	RunAt       time.Time
	CreatedAt   time.Time
	Payload     json.RawMessage
	Params      json.RawMessage // nil when none
	Result      json.RawMessage // nil when none
	LastError   string
	Source      string
	Depth       int
	Priority    int // 0–9: a queue's due tasks of a higher priority go first
	// LeaseID fences a pull lease: AckMany and Release carry it.
	LeaseID        string
	LeaseExpiresAt time.Time // zero unless leased
}

func publicTask(t *task.Task) *Task {
	out := &Task{
		ID: t.ID, Queue: t.Queue, Name: t.Name, State: t.State.V1(t.Pull), Attempt: t.Attempt,
		MaxAttempts: t.MaxAttempts, RunAt: time.UnixMilli(t.RunAt), CreatedAt: time.UnixMilli(t.CreatedAt),
		Payload: t.Payload, Params: t.Params, Result: t.Result, LastError: t.LastError, Source: t.Source,
		Depth: t.Depth, Priority: t.Priority,
	}
	if t.Pull && t.State == task.Running {
		out.LeaseID, out.LeaseExpiresAt = t.LeaseID, time.UnixMilli(t.LeaseExpiresAt)
	}
	return out
}

// NewTask is a task to add.
type NewTask struct {
	Name    string          // optional, unique in its queue while its record is kept
	Payload json.RawMessage // JSON, at most 64 KiB; nil is null
	Params  json.RawMessage // optional JSON
	// Function or Webhook give the task its own target instead of its
	// queue's (at most one).
	Function string
	Webhook  string
	// Headers, with Webhook, are sent with every delivery of this task.
	Headers map[string]string
	Delay   time.Duration // run this long from now, 0–365 days (or set RunAt, not both)
	RunAt   time.Time     // run at this time, within a year (zero: now, or Delay)
	// Priority (0–9, default 0): the queue's due tasks of a higher
	// priority are delivered or leased first, each priority in runAt order.
	Priority int
}

// Added is the result of one added task: Err is nil, or a *Error such as
// TASK_EXISTS (with ID the existing task's id).
type Added struct {
	ID    string
	Name  string
	State string
	RunAt time.Time
	Err   error
}

// Add adds up to 100 tasks to a queue in one transaction. A task that is
// invalid refuses the whole call (the error); a duplicate name refuses only
// that task (its Added.Err).
func (e *Engine) Add(ctx context.Context, instance, queue string, tasks ...NewTask) ([]Added, error) {
	if err := e.refuse(); err != nil {
		return nil, err
	}
	res, err := e.eng.TaskAdd(ctx, engine.QueueRef{Org: e.org, Instance: instance, Queue: queue}, addInputs(tasks))
	if len(tasks) == 1 {
		// Named tasks[0], as the SDK's AddTask is refused (it sends a batch).
		err = task.OneOfBatch(err)
	}
	if err != nil {
		return nil, e.fail(err)
	}
	return addedOf(res, tasks), nil
}

// addInputs are tasks in the engine's shape.
func addInputs(tasks []NewTask) []task.AddInput {
	ins := make([]task.AddInput, len(tasks))
	for i, t := range tasks {
		in := task.AddInput{Name: t.Name, Payload: t.Payload, Params: t.Params, Source: task.SourceAPI}
		if t.Function != "" || t.Webhook != "" {
			in.Target = &task.Target{Function: t.Function, Webhook: t.Webhook, Headers: t.Headers}
		}
		// Each as given: the engine refuses both at once, or a negative
		// Delay, as the v1 API does.
		if !t.RunAt.IsZero() {
			ms := t.RunAt.UnixMilli()
			in.RunAt = &ms
		}
		if t.Delay != 0 {
			s := t.Delay.Seconds()
			in.Delay = &s
		}
		if t.Priority != 0 {
			in.Priority = &t.Priority
		}
		ins[i] = in
	}
	return ins
}

// addedOf is an add's results as Added.
func addedOf(res []engine.AddResult, tasks []NewTask) []Added {
	out := make([]Added, len(res))
	for i, r := range res {
		if r.Err != nil {
			out[i] = Added{Err: publicError(r.Err), Name: tasks[i].Name, ID: r.Err.ID}
			continue
		}
		out[i] = Added{ID: r.Task.ID, Name: r.Task.Name, State: r.Task.State.V1(r.Task.Pull), RunAt: time.UnixMilli(r.Task.RunAt)}
	}
	return out
}

// Get returns one task with its payload and result.
func (e *Engine) Get(ctx context.Context, instance, id string) (*Task, error) {
	if err := e.refuse(); err != nil {
		return nil, err
	}
	t, err := e.eng.TaskGet(ctx, engine.TaskRef{Org: e.org, Instance: instance, ID: id})
	if err != nil {
		return nil, e.fail(err)
	}
	return publicTask(t), nil
}

// Wait returns a task once it has ended (succeeded, failed or cancelled),
// for as long as ctx allows: a finish on this engine answers it at once,
// one by another node sharing its PostgreSQL database within a second.
// When ctx ends first it returns the task as last read and ctx's error;
// Close ends it with ErrClosed.
func (e *Engine) Wait(ctx context.Context, instance, id string) (*Task, error) {
	if err := e.refuse(); err != nil {
		return nil, err
	}
	ctx, cancel := e.untilClose(ctx)
	defer cancel()
	ref := engine.TaskRef{Org: e.org, Instance: instance, ID: id}
	for {
		t, err := e.eng.TaskWait(ctx, ref, engine.MaxWaitSeconds, nil)
		if err != nil {
			if ctx.Err() != nil && !e.closed() {
				return nil, ctx.Err()
			}
			return nil, e.fail(err)
		}
		switch {
		case t.State.Terminal():
			return publicTask(t), nil
		case e.closed():
			return nil, ErrClosed
		case ctx.Err() != nil:
			return publicTask(t), ctx.Err()
		}
	}
}
