package engine

import (
	"context"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// addClaim adds tasks of q (the queue as the add just read it) with ac,
// claiming q in the add's own transaction (store.AddClaimer), and starts
// the deliveries of what it claimed, as a pass of the dispatcher would
// have a moment later: on PostgreSQL a task added to an idle queue then
// waits for one commit before its delivery instead of two, and on SQLite
// a task claimed so is inserted RUNNING, not inserted and then rewritten
// by a claim. It reports false, having added nothing, when the tasks are
// not for it: not all due now, of one push queue that is not paused, the
// instance's cap filled by this node's own attempts, a queue whose target
// is a function with no slot free on this node, or the dispatcher not
// running. What the claim left due (a limit held it back) is hinted to the
// next pass, as an add's due tasks are.
func (d *Dispatcher) addClaim(ctx context.Context, ac store.AddClaimer, q *task.Queue, tasks []*task.Task) ([]store.AddResult, bool, error) {
	for _, t := range tasks {
		if t.RunAt > t.CreatedAt || t.InstanceID != q.InstanceID || t.Queue != q.Name {
			return nil, false, nil
		}
	}
	if q.Mode != task.ModePush || q.Paused {
		return nil, false, nil
	}
	inst, err := d.store.InstanceGetByID(ctx, q.InstanceID)
	if err != nil {
		return nil, false, nil
	}
	queues := map[qkey]*task.Queue{{q.InstanceID, q.Name}: q}
	if q.DeadLetterQueue != "" {
		dlq, err := d.store.QueueGet(ctx, store.QueueRef{InstanceID: q.InstanceID, Name: q.DeadLetterQueue})
		if err != nil {
			return nil, false, nil
		}
		queues[qkey{q.InstanceID, q.DeadLetterQueue}] = dlq
	}
	if limit := inst.Settings.MaxInFlight; limit > 0 && d.inFlight(q.InstanceID, limit) >= limit {
		// This node alone fills the instance's cap: a claim would take
		// nothing, and the finishes that free slots wake the pass anyway.
		return nil, false, nil
	}
	// A webhook queue's claim is offered no function slot (an empty
	// Functions): a task of it whose own target is a function is left to
	// the pass.
	functions := map[string]int{}
	var slots *slotView
	if q.Target != nil && q.Target.Function != "" {
		// A function queue's tasks are claimed only into free slots, as
		// the pass claims them, and the two must not count the same slots
		// free: the add claims holding slotMu, after a claim of the pass
		// under way. (Leaving the tasks to the pass instead, when a pass
		// held it, sent most adds of a busy queue to the pass: a backlog
		// the adds then claimed from, each task written three times.)
		d.slotWaits.update(func(n *int) { *n++ })
		d.slotMu.Lock()
		defer d.slotMu.Unlock()
		slots = newSlotView(d.targets)
		if functions = slots.free(q.InstanceID); functions[q.Target.Function] <= 0 {
			return nil, false, nil
		}
	}
	run, ok := d.enter()
	if !ok {
		return nil, false, nil
	}
	defer d.wg.Done()
	res, claimed, err := ac.TaskAddClaim(ctx, tasks, d.claimParams(q, inst, d.clock.Now(), functions))
	if err != nil {
		return nil, true, err
	}
	if slots != nil {
		slots.took(q, claimed) // before the deliveries look for them
	}
	d.launchAll(run, claimed, q, inst, queues)
	for _, r := range res {
		if r.Err == nil && r.Task.State != task.Running { // stored, not claimed
			d.dueAdded(q.InstanceID, q.Name)
			break
		}
	}
	return res, true, nil
}

// inFlight is how many attempts of this node for instanceID are in
// flight, counted up to limit.
func (d *Dispatcher) inFlight(instanceID string, limit int) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.inflight) < limit {
		return len(d.inflight) // fewer of all instances: no need to count
	}
	n := 0
	for _, r := range d.inflight {
		if r.InstanceID == instanceID {
			if n++; n >= limit {
				break
			}
		}
	}
	return n
}

// enter lets a caller outside the run loop launch deliveries: while the
// loop runs, it returns the loop's context and holds d.wg, so that the
// loop's end waits for what the caller launches, until the caller's
// d.wg.Done; otherwise it reports false.
func (d *Dispatcher) enter() (context.Context, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.runCtx == nil || d.runCtx.Err() != nil {
		return nil, false
	}
	d.wg.Add(1)
	return d.runCtx, true
}
