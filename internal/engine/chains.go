package engine

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// chainBatch is how many chain events one read takes.
const chainBatch = 100

// ChainerDeps are what the chainer needs. Its Wake is closed when this
// node stored a finish that may have written chain events.
type ChainerDeps struct {
	TriggerDeps
	// Poll bounds a sleep without a wake-up: the events of a node that died
	// after its finish are added by another node within it (default 5 s).
	Poll time.Duration
}

// Chainer adds the tasks of task rules. The finish of a task writes one
// chain event per rule it fires, in the finish's own transaction (the
// outbox: see store.TriggerStore); the chainer turns each event into the
// rule's task and removes the event in one transaction, so an event is
// added once, by one node, even if the node that finished the task died
// right after. A chained task's depth is its parent's + 1: past
// task.MaxDepth the add is refused with DEPTH_EXCEEDED, recorded on the
// rule (lastError, errorCount) and logged.
type Chainer struct {
	passService
	d   ChainerDeps
	log *slog.Logger
}

// NewChainer returns a chainer; Start runs it.
func NewChainer(d ChainerDeps) *Chainer {
	d.setDefaults()
	if d.Poll <= 0 {
		d.Poll = 5 * time.Second
	}
	c := &Chainer{d: d, log: d.Logger.With("service", "chainer")}
	c.passService = passService{name: "chainer", log: c.log, clock: d.Clock, wake: d.Wake, pass: c.RunOnce,
		until: func(_ context.Context, now time.Time) time.Time { return now.Add(d.Poll) }, onPass: d.OnPass}
	return c
}

// RunOnce ends every pending chain event and returns how many tasks it
// added.
func (c *Chainer) RunOnce(ctx context.Context) (int, error) {
	added := 0
	defer func() {
		if added > 0 {
			c.d.Added()
		}
	}()
	for {
		evs, err := c.d.Store.TriggerEventList(ctx, &store.TriggerEventListParams{Limit: chainBatch})
		if err != nil {
			return added, err
		}
		for _, ev := range evs {
			ok, err := c.end(ctx, ev)
			if err != nil {
				return added, err
			}
			if ok {
				added++
			}
		}
		if len(evs) < chainBatch {
			return added, nil
		}
	}
}

// end adds the task of one event, or records why it cannot; it reports
// whether this call added a task.
func (c *Chainer) end(ctx context.Context, ev *store.TriggerEvent) (bool, error) {
	now := c.d.Clock.Now().UnixMilli()
	p := &store.TriggerEventDoneParams{Event: ev, Now: now}
	tr, err := c.d.Store.TriggerGet(ctx, store.TriggerRef{InstanceID: ev.InstanceID, ID: ev.RuleID})
	switch {
	case task.IsCode(err, task.CodeNotFound):
		// The rule was deleted: its events go with it.
	case err != nil:
		return false, err
	default:
		t, err := c.chainTask(ctx, tr, ev, now)
		if err != nil {
			if te := (*task.Error)(nil); !errors.As(err, &te) || te.Code == task.CodeUnavailable || te.Code == task.CodeInternal {
				return false, err // the store, not the event: try again later
			}
			p.Err = task.Recorded(err)
		}
		p.Task = t
	}
	res, err := c.d.Store.TriggerEventDone(ctx, p)
	if err != nil {
		return false, err
	}
	if res.Applied && res.Err != "" {
		c.log.Warn("task rule could not add its task", "instance", c.d.instanceName(ctx, ev.InstanceID), "rule", ev.RuleID,
			"task", ev.TaskID, "state", ev.State, "reason", res.Err)
	}
	added := res.Applied && p.Task != nil && res.TaskID == p.Task.ID
	if added {
		c.d.Counted(p.Task.InstanceID)
	}
	return added, nil
}

// chainTask builds the task that tr adds for ev through the domain.
func (c *Chainer) chainTask(ctx context.Context, tr *task.Trigger, ev *store.TriggerEvent, now int64) (*task.Task, error) {
	parent, err := c.d.Store.TaskGet(ctx, store.TaskRef{InstanceID: ev.InstanceID, ID: ev.TaskID})
	if task.IsCode(err, task.CodeNotFound) {
		return nil, task.Errorf(task.CodeNotFound, "finished task %s is gone", ev.TaskID)
	}
	if err != nil {
		return nil, err
	}
	in, err := tr.ChainInput(parent, ev.State)
	if err != nil {
		return nil, err
	}
	q, err := ruleQueue(ctx, c.d.Store, tr)
	if err != nil {
		return nil, err
	}
	t, err := ruleTask(q, in, now, c.d.Rules)
	if err != nil {
		return nil, err
	}
	t.ID = c.d.NewID()
	return t, nil
}

// Chainer returns the task-rule service (tests run it with RunOnce).
func (e *Engine) Chainer() *Chainer { return e.chainer }

// outcomesStored is told of each batch of attempt outcomes written: it
// wakes the chainer when one ended a chain's task, and reports the count to
// tests.
func (e *Engine) outcomesStored(ps []*store.FinishParams) {
	e.chainsMaybe(ps)
	e.signals.outcomes.update(func(n *int) { *n += len(ps) })
}

// chainsMaybe wakes the chainer when a stored batch ended a task SUCCEEDED
// or FAILED (which may have written chain events).
func (e *Engine) chainsMaybe(ps []*store.FinishParams) {
	for _, p := range ps {
		if store.ChainState(p.Task.State) {
			e.chains.wake()
			return
		}
	}
}
