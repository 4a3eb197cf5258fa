package engine

import (
	"context"
	"fmt"
	"strings"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// CountLimit is where a queue's counts by state stop.
const CountLimit = 10000

// QueueView is a queue with its counts by state.
type QueueView struct {
	Queue  *task.Queue
	Counts map[task.State]int
}

// QueueCreate creates a queue from a patch of settings over the defaults.
func (e *Engine) QueueCreate(ctx context.Context, ref QueueRef, p *task.QueuePatch) (*task.Queue, error) {
	inst, err := e.Instance(ctx, ref.Org, ref.Instance)
	if err != nil {
		return nil, err
	}
	if err := task.ValidateQueueName(ref.Queue, "name"); err != nil {
		return nil, err
	}
	mode := task.ModePush
	if p.Mode != nil {
		mode = *p.Mode
	}
	q := task.NewQueue(inst.ID, ref.Queue, mode)
	if err := p.Apply(q, true, e.rules); err != nil {
		return nil, err
	}
	if err := e.checkDeadLetterTarget(ctx, inst.ID, p); err != nil {
		return nil, err
	}
	q.CreatedAt = e.now()
	if err := e.store.QueueCreate(ctx, q); err != nil {
		return nil, err
	}
	e.changed()
	return q, nil
}

// QueueGet returns one queue with its counts.
func (e *Engine) QueueGet(ctx context.Context, ref QueueRef) (*QueueView, error) {
	q, err := e.queueGet(ctx, ref)
	if err != nil {
		return nil, err
	}
	counts, err := e.store.QueueCounts(ctx, store.QueueRef{InstanceID: q.InstanceID, Name: q.Name}, CountLimit)
	if err != nil {
		return nil, err
	}
	return &QueueView{Queue: q, Counts: counts}, nil
}

// QueueList returns an instance's queues with their counts.
func (e *Engine) QueueList(ctx context.Context, org, instance string) ([]*QueueView, error) {
	inst, err := e.Instance(ctx, org, instance)
	if err != nil {
		return nil, err
	}
	qs, err := e.store.QueueList(ctx, inst.ID)
	if err != nil {
		return nil, err
	}
	out := make([]*QueueView, 0, len(qs))
	for _, q := range qs {
		counts, err := e.store.QueueCounts(ctx, store.QueueRef{InstanceID: inst.ID, Name: q.Name}, CountLimit)
		if err != nil {
			return nil, err
		}
		out = append(out, &QueueView{Queue: q, Counts: counts})
	}
	return out, nil
}

// QueuePatch changes only the settings sent.
func (e *Engine) QueuePatch(ctx context.Context, ref QueueRef, p *task.QueuePatch) (*task.Queue, error) {
	sq, err := e.queueOf(ctx, ref)
	if err != nil {
		return nil, err
	}
	if err := e.checkDeadLetterTarget(ctx, sq.InstanceID, p); err != nil {
		return nil, err
	}
	if err := e.checkKeepsTarget(ctx, sq, p); err != nil {
		return nil, err
	}
	q, err := e.store.QueueUpdate(ctx, sq, func(q *task.Queue) error { return p.Apply(q, false, e.rules) })
	if err != nil {
		return nil, ref.notFound(err)
	}
	e.changed()
	return q, nil
}

// QueueDelete removes a queue and its tasks at once. The queue "default"
// is refused: every instance has one (purge empties it).
func (e *Engine) QueueDelete(ctx context.Context, ref QueueRef) (int, error) {
	if ref.Queue == task.DefaultQueueName {
		return 0, task.FieldErrorf(task.CodeInvalidArgument, "queue",
			"the queue %q cannot be deleted: every instance has one; purge it to remove its tasks", task.DefaultQueueName)
	}
	sq, err := e.queueOf(ctx, ref)
	if err != nil {
		return 0, err
	}
	n, err := e.store.QueueDelete(ctx, sq)
	if err == nil {
		e.changed()
	}
	return n, ref.notFound(err)
}

// QueuePurge removes every task of a queue at once.
func (e *Engine) QueuePurge(ctx context.Context, ref QueueRef) (int, error) {
	q, err := e.queueGet(ctx, ref)
	if err != nil {
		return 0, err
	}
	n, err := e.store.QueuePurge(ctx, store.QueueRef{InstanceID: q.InstanceID, Name: q.Name})
	return n, ref.notFound(err)
}

// checkDeadLetterTarget refuses a deadLetterQueue that is a push queue
// without a target: a dead-letter copy carries no target of its own, so
// none of its copies could be delivered (each would spend its attempts on
// "no target"). A queue that does not exist is the store's to name.
func (e *Engine) checkDeadLetterTarget(ctx context.Context, instanceID string, p *task.QueuePatch) error {
	if p.DeadLetterQueue == nil || *p.DeadLetterQueue == nil || **p.DeadLetterQueue == "" {
		return nil
	}
	name := **p.DeadLetterQueue
	dlq, err := e.store.QueueGet(ctx, store.QueueRef{InstanceID: instanceID, Name: name})
	switch {
	case task.IsCode(err, task.CodeNotFound):
		return nil
	case err != nil:
		return err
	case !dlq.DeliversUntargeted():
		return task.DeadLetterRefusal("deadLetterQueue", name)
	}
	return nil
}

// checkKeepsTarget refuses clearing the target of a push queue that
// others add to without a target of their own: queues that name it as
// their deadLetterQueue (checkDeadLetterTarget from the other side) and
// enabled rules that add to it (checkRuleQueues from the other side).
func (e *Engine) checkKeepsTarget(ctx context.Context, ref store.QueueRef, p *task.QueuePatch) error {
	if p.Target == nil || *p.Target != nil {
		return nil
	}
	qs, err := e.store.QueueList(ctx, ref.InstanceID)
	if err != nil {
		return err
	}
	var users []string
	for _, q := range qs {
		if q.Name == ref.Name && q.Mode != task.ModePush {
			return nil // a pull queue needs no target
		}
		if q.Name != ref.Name && q.DeadLetterQueue == ref.Name {
			users = append(users, fmt.Sprintf("queue %q (its deadLetterQueue)", q.Name))
		}
	}
	trs, err := e.store.TriggerList(ctx, &store.TriggerListParams{InstanceID: ref.InstanceID})
	if err != nil {
		return err
	}
	for _, tr := range trs {
		if tr.Enabled && tr.Queue == ref.Name {
			users = append(users, fmt.Sprintf("rule %q", tr.ID))
		}
	}
	if len(users) == 0 {
		return nil
	}
	return task.FieldErrorf(task.CodeNoTarget, "target",
		"queue %q gets tasks without a target of their own from %s: keep a target, or first change or disable those",
		ref.Name, strings.Join(users, ", "))
}
