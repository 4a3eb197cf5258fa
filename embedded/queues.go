package embedded

import (
	"context"
	"time"

	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/task"
)

// QueueOptions are a new queue's settings; zero values take the v1
// defaults (push, 10 attempts, backoff 10 s doubling to 1 h, deadline
// 600 s, no rate or concurrency cap). Any other value is checked as the v1
// API checks it: a negative one is refused, not taken as the default.
// deadLetterQueue, targetControl, maxAgeSeconds and ratePerSecond are not
// here: set them through the v1 API on HTTPHandler (client.UpdateQueue).
type QueueOptions struct {
	Pull     bool   // a pull queue, leased with Lease
	Function string // push target: a function served by Handle ("group/name")
	Webhook  string // push target: an https URL
	// Headers, with Webhook, are sent with every delivery (an
	// Authorization the receiver asks for; the v1 API's target.headers).
	Headers map[string]string
	// MaxConcurrent caps the queue's attempts in flight (0 = no cap beyond
	// the instance's maxInFlight).
	MaxConcurrent int
	MaxAttempts   int
	MinBackoff    time.Duration
	MaxBackoff    time.Duration
	Deadline      time.Duration // per attempt, whole seconds, at most 840 s
	Paused        bool
}

// CreateQueue creates a queue. QUEUE_EXISTS if it exists.
func (e *Engine) CreateQueue(ctx context.Context, instance, name string, o QueueOptions) error {
	if err := e.refuse(); err != nil {
		return err
	}
	p := &task.QueuePatch{}
	mode := task.ModePush
	if o.Pull {
		mode = task.ModePull
	}
	p.Mode = &mode
	if o.Function != "" || o.Webhook != "" {
		t := &task.Target{Function: o.Function, Webhook: o.Webhook, Headers: o.Headers}
		p.Target = &t
	}
	// Zero is the default; any other value goes to the engine, which
	// refuses what the v1 API refuses (a negative one, say).
	if o.MaxConcurrent != 0 {
		n := &o.MaxConcurrent
		p.MaxConcurrent = &n
	}
	if o.MaxAttempts != 0 {
		p.MaxAttempts = &o.MaxAttempts
	}
	if o.MinBackoff != 0 {
		s := o.MinBackoff.Seconds()
		p.MinBackoffSeconds = &s
	}
	if o.MaxBackoff != 0 {
		s := o.MaxBackoff.Seconds()
		p.MaxBackoffSeconds = &s
	}
	if o.Deadline != 0 {
		// deadlineSeconds is whole seconds: a fraction cannot travel (a
		// negative one goes on, to be refused as out of range).
		if o.Deadline > 0 && o.Deadline%time.Second != 0 {
			return e.fail(task.FieldErrorf(task.CodeInvalidArgument, "deadlineSeconds", "must be whole seconds, not %v", o.Deadline))
		}
		s := int(o.Deadline / time.Second)
		p.DeadlineSeconds = &s
	}
	if o.Paused {
		p.Paused = &o.Paused
	}
	_, err := e.eng.QueueCreate(ctx, engine.QueueRef{Org: e.org, Instance: instance, Queue: name}, p)
	return e.fail(err)
}

// UpdateQueue changes only the settings patch sets, as the v1 API's PATCH
// of a queue does (the client SDK's UpdateQueue takes the same value), and
// returns the queue with its counts: every setting, deadLetterQueue,
// targetControl, maxAgeSeconds and ratePerSecond included; a Nullable
// sent as null clears its setting. A queue's mode cannot change, nor its
// name (a patch.Name other than queue is INVALID_ARGUMENT).
func (e *Engine) UpdateQueue(ctx context.Context, instance, queue string, patch errandapi.QueueRequest) (*QueueInfo, error) {
	if err := e.refuse(); err != nil {
		return nil, err
	}
	p, err := engine.QueuePatchFor(&patch, queue)
	if err != nil {
		return nil, e.fail(err)
	}
	ref := engine.QueueRef{Org: e.org, Instance: instance, Queue: queue}
	if _, err := e.eng.QueuePatch(ctx, ref, p); err != nil {
		return nil, e.fail(err)
	}
	v, err := e.eng.QueueGet(ctx, ref)
	if err != nil {
		return nil, e.fail(err)
	}
	return queueInfo(v), nil
}

// QueueInfo is a queue's state: its counts of tasks by v1 state, each
// stopping at 10,000 (Capped names the ones that did).
type QueueInfo struct {
	Name   string
	Pull   bool
	Paused bool
	Counts map[string]int
	Capped map[string]bool
	// Settings is the queue as the v1 API answers it (GET …/queues/{queue}):
	// every setting, its target's header values masked, and the same
	// counts.
	Settings *errandapi.Queue
}

// Queue returns a queue with its counts by state.
func (e *Engine) Queue(ctx context.Context, instance, name string) (*QueueInfo, error) {
	if err := e.refuse(); err != nil {
		return nil, err
	}
	v, err := e.eng.QueueGet(ctx, engine.QueueRef{Org: e.org, Instance: instance, Queue: name})
	if err != nil {
		return nil, e.fail(err)
	}
	return queueInfo(v), nil
}

// Queues returns an instance's queues, each with its counts by state, in
// name order.
func (e *Engine) Queues(ctx context.Context, instance string) ([]*QueueInfo, error) {
	if err := e.refuse(); err != nil {
		return nil, err
	}
	vs, err := e.eng.QueueList(ctx, e.org, instance)
	if err != nil {
		return nil, e.fail(err)
	}
	out := make([]*QueueInfo, len(vs))
	for i, v := range vs {
		out[i] = queueInfo(v)
	}
	return out, nil
}

// queueInfo is a queue as QueueInfo.
func queueInfo(v *engine.QueueView) *QueueInfo {
	j := engine.QueueJSON(v.Queue, v.Counts)
	out := &QueueInfo{Name: j.Name, Pull: j.Mode == errandapi.ModePull, Paused: j.Paused,
		Counts: map[string]int{}, Capped: map[string]bool{}, Settings: j}
	for s, n := range j.Counts {
		out.Counts[string(s)] = n
	}
	for _, s := range j.Capped {
		out.Capped[string(s)] = true
	}
	return out
}

// SetPaused pauses a queue (nothing is delivered or leased from it; adds
// go on) or resumes it.
func (e *Engine) SetPaused(ctx context.Context, instance, queue string, paused bool) error {
	if err := e.refuse(); err != nil {
		return err
	}
	_, err := e.eng.QueuePatch(ctx, engine.QueueRef{Org: e.org, Instance: instance, Queue: queue}, &task.QueuePatch{Paused: &paused})
	return e.fail(err)
}

// DeleteQueue removes a queue and every task of it at once, and returns how
// many tasks it removed. The queue "default" cannot be deleted
// (INVALID_ARGUMENT): every instance has one; PurgeQueue empties it.
func (e *Engine) DeleteQueue(ctx context.Context, instance, name string) (int, error) {
	if err := e.refuse(); err != nil {
		return 0, err
	}
	n, err := e.eng.QueueDelete(ctx, engine.QueueRef{Org: e.org, Instance: instance, Queue: name})
	return n, e.fail(err)
}

// PurgeQueue removes every task of a queue, whatever its state, and
// returns how many it removed; the queue and its settings stay. A task
// whose attempt is in flight is counted but stays running until the
// attempt ends: its outcome (a handler's answer, an ack or a release,
// which is then LEASE_LOST) is dropped and the task removed, so its slot
// and its name stay taken while the work may still be going on.
func (e *Engine) PurgeQueue(ctx context.Context, instance, name string) (int, error) {
	if err := e.refuse(); err != nil {
		return 0, err
	}
	n, err := e.eng.QueuePurge(ctx, engine.QueueRef{Org: e.org, Instance: instance, Queue: name})
	return n, e.fail(err)
}
