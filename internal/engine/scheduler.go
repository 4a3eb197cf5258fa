package engine

import (
	"context"
	"log/slog"
	"time"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// scheduleBatch is how many due rules one read takes.
const scheduleBatch = 100

// SchedulerDeps are what the scheduler needs.
type SchedulerDeps struct {
	TriggerDeps
	// Backstop bounds a sleep without a wake-up (default 1 min).
	Backstop time.Duration
}

// Scheduler fires schedule rules: at each rule's tick it adds one task,
// named by the tick (task.TickName) and fenced on the rule's next tick in
// the same transaction (store.TriggerFire), so that every node may run a
// scheduler and a tick is still added once: by whichever node fires it
// first. After downtime only the latest missed tick is added (one catch-up
// task); the rule records the tick it last fired. It sleeps until the
// earliest next tick, or a rule change.
type Scheduler struct {
	passService
	d   SchedulerDeps
	log *slog.Logger
}

// NewScheduler returns a scheduler; Start runs it.
func NewScheduler(d SchedulerDeps) *Scheduler {
	d.setDefaults()
	if d.Backstop <= 0 {
		d.Backstop = time.Minute
	}
	s := &Scheduler{d: d, log: d.Logger.With("service", "scheduler")}
	s.passService = passService{name: "scheduler", log: s.log, clock: d.Clock, wake: d.Wake, pass: s.RunOnce, until: s.until, onPass: d.OnPass}
	return s
}

// until is when the scheduler looks again after a pass that began at now:
// at the earliest next tick, at most the backstop on, at least 1 ms on.
func (s *Scheduler) until(ctx context.Context, now time.Time) time.Time {
	wakeAt := now.Add(s.d.Backstop)
	if next, err := s.d.Store.TriggerNextTick(ctx); err == nil && next > 0 {
		wakeAt = wakeAtOrBefore(now, wakeAt, time.UnixMilli(next))
	}
	return wakeAt
}

// RunOnce fires every rule due now and returns how many tasks it added.
// The rules due are read scheduleBatch at a time, and each batch fired in
// one transaction (store.TriggerFire), its queues read once.
func (s *Scheduler) RunOnce(ctx context.Context) (int, error) {
	added := 0
	defer func() {
		if added > 0 {
			s.d.Added()
		}
	}()
	for {
		now := s.d.Clock.Now().UnixMilli()
		due, err := s.d.Store.TriggerDue(ctx, &store.TriggerDueParams{Now: now, Limit: scheduleBatch})
		if err != nil {
			return added, err
		}
		ps, err := s.fires(ctx, due, now)
		if err != nil {
			return added, err
		}
		res, err := s.d.Store.TriggerFire(ctx, ps)
		if err != nil {
			return added, err
		}
		for i, r := range res {
			p, tr := ps[i], due[i]
			if r.Applied && r.Err != "" {
				s.log.Warn("schedule rule could not add its task", "instance", s.d.instanceName(ctx, tr.InstanceID), "rule", tr.ID,
					"queue", tr.Queue, "tick", time.UnixMilli(p.Tick).UTC(), "reason", r.Err)
			}
			if r.Applied && p.Task != nil && r.TaskID == p.Task.ID {
				added++
				s.d.Counted(p.Task.InstanceID)
			}
		}
		if len(due) < scheduleBatch {
			return added, nil
		}
	}
}

// fires builds the fire of each rule due: the task of its due tick, or
// why it cannot be added. A store's failure is returned (the rules are
// fired on a later pass); a refusal is recorded on its rule.
func (s *Scheduler) fires(ctx context.Context, due []*task.Trigger, now int64) ([]*store.TriggerFireParams, error) {
	type queueRead struct {
		q   *task.Queue
		err error
	}
	queues := map[[2]string]queueRead{}
	ps := make([]*store.TriggerFireParams, len(due))
	for i, tr := range due {
		p := &store.TriggerFireParams{Ref: store.TriggerRef{InstanceID: tr.InstanceID, ID: tr.ID}, ExpectNext: tr.NextTickAt, Now: now}
		ps[i] = p
		tick, next, ok := tr.Due(now)
		p.Tick, p.Next = tick, next
		if !ok {
			// Not a schedule that parses (a rule stored by hand): stop it.
			p.Tick, p.Next, p.Err = tr.LastTickAt, 0, "schedule.cron: does not parse; the rule is stopped"
			continue
		}
		key := [2]string{tr.InstanceID, tr.Queue}
		qr, seen := queues[key]
		if !seen {
			qr.q, qr.err = ruleQueue(ctx, s.d.Store, tr)
			if qr.err != nil && storeFault(qr.err) {
				return nil, qr.err
			}
			queues[key] = qr
		}
		if qr.err != nil {
			p.Err = task.Recorded(qr.err)
			continue
		}
		t, err := ruleTask(qr.q, tr.ScheduleInput(tick), now, s.d.Rules)
		if err != nil {
			p.Err = task.Recorded(err)
			continue
		}
		t.ID = s.d.NewID()
		p.Task = t
	}
	return ps, nil
}

// Scheduler returns the schedule service (tests run it with RunOnce).
func (e *Engine) Scheduler() *Scheduler { return e.scheduler }

// ruleQueue reads the queue a rule adds to; a queue that is gone is a
// NOT_FOUND that names it.
func ruleQueue(ctx context.Context, st store.Store, tr *task.Trigger) (*task.Queue, error) {
	q, err := st.QueueGet(ctx, store.QueueRef{InstanceID: tr.InstanceID, Name: tr.Queue})
	if task.IsCode(err, task.CodeNotFound) {
		return nil, task.Errorf(task.CodeNotFound, "queue %q not found", tr.Queue)
	}
	return q, err
}
