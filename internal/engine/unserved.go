package engine

import (
	"context"
	"sync"
	"time"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// WorkersQuiet is how long a node's rows of the workers table count after
// it last refreshed them (it does every few seconds).
const WorkersQuiet = 30 * time.Second

// served returns the functions some node serves for the instance now.
func (e *Engine) served(ctx context.Context, instanceID string) (map[string]int, error) {
	return e.store.WorkersServed(ctx, &store.WorkersServedParams{InstanceID: instanceID, SeenAfter: e.clock.Now().Add(-WorkersQuiet).UnixMilli()})
}

// noteUnserved sets the LastError of each task of ts that waits, due, for
// a function no node serves, so a caller sees why it does not run. It is
// not stored: the task waits unharmed and runs when a worker comes. The
// tasks share one queue, which queue returns: it is asked only for a task
// without a target of its own; the functions served are read once, and only
// when some task waits for one.
func (e *Engine) noteUnserved(ctx context.Context, ts []*task.Task, queue func() *task.Queue) {
	var served map[string]int
	now := e.now()
	for _, t := range ts {
		if (t.State != task.Pending && t.State != task.RetryWait) || t.RunAt > now || t.Pull {
			continue
		}
		var q *task.Queue
		if t.Target == nil {
			q = queue() // asked only for a task without a target of its own
		}
		fn := t.EffectiveFunction(q)
		if fn == "" {
			continue
		}
		if served == nil {
			var err error
			if served, err = e.served(ctx, t.InstanceID); err != nil {
				return
			}
		}
		if served[fn] > 0 {
			continue
		}
		msg := "no worker serves " + fn + ": the task waits, no attempt used, until one connects"
		if t.LastError != "" {
			msg += " (last error: " + t.LastError + ")"
		}
		t.LastError = msg
	}
}

// unservedLog logs, in dev, the first add for a function no worker
// serves, once per instance and function.
type unservedLog struct{ seen sync.Map }

// logUnserved is unservedLog's check after an add of tasks to q.
func (e *Engine) logUnserved(ctx context.Context, q *task.Queue, res []AddResult) {
	if !e.dev {
		return
	}
	var served map[string]int
	for _, r := range res {
		if r.Task == nil {
			continue
		}
		fn := store.FunctionOf(r.Task, q)
		if fn == "" {
			continue
		}
		if _, logged := e.unserved.seen.Load(q.InstanceID + "\x00" + fn); logged {
			continue
		}
		if served == nil {
			var err error
			if served, err = e.served(ctx, q.InstanceID); err != nil {
				return
			}
		}
		if served[fn] == 0 {
			if _, logged := e.unserved.seen.LoadOrStore(q.InstanceID+"\x00"+fn, true); !logged {
				e.log.Warn("no worker serves "+fn+": its tasks wait as scheduled, no attempt used, until a worker connects (see docs/workers.md)",
					"queue", q.Name, "task", r.Task.ID)
			}
		}
	}
}
