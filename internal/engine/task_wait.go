package engine

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// Waiting for a task to end: TaskWait holds a read until the task has
// succeeded, failed or been cancelled (BullMQ's waitUntilFinished, Celery's
// AsyncResult.get), for callers that add a task and want its result. A
// finish stored on this node wakes the task's waiters at once (endBells);
// one stored on another node sharing the store, or by the rescuer, is seen
// by reading the task again, every waitPollFirst at first and less often
// the longer it runs (up to waitPollMax), so a wait costs the store a few
// reads of one row by its key a second at most.
const (
	waitPollFirst = 50 * time.Millisecond
	waitPollMax   = time.Second
)

// TaskWait returns ref's task once it has ended (succeeded, failed or
// cancelled), or as it is when waitSeconds (0–MaxWaitSeconds) run out, ctx
// ends or the node ends its long polls (EndLongPolls). admitted, when not
// nil, is asked again before each read after the first, as a long-polling
// lease asks: its error ends the wait.
func (e *Engine) TaskWait(ctx context.Context, ref TaskRef, waitSeconds int, admitted func() error) (*task.Task, error) {
	if waitSeconds < 0 || waitSeconds > MaxWaitSeconds {
		return nil, task.FieldErrorf(task.CodeInvalidArgument, "waitSeconds", "must be 0–%d", MaxWaitSeconds)
	}
	t, err := e.TaskGet(ctx, ref)
	if err != nil || t.State.Terminal() || waitSeconds == 0 || e.longPollsEnded() {
		return t, err
	}
	deadline := e.clock.NewTimer(time.Duration(waitSeconds) * time.Second)
	defer deadline.Stop()
	st := store.TaskRef{InstanceID: t.InstanceID, ID: t.ID}
	key := t.InstanceID + "/" + t.ID
	poll := waitPollFirst
	for {
		// Listen before reading, so a finish between the read and the
		// wait still rings. The reads between look at the state alone;
		// a task still going is answered as TaskGet answers it.
		rung, stop := e.endBells.listen(key)
		t, err = e.store.TaskGet(ctx, st)
		if err != nil || t.State.Terminal() {
			stop()
			if err != nil {
				return nil, ref.notFound(err)
			}
			return t, nil
		}
		next := e.clock.NewTimer(poll)
		e.signals.parked.update(func(n *int) { *n++ })
		again := false
		select {
		case <-rung:
			again = true
		case <-next.C():
			poll, again = min(2*poll, waitPollMax), true
		case <-deadline.C():
		case <-e.pollsEnd:
		case <-ctx.Done():
		}
		next.Stop()
		stop()
		if !again {
			if ctx.Err() == nil {
				e.noteUnservedTask(ctx, t)
			}
			return t, nil
		}
		if admitted != nil {
			if err := admitted(); err != nil {
				return nil, err
			}
		}
	}
}

// endBells wakes the waiters of tasks that ended on this node. ring costs
// one atomic load when nobody waits, which is nearly always.
type endBells struct {
	waiting atomic.Int32
	mu      sync.Mutex
	byTask  map[string][]chan struct{}
}

// listen returns a channel closed when the task keyed instanceID/id rings,
// and the function that stops listening (call it once, in any case).
func (b *endBells) listen(key string) (<-chan struct{}, func()) {
	ch := make(chan struct{})
	b.mu.Lock()
	if b.byTask == nil {
		b.byTask = make(map[string][]chan struct{})
	}
	b.byTask[key] = append(b.byTask[key], ch)
	b.mu.Unlock()
	b.waiting.Add(1)
	return ch, func() {
		b.waiting.Add(-1)
		b.mu.Lock()
		defer b.mu.Unlock()
		chs := b.byTask[key]
		for i, c := range chs {
			if c == ch {
				chs = append(chs[:i], chs[i+1:]...)
				break
			}
		}
		if len(chs) == 0 {
			delete(b.byTask, key)
		} else {
			b.byTask[key] = chs
		}
	}
}

// ring wakes the waiters of each of ts that has ended.
func (b *endBells) ring(ts ...*task.Task) {
	if b.waiting.Load() == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, t := range ts {
		if t.State.Terminal() {
			b.wakeLocked(t.InstanceID + "/" + t.ID)
		}
	}
}

// wake wakes the waiters of the task, whatever its state (one removed).
func (b *endBells) wake(instanceID, id string) {
	if b.waiting.Load() == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.wakeLocked(instanceID + "/" + id)
}

// wakeLocked wakes the waiters of the task keyed instanceID/id; b.mu is
// held.
func (b *endBells) wakeLocked(key string) {
	for _, ch := range b.byTask[key] {
		close(ch)
	}
	delete(b.byTask, key)
}
