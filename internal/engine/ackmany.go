package engine

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// AckInput is one ack of a batch.
type AckInput struct {
	ID      string
	LeaseID string
	Result  json.RawMessage
}

// AckMany acknowledges several leased tasks of one queue in one group
// commit. Each ack stands alone: its error (LEASE_LOST, NOT_FOUND, …) is
// returned in its place and the others are stored. This is errand's batch
// form of ack, for workers that lease batches.
func (e *Engine) AckMany(ctx context.Context, org, instance, queue string, acks []AckInput) ([]error, error) {
	if len(acks) == 0 || len(acks) > MaxLeaseCount {
		return nil, task.FieldErrorf(task.CodeInvalidArgument, "acks", "send 1–%d acks", MaxLeaseCount)
	}
	for i, a := range acks {
		if task.IsJSONNull(a.Result) {
			acks[i].Result = nil
		} else if err := task.ValidateJSONBytes(a.Result, "result"); err != nil {
			return nil, indexed(err, i, len(acks)+1)
		}
	}
	inst, err := e.Instance(ctx, org, instance)
	if err != nil {
		return nil, err
	}
	q, err := e.store.QueueGet(ctx, inst.ID, queue)
	if err != nil {
		return nil, err
	}
	now := e.now()
	errs := make([]error, len(acks))
	var wg sync.WaitGroup
	for i, a := range acks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = e.ackOne(ctx, inst.ID, q, a, now)
		}()
	}
	wg.Wait()
	return errs, nil
}

// ackOne checks one ack against its task and hands it to the finish batcher,
// where the concurrent acks of the batch meet in one transaction.
func (e *Engine) ackOne(ctx context.Context, instanceID string, q *task.Queue, a AckInput, now int64) error {
	t, err := e.store.TaskGet(ctx, instanceID, a.ID)
	if err != nil {
		return err
	}
	if t.Queue != q.Name || !t.Pull {
		return task.Errorf(task.CodeLeaseLost, "the task is not leased from queue %q", q.Name)
	}
	if err := t.CheckLease(a.LeaseID, now); err != nil {
		return err
	}
	lease := t.LeaseID
	if _, err := t.Finish(q, now, task.Outcome{Status: task.AttemptSucceeded, Result: a.Result}); err != nil {
		return err
	}
	if err := e.finisher.finish(ctx, &store.FinishParams{Task: t, LeaseID: lease}); err != nil {
		return err
	}
	e.countAttempt(task.AttemptSucceeded, true)
	return nil
}
