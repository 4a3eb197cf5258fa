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
// right after. It ends events in batches (store.TriggerEventsEnd): the
// rules, queues and finished tasks of a batch are read once, and its tasks
// added in one transaction; on PostgreSQL nodes draining at once take
// different events. A chained task's depth is its parent's + 1: past
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
		var evs []*store.TriggerEvent
		var outs []store.TriggerEventOutcome
		p := &store.TriggerEventsEndParams{Limit: chainBatch}
		p.Plan = func(ctx context.Context, got []*store.TriggerEvent) ([]store.TriggerEventOutcome, error) {
			// The time is read once the events are: a chained task is never
			// dated before its parent's finish.
			p.Now = c.d.Clock.Now().UnixMilli()
			var err error
			evs = got
			outs, err = c.plan(ctx, got, p.Now)
			return outs, err
		}
		res, err := c.d.Store.TriggerEventsEnd(ctx, p)
		if err != nil {
			return added, err
		}
		for i, r := range res {
			if r.Applied && r.Err != "" {
				ev := evs[i]
				c.log.Warn("task rule could not add its task", "instance", c.d.instanceName(ctx, ev.InstanceID), "rule", ev.RuleID,
					"task", ev.TaskID, "state", ev.State, "reason", r.Err)
			}
			if t := outs[i].Task; r.Applied && t != nil && r.TaskID == t.ID {
				added++
				c.d.Counted(t.InstanceID)
			}
		}
		if len(res) < chainBatch {
			return added, nil
		}
	}
}

// chainRule is a rule as a batch of events reads it: nil when it was
// deleted (its events go with nothing added), with its queue or the
// refusal to record in its stead.
type chainRule struct {
	tr  *task.Trigger
	q   *task.Queue
	err error
}

// plan builds the outcome of each event: the rules, their queues and the
// finished tasks are read once a batch (the tasks in one read per
// instance). A store's failure returns an error (the events are tried
// again later); a refusal is the event's outcome.
func (c *Chainer) plan(ctx context.Context, evs []*store.TriggerEvent, now int64) ([]store.TriggerEventOutcome, error) {
	ids := map[string][]string{}
	for _, ev := range evs {
		ids[ev.InstanceID] = append(ids[ev.InstanceID], ev.TaskID)
	}
	parents := map[string]map[string]*task.Task{}
	for inst, list := range ids {
		got, err := c.d.Store.TaskGetMany(ctx, inst, list)
		if err != nil {
			return nil, err
		}
		parents[inst] = got
	}
	rules := map[store.TriggerRef]*chainRule{}
	outs := make([]store.TriggerEventOutcome, len(evs))
	for i, ev := range evs {
		ref := store.TriggerRef{InstanceID: ev.InstanceID, ID: ev.RuleID}
		r := rules[ref]
		if r == nil {
			var err error
			if r, err = c.readRule(ctx, ref); err != nil {
				return nil, err
			}
			rules[ref] = r
		}
		if r.tr == nil {
			continue // the rule was deleted
		}
		t, err := c.chainTask(r, parents[ev.InstanceID][ev.TaskID], ev, now)
		if err != nil {
			outs[i].Err = task.Recorded(err)
			continue
		}
		outs[i].Task = t
	}
	return outs, nil
}

// readRule reads a rule and its queue for plan.
func (c *Chainer) readRule(ctx context.Context, ref store.TriggerRef) (*chainRule, error) {
	tr, err := c.d.Store.TriggerGet(ctx, ref)
	if task.IsCode(err, task.CodeNotFound) {
		return &chainRule{}, nil
	}
	if err != nil {
		return nil, err
	}
	q, err := ruleQueue(ctx, c.d.Store, tr)
	if err != nil && storeFault(err) {
		return nil, err
	}
	return &chainRule{tr: tr, q: q, err: err}, nil
}

// storeFault reports whether err is the store's, not a refusal to record:
// the event is tried again later.
func storeFault(err error) bool {
	te := (*task.Error)(nil)
	return !errors.As(err, &te) || te.Code == task.CodeUnavailable || te.Code == task.CodeInternal
}

// chainTask builds the task that r adds for ev, whose finished task is
// parent (nil when it is gone), through the domain.
func (c *Chainer) chainTask(r *chainRule, parent *task.Task, ev *store.TriggerEvent, now int64) (*task.Task, error) {
	if parent == nil {
		return nil, task.Errorf(task.CodeNotFound, "finished task %s is gone", ev.TaskID)
	}
	in, err := r.tr.ChainInput(parent, ev.State)
	if err != nil {
		return nil, err
	}
	if r.err != nil {
		return nil, r.err
	}
	t, err := ruleTask(r.q, in, now, c.d.Rules)
	if err != nil {
		return nil, err
	}
	t.ID = c.d.NewID()
	return t, nil
}

// Chainer returns the task-rule service (tests run it with RunOnce).
func (e *Engine) Chainer() *Chainer { return e.chainer }

// outcomesStored is told of each batch of attempt outcomes written: it
// wakes the chainer when one ended a chain's task and the waiters of the
// tasks that ended (TaskWait), and reports the count to tests.
func (e *Engine) outcomesStored(ps []*store.FinishParams) {
	e.chainsMaybe(ps)
	if e.endBells.waiting.Load() != 0 {
		ts := make([]*task.Task, len(ps))
		for i, p := range ps {
			ts[i] = p.Task
		}
		e.endBells.ring(ts...)
	}
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
