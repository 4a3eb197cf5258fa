package engine

import (
	"context"

	"github.com/errandhq/errand/internal/deliver"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// Wake wakes this node's dispatcher: a connected worker came or a slot of
// one came free, so a function's waiting tasks may be claimable now.
func (e *Engine) Wake() { e.dispatch.wake(); e.waker.wake() }

// TaskAddFromDelivery adds tasks from inside an attempt: token is the
// attempt's delivery token (the header errandapi.DeliveryHeader), checked
// against the instance's key. A pull lease's token holds a day past the
// lease's first expiry, and after that for as long as its task is still
// leased (extended): a worker may keep a task for days. The tasks get
// depth = the parent's + 1 and source "function" (or "webhook", "lease",
// from a webhook delivery's or a pull lease's token); past task.MaxDepth
// the add is refused with DEPTH_EXCEEDED and logged, since it is most
// likely a loop.
func (e *Engine) TaskAddFromDelivery(ctx context.Context, ref QueueRef, ins []task.AddInput, token string, field string) ([]AddResult, error) {
	inst, err := e.Instance(ctx, ref.Org, ref.Instance)
	if err != nil {
		return nil, err
	}
	tok, err := deliver.VerifyToken(token, inst.ID, inst.WebhookKey, e.now(), field)
	if err != nil && tok != nil && tok.Kind == deliver.TokenLease && e.leaseHeld(ctx, inst.ID, tok.Task) {
		err = nil // past the day a lease's token holds by itself, but still leased
	}
	if err != nil {
		return nil, err
	}
	source := task.SourceFunction
	switch tok.Kind {
	case deliver.TokenWebhook:
		source = task.SourceWebhook
	case deliver.TokenLease:
		source = task.SourceLease
	}
	for i := range ins {
		ins[i].Depth = tok.Depth + 1
		ins[i].Source = source
	}
	res, err := e.TaskAdd(ctx, ref, ins)
	if task.IsCode(err, task.CodeDepthExceeded) {
		e.log.Warn("add refused: a chain of adds from deliveries is too deep (a loop?)",
			"instance", ref.Instance, "queue", ref.Queue, "parent", tok.Task, "depth", tok.Depth+1, "max", task.MaxDepth)
	}
	return res, err
}

// leaseHeld reports whether task id of instanceID is leased now (a pull
// task RUNNING with a lease not yet expired).
func (e *Engine) leaseHeld(ctx context.Context, instanceID, id string) bool {
	t, err := e.store.TaskGet(ctx, store.TaskRef{InstanceID: instanceID, ID: id})
	return err == nil && t.Pull && t.State == task.Running && e.now() < t.LeaseExpiresAt
}
