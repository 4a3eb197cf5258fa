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
	// LeaseID fences a pull lease: AckMany and Release carry it.
	LeaseID        string
	LeaseExpiresAt time.Time // zero unless leased
}

func publicTask(t *task.Task) *Task {
	out := &Task{
		ID: t.ID, Queue: t.Queue, Name: t.Name, State: t.State.V1(t.Pull), Attempt: t.Attempt,
		MaxAttempts: t.MaxAttempts, RunAt: time.UnixMilli(t.RunAt), CreatedAt: time.UnixMilli(t.CreatedAt),
		Payload: t.Payload, Params: t.Params, Result: t.Result, LastError: t.LastError, Source: t.Source,
		Depth: t.Depth,
	}
	if t.Pull && t.State == task.Running {
		out.LeaseID, out.LeaseExpiresAt = t.LeaseID, time.UnixMilli(t.LeaseExpiresAt)
	}
	return out
}

// CreateInstance creates an instance of the engine's organization.
// INSTANCE_EXISTS if it exists.
func (e *Engine) CreateInstance(ctx context.Context, name string) error {
	_, err := e.eng.InstanceCreate(ctx, e.org, name)
	return publicError(err)
}

// Settings change an instance's settings; nil fields stay as they are.
type Settings struct {
	RetentionDays *int
	MaxInFlight   *int // deliveries in flight across the instance's push queues (default 50)
}

// UpdateSettings changes the settings sent.
func (e *Engine) UpdateSettings(ctx context.Context, instance string, s Settings) error {
	_, err := e.eng.SettingsUpdate(ctx, e.org, instance, &task.SettingsPatch{RetentionDays: s.RetentionDays, MaxInFlight: s.MaxInFlight})
	return publicError(err)
}

// QueueOptions are a new queue's settings; zero values take the v1
// defaults (push, 10 attempts, backoff 10 s doubling to 1 h, deadline
// 600 s, no rate or concurrency cap).
type QueueOptions struct {
	Pull     bool   // a pull queue, leased with Lease
	Function string // push target: a function served by Handle ("group/name")
	Webhook  string // push target: an https URL
	// MaxConcurrent caps the queue's attempts in flight (0 = no cap beyond
	// the instance's maxInFlight).
	MaxConcurrent int
	MaxAttempts   int
	MinBackoff    time.Duration
	MaxBackoff    time.Duration
	Deadline      time.Duration // per attempt, at most 840 s
	Paused        bool
}

// CreateQueue creates a queue. QUEUE_EXISTS if it exists.
func (e *Engine) CreateQueue(ctx context.Context, instance, name string, o QueueOptions) error {
	p := &task.QueuePatch{}
	mode := task.ModePush
	if o.Pull {
		mode = task.ModePull
	}
	p.Mode = &mode
	if o.Function != "" || o.Webhook != "" {
		t := &task.Target{Function: o.Function, Webhook: o.Webhook}
		p.Target = &t
	}
	if o.MaxConcurrent > 0 {
		n := &o.MaxConcurrent
		p.MaxConcurrent = &n
	}
	if o.MaxAttempts > 0 {
		p.MaxAttempts = &o.MaxAttempts
	}
	if o.MinBackoff > 0 {
		s := o.MinBackoff.Seconds()
		p.MinBackoffSeconds = &s
	}
	if o.MaxBackoff > 0 {
		s := o.MaxBackoff.Seconds()
		p.MaxBackoffSeconds = &s
	}
	if o.Deadline > 0 {
		s := int(o.Deadline / time.Second)
		p.DeadlineSeconds = &s
	}
	if o.Paused {
		p.Paused = &o.Paused
	}
	_, err := e.eng.QueueCreate(ctx, engine.QueueRef{Org: e.org, Instance: instance, Queue: name}, p)
	return publicError(err)
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
	Delay    time.Duration // run this long from now (or set RunAt)
	RunAt    time.Time     // run at this time (zero: now, or Delay)
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
	res, err := e.eng.TaskAdd(ctx, engine.QueueRef{Org: e.org, Instance: instance, Queue: queue}, addInputs(tasks))
	if err != nil {
		return nil, publicError(err)
	}
	return addedOf(res, tasks), nil
}

// addInputs are tasks in the engine's shape.
func addInputs(tasks []NewTask) []task.AddInput {
	ins := make([]task.AddInput, len(tasks))
	for i, t := range tasks {
		in := task.AddInput{Name: t.Name, Payload: t.Payload, Params: t.Params, Source: task.SourceAPI}
		if t.Function != "" || t.Webhook != "" {
			in.Target = &task.Target{Function: t.Function, Webhook: t.Webhook}
		}
		switch {
		case !t.RunAt.IsZero():
			ms := t.RunAt.UnixMilli()
			in.RunAt = &ms
		case t.Delay > 0:
			s := t.Delay.Seconds()
			in.Delay = &s
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
	t, err := e.eng.TaskGet(ctx, engine.TaskRef{Org: e.org, Instance: instance, ID: id})
	if err != nil {
		return nil, publicError(err)
	}
	return publicTask(t), nil
}

// Lease leases up to count (1–1,000) due tasks of a pull queue for lease. With
// wait it waits up to that long (at most 30 s) for a task to come due.
func (e *Engine) Lease(ctx context.Context, instance, queue string, count int, lease, wait time.Duration) ([]*Task, error) {
	got, err := e.eng.Lease(ctx, engine.QueueRef{Org: e.org, Instance: instance, Queue: queue}, engine.LeaseParams{
		Count: count, LeaseSeconds: int((lease + time.Second - 1) / time.Second), WaitSeconds: int(wait / time.Second),
	})
	if err != nil {
		return nil, publicError(err)
	}
	out := make([]*Task, len(got))
	for i, t := range got {
		out[i] = publicTask(t)
	}
	return out, nil
}

// Ack finishes one leased task.
type Ack struct {
	ID      string
	LeaseID string
	Result  json.RawMessage // optional JSON
}

// AckMany finishes leased tasks of one queue (1–1,000) in one group commit.
// Each ack stands alone: its error (LEASE_LOST, NOT_FOUND) is in its place
// and the others are stored.
func (e *Engine) AckMany(ctx context.Context, instance, queue string, acks []Ack) ([]error, error) {
	in := make([]engine.AckInput, len(acks))
	for i, a := range acks {
		in[i] = engine.AckInput{ID: a.ID, LeaseID: a.LeaseID, Result: a.Result}
	}
	errs, err := e.eng.AckMany(ctx, engine.QueueRef{Org: e.org, Instance: instance, Queue: queue}, in)
	if err != nil {
		return nil, publicError(err)
	}
	for i := range errs {
		errs[i] = publicError(errs[i])
	}
	return errs, nil
}

// Release gives a leased task back: with errMsg it is a failed attempt
// (backoff, maxAttempts); without, it goes back unharmed after delay.
func (e *Engine) Release(ctx context.Context, instance, id, leaseID, errMsg string, delay time.Duration) error {
	_, err := e.eng.Release(ctx, engine.TaskRef{Org: e.org, Instance: instance, ID: id}, engine.ReleaseParams{LeaseID: leaseID, Error: errMsg, DelaySeconds: delay.Seconds()})
	return publicError(err)
}

// QueueInfo is a queue's state: its counts of tasks by v1 state, each
// stopping at 10,000 (Capped names the ones that did).
type QueueInfo struct {
	Name   string
	Pull   bool
	Paused bool
	Counts map[string]int
	Capped map[string]bool
}

// Queue returns a queue with its counts by state.
func (e *Engine) Queue(ctx context.Context, instance, name string) (*QueueInfo, error) {
	v, err := e.eng.QueueGet(ctx, engine.QueueRef{Org: e.org, Instance: instance, Queue: name})
	if err != nil {
		return nil, publicError(err)
	}
	q := v.Queue
	out := &QueueInfo{Name: q.Name, Pull: q.Mode == task.ModePull, Paused: q.Paused, Counts: map[string]int{}, Capped: map[string]bool{}}
	for s, n := range v.Counts {
		name := s.V1(out.Pull)
		out.Counts[name] = n
		if n >= engine.CountLimit {
			out.Capped[name] = true
		}
	}
	return out, nil
}

// SetPaused pauses a queue (nothing is delivered or leased from it; adds
// go on) or resumes it.
func (e *Engine) SetPaused(ctx context.Context, instance, queue string, paused bool) error {
	_, err := e.eng.QueuePatch(ctx, engine.QueueRef{Org: e.org, Instance: instance, Queue: queue}, &task.QueuePatch{Paused: &paused})
	return publicError(err)
}
