package engine

import (
	"context"

	"github.com/errandhq/errand/internal/groupcommit"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// AddResult is the outcome of one task of an add.
type AddResult = store.AddResult

// TaskAdd validates and stores tasks in one transaction. Any invalid task
// refuses the whole call (nothing is added); a duplicate name refuses only
// that task (TASK_EXISTS with the existing id).
func (e *Engine) TaskAdd(ctx context.Context, ref QueueRef, ins []task.AddInput) ([]AddResult, error) {
	return e.TaskAddWith(ctx, ref, ins, e.addDue)
}

// addDue stores tasks (store.Store.TaskAdd) and, once they are committed,
// points the dispatcher at the queue if any is due now: its next pass, which
// TaskAddWith wakes, claims them without first reading which queues have a
// task due. On a store.AddClaimer the dispatcher claims them in the add's
// own transaction instead, when it can (Dispatcher.addClaim) — but not a
// call of one task while another such call is under way on this node: an
// add that claims holds the instance's claim lock to its commit, so
// concurrent single adds would each wait for the last one's; they are
// group-committed instead (addOne), and the dispatcher's pass claims them.
// (AddTx's tasks are committed later, by the application: no hint; the
// dispatcher finds them as any other.)
func (e *Engine) addDue(ctx context.Context, q *task.Queue, tasks []*task.Task) ([]AddResult, error) {
	alone := true
	if len(tasks) == 1 {
		alone = e.singleAdds.Add(1) == 1
		defer e.singleAdds.Add(-1)
	}
	if e.addClaimer != nil && alone {
		if res, ok, err := e.dispatcher.addClaim(ctx, e.addClaimer, q, tasks); ok {
			return res, err
		}
	}
	var res []AddResult
	var err error
	if len(tasks) == 1 {
		// A call of one task joins the other such calls being written
		// (addOne): concurrent single adds share a transaction.
		rs, errs := e.addOne.Do(ctx, [][]*task.Task{tasks})
		res, err = rs[0], errs[0]
	} else {
		res, err = e.store.TaskAdd(ctx, tasks)
	}
	if err != nil {
		return nil, err
	}
	for _, r := range res {
		if t := r.Task; r.Err == nil && t != nil && t.RunAt <= t.CreatedAt {
			e.dispatcher.dueAdded(t.InstanceID, t.Queue)
			break // one queue per call
		}
	}
	return res, nil
}

// maxAddOneBatch bounds one group commit of single adds (addOne).
const maxAddOneBatch = 100

// newAddOne is the group commit of calls that add one task each: the calls
// waiting while another batch is written are stored in one TaskAdd, one
// transaction (each task independent of the others, as in any TaskAdd), and
// each call answered with its own task's result; a batch the store refuses
// is written again a call at a time, so that a task it cannot take fails
// its own call alone. A call of several tasks is its own transaction, as
// its caller asked, and writes alone.
func newAddOne(st store.Store, writers int) *groupcommit.Group[[]*task.Task, []AddResult] {
	write := func(ctx context.Context, calls [][]*task.Task) ([][]AddResult, error) {
		all := make([]*task.Task, 0, len(calls))
		for _, ts := range calls {
			all = append(all, ts...)
		}
		res, err := st.TaskAdd(ctx, all)
		if err != nil {
			return nil, err
		}
		out := make([][]AddResult, len(calls))
		for i, ts := range calls {
			out[i], res = res[:len(ts):len(ts)], res[len(ts):]
		}
		return out, nil
	}
	return &groupcommit.Group[[]*task.Task, []AddResult]{Write: write, Max: maxAddOneBatch, Writers: writers, Alone: true}
}

// TaskAddWith is TaskAdd storing the tasks with add (store.Store.TaskAdd's
// contract, given the tasks' queue as just read) instead: the embedded
// engine's AddTx adds them inside the application's own transaction.
func (e *Engine) TaskAddWith(ctx context.Context, ref QueueRef, ins []task.AddInput, add func(context.Context, *task.Queue, []*task.Task) ([]AddResult, error)) ([]AddResult, error) {
	if len(ins) == 0 || len(ins) > task.MaxAddBatch {
		return nil, task.FieldErrorf(task.CodeInvalidArgument, "tasks", "send 1–%d tasks", task.MaxAddBatch)
	}
	q, err := e.queueGet(ctx, ref)
	if err != nil {
		return nil, err
	}
	now := e.now()
	tasks := make([]*task.Task, len(ins))
	// A refused field of any task (INVALID_ARGUMENT, PAYLOAD_TOO_LARGE)
	// answers before another refusal of an earlier one (NO_TARGET,
	// DEPTH_EXCEEDED), as within one task: the caller fixes its input
	// first.
	var refused error
	for i, in := range ins {
		t, err := task.NewTask(q, in, now, e.rules)
		if err != nil {
			if te, ok := err.(*task.Error); ok && te.Field != "" {
				return nil, indexed(err, i, len(ins))
			}
			if refused == nil {
				refused = indexed(err, i, len(ins))
			}
			continue
		}
		tasks[i] = t
	}
	if refused != nil {
		return nil, refused
	}
	for _, t := range tasks {
		t.ID = e.newID()
	}
	res, err := add(ctx, q, tasks)
	if err != nil {
		return nil, err
	}
	for _, r := range res {
		if r.Err == nil {
			e.metrics.TasksAdded.Inc()
			e.usage.count(q.InstanceID, usageAdded, 1)
		}
	}
	e.addedTo(q, res)
	e.logUnserved(ctx, q, res)
	return res, nil
}

// addedTo wakes what the tasks res added to q concern. A pull queue's
// concern the long polls alone (no dispatcher pass claims from it, and a
// queue's mode never changes). A push queue's concern this node's
// dispatcher, unless the add claimed them all (its deliveries are under
// way) — even a paused queue's, read as paused before the add: a resume
// that woke the dispatcher before the add committed would otherwise leave
// the task to the backstop. Other nodes' dispatchers are woken only for a
// task this node may not deliver itself: a function's (its workers may be
// connected elsewhere) or a paused queue's (the node that resumes it
// claims it); any node delivers to a webhook or a channel, so for those
// the others wake their waiters alone (store.ChangeWaiters: a NOTIFY for
// each of several nodes' single adds woke every node's dispatcher for
// nothing and cost PostgreSQL more than the add). A function's task wakes
// the dispatchers of the nodes that serve a function (functionsChanged). A
// due task a limit holds back (the instance's cap, the queue's concurrency
// or rate) is claimed when room is made: a finish wakes its own node's
// dispatcher, and a node's pass knows when the rate lets it claim.
func (e *Engine) addedTo(q *task.Queue, res []AddResult) {
	if q.Mode == task.ModePull {
		e.waitersChanged()
		return
	}
	if q.Paused {
		e.changed()
		return
	}
	if anyFunction(q, res) {
		e.functionsChanged()
		return
	}
	for _, r := range res {
		if r.Err == nil && r.Task.State != task.Running {
			e.dispatch.wake()
			break
		}
	}
	e.waitersChanged()
}

// anyFunction reports whether a task res stored has a function for its
// target (its own, or q's when it has none).
func anyFunction(q *task.Queue, res []AddResult) bool {
	for _, r := range res {
		if r.Err == nil && r.Task.EffectiveFunction(q) != "" {
			return true
		}
	}
	return false
}

// indexed prefixes the field of a batch item's error with tasks[i]
// (task.InBatch); a call of one item is left as it is (the HTTP API names
// the one task of a batch body itself, and the embedded engine the one task
// of its Add: task.OneOfBatch).
func indexed(err error, i, n int) error {
	if n == 1 {
		return err
	}
	return task.InBatch(err, i)
}

// TaskGet returns one task with payload, result and attempts.
func (e *Engine) TaskGet(ctx context.Context, ref TaskRef) (*task.Task, error) {
	st, err := e.taskOf(ctx, ref)
	if err != nil {
		return nil, err
	}
	t, err := e.store.TaskGet(ctx, st)
	if err != nil {
		return nil, ref.notFound(err)
	}
	e.noteUnservedTask(ctx, t)
	return t, nil
}

// noteUnservedTask is noteUnserved of one task as it is answered.
func (e *Engine) noteUnservedTask(ctx context.Context, t *task.Task) {
	e.noteUnserved(ctx, []*task.Task{t}, func() *task.Queue {
		q, _ := e.store.QueueGet(ctx, store.QueueRef{InstanceID: t.InstanceID, Name: t.Queue})
		return q
	})
}

// TaskChange changes a task's own fields after its add: its priority, its
// due time (task.Task.Change).
func (e *Engine) TaskChange(ctx context.Context, ref TaskRef, c task.Change) (*task.Task, error) {
	return e.mutate(ctx, ref, func(t *task.Task) error { return t.Change(c, e.now()) })
}

// TaskRun makes a scheduled or retrying task due now.
func (e *Engine) TaskRun(ctx context.Context, ref TaskRef) (*task.Task, error) {
	return e.mutate(ctx, ref, func(t *task.Task) error { return t.RunNow(e.now()) })
}

// TaskCancel cancels a task that has not started or is waiting.
func (e *Engine) TaskCancel(ctx context.Context, ref TaskRef) (*task.Task, error) {
	return e.mutate(ctx, ref, func(t *task.Task) error { return t.Cancel(e.now()) })
}

// TaskDelete removes a task's record (task.Deletable: any task but one
// whose attempt runs) and frees its name, and returns the task as it was.
// The record is removed only in the state it was read in, so a task that
// starts running meanwhile is read again and refused.
func (e *Engine) TaskDelete(ctx context.Context, ref TaskRef) (*task.Task, error) {
	st, err := e.taskOf(ctx, ref)
	if err != nil {
		return nil, err
	}
	for {
		t, err := e.store.TaskGet(ctx, st)
		if err != nil {
			return nil, ref.notFound(err)
		}
		if err := t.Deletable(); err != nil {
			return nil, err
		}
		n, err := e.store.TaskDelete(ctx, &store.TaskDeleteParams{InstanceID: st.InstanceID, IDs: []string{st.ID}, States: []task.State{t.State}})
		if err != nil {
			return nil, err
		}
		if n == 1 {
			e.changed()
			e.endBells.wake(st.InstanceID, st.ID) // its waiters read it gone
			return t, nil
		}
	}
}

// TaskRetry re-queues a failed task with a fresh budget.
func (e *Engine) TaskRetry(ctx context.Context, ref TaskRef) (*task.Task, error) {
	return e.mutate(ctx, ref, func(t *task.Task) error { return t.Retry(e.now()) })
}

func (e *Engine) mutate(ctx context.Context, ref TaskRef, fn func(*task.Task) error) (*task.Task, error) {
	st, err := e.taskOf(ctx, ref)
	if err != nil {
		return nil, err
	}
	t, err := e.store.TaskUpdate(ctx, st, fn)
	if err != nil {
		return nil, ref.notFound(err)
	}
	e.changed()
	e.endBells.ring(t)
	return t, nil
}
