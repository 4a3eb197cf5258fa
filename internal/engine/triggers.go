package engine

import (
	"context"
	"fmt"

	"github.com/errandhq/errand/internal/id"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// TriggerCreate validates and stores a new rule of instance. Its queue must
// exist and have a target or be pull (else NOT_FOUND or NO_TARGET), a task
// rule's watched queue must exist, and a schedule rule waits for its first
// tick after now. A hook rule gets its token, the {hook} of its URL.
func (e *Engine) TriggerCreate(ctx context.Context, org, instance string, p *task.TriggerPatch) (*task.Trigger, error) {
	inst, err := e.Instance(ctx, org, instance)
	if err != nil {
		return nil, err
	}
	now := e.now()
	tr := &task.Trigger{InstanceID: inst.ID, ID: e.newID(), CreatedAt: now, UpdatedAt: now}
	if err := p.Apply(tr, inst.Name, true); err != nil {
		return nil, err
	}
	if err := e.checkRuleQueues(ctx, tr, inst.Name); err != nil {
		return nil, err
	}
	if p.ID != "" {
		if _, err := e.store.TriggerGet(ctx, store.TriggerRef{InstanceID: inst.ID, ID: p.ID}); err == nil {
			return nil, task.FieldErrorf(task.CodeInvalidArgument, "id", "instance %q already has a rule %q", inst.Name, p.ID)
		} else if !task.IsCode(err, task.CodeNotFound) {
			return nil, err
		}
	}
	if tr.Kind == task.TriggerHook {
		tr.HookToken = "hk_" + id.Secret(16)
	}
	tr.NextTickAt = e.firstTick(tr, now)
	if err := e.store.TriggerCreate(ctx, &store.TriggerCreateParams{Trigger: tr}); err != nil {
		return nil, err
	}
	e.rulesChanged()
	return tr, nil
}

// TriggerList lists instance's rules, oldest first.
func (e *Engine) TriggerList(ctx context.Context, org, instance string) ([]*task.Trigger, error) {
	inst, err := e.Instance(ctx, org, instance)
	if err != nil {
		return nil, err
	}
	return e.store.TriggerList(ctx, &store.TriggerListParams{InstanceID: inst.ID})
}

// TriggerRef names a rule of an organization's instance.
type TriggerRef struct {
	Org      string
	Instance string // the instance's name
	ID       string
}

// notFound names the rule in a NOT_FOUND without a subject.
func (r TriggerRef) notFound(err error) error {
	return task.NamedIn(err, "trigger", r.ID, r.Instance)
}

// TriggerGet returns one rule.
func (e *Engine) TriggerGet(ctx context.Context, ref TriggerRef) (*task.Trigger, error) {
	inst, err := e.Instance(ctx, ref.Org, ref.Instance)
	if err != nil {
		return nil, err
	}
	tr, err := e.store.TriggerGet(ctx, store.TriggerRef{InstanceID: inst.ID, ID: ref.ID})
	return tr, ref.notFound(err)
}

// TriggerPatch changes the fields p sends, with the checks of create. A
// schedule rule whose schedule changes, or that is enabled again, waits for
// its next tick after now: the time it was off is not caught up.
func (e *Engine) TriggerPatch(ctx context.Context, ref TriggerRef, p *task.TriggerPatch) (*task.Trigger, error) {
	inst, err := e.Instance(ctx, ref.Org, ref.Instance)
	if err != nil {
		return nil, err
	}
	tr, err := e.store.TriggerUpdate(ctx, store.TriggerRef{InstanceID: inst.ID, ID: ref.ID}, func(tr *task.Trigger) error {
		wasEnabled := tr.Enabled
		if err := p.Apply(tr, inst.Name, false); err != nil {
			return err
		}
		// The queues are checked when the PATCH names one or enables the
		// rule: a rule whose queue lost its target can still be disabled
		// or edited while its owner fixes the queue.
		if p.Queue != nil || p.Task != nil && p.Task.Queue != nil || tr.Enabled && !wasEnabled {
			if err := e.checkRuleQueues(ctx, tr, inst.Name); err != nil {
				return err
			}
		}
		now := e.now()
		if p.Schedule != nil || tr.Enabled != wasEnabled || !tr.Enabled {
			tr.NextTickAt = e.firstTick(tr, now)
		}
		tr.UpdatedAt = now
		return nil
	})
	if err != nil {
		return nil, ref.notFound(err)
	}
	e.rulesChanged()
	return tr, nil
}

// TriggerDelete removes a rule (and its hook URL, and its chain events not
// yet added).
func (e *Engine) TriggerDelete(ctx context.Context, ref TriggerRef) error {
	inst, err := e.Instance(ctx, ref.Org, ref.Instance)
	if err != nil {
		return err
	}
	if err := e.store.TriggerDelete(ctx, store.TriggerRef{InstanceID: inst.ID, ID: ref.ID}); err != nil {
		return ref.notFound(err)
	}
	e.rulesChanged()
	return nil
}

// checkRuleQueues applies the save-time checks of a rule: the queue it adds
// to exists and has a target or is pull, and a task rule's watched queue
// exists.
func (e *Engine) checkRuleQueues(ctx context.Context, tr *task.Trigger, instance string) error {
	q, err := e.store.QueueGet(ctx, store.QueueRef{InstanceID: tr.InstanceID, Name: tr.Queue})
	if task.IsCode(err, task.CodeNotFound) {
		return task.NotFoundIn("queue", tr.Queue, instance)
	}
	if err != nil {
		return err
	}
	if !q.DeliversUntargeted() {
		return ruleNoTarget(tr.Queue)
	}
	if tr.Kind == task.TriggerTask {
		if _, err := e.store.QueueGet(ctx, store.QueueRef{InstanceID: tr.InstanceID, Name: tr.OnQueue}); task.IsCode(err, task.CodeNotFound) {
			return task.Errorf(task.CodeNotFound, "watched queue %q not found in instance %q", tr.OnQueue, instance)
		} else if err != nil {
			return err
		}
	}
	return nil
}

// ruleNoTarget is the refusal of a rule whose push queue has no target,
// in its owner's words: a rule's tasks carry none.
func ruleNoTarget(queue string) error {
	return task.Errorf(task.CodeNoTarget, "%s", ruleNoTargetWords(queue))
}

// ruleNoTargetWords are ruleNoTarget's words, which a bundle's refusal
// gives under the rule's field.
func ruleNoTargetWords(queue string) string {
	return fmt.Sprintf("queue %q has no target: a rule's tasks carry none, so give the queue a target or use a pull queue", queue)
}

// ruleTask builds the task a rule adds to q through the domain; a push
// queue without a target is ruleNoTarget, not the domain's words for an
// add (which tell the caller to give the task a target).
func ruleTask(q *task.Queue, in task.AddInput, now int64, rules task.URLRules) (*task.Task, error) {
	t, err := task.NewTask(q, in, now, rules)
	if task.IsCode(err, task.CodeNoTarget) {
		return nil, ruleNoTarget(q.Name)
	}
	return t, err
}

// firstTick is the tick an enabled schedule rule waits for after now (0
// for a disabled rule or another kind).
func (e *Engine) firstTick(tr *task.Trigger, now int64) int64 {
	if !tr.Enabled {
		return 0
	}
	return tr.NextTickAfter(now)
}

// rulesChanged applies a rule change at once: this node's scheduler wakes
// to read the rules again, and so does every other node's (through the
// store's notifications).
func (e *Engine) rulesChanged() {
	e.ruleWake.wake()
	e.changed()
}
