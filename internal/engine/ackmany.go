package engine

import (
	"context"
	"encoding/json"

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
func (e *Engine) AckMany(ctx context.Context, ref QueueRef, acks []AckInput) ([]error, error) {
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
	q, err := e.queueGet(ctx, ref)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(acks))
	for i, a := range acks {
		ids[i] = a.ID
	}
	tasks, err := e.store.TaskGetMany(ctx, q.InstanceID, ids)
	if err != nil {
		return nil, err
	}
	now := e.now()
	errs := make([]error, len(acks))
	var fps []*store.FinishParams
	var at []int // at[j] is the ack whose write fps[j] is
	seen := make(map[string]bool, len(acks))
	for i, a := range acks {
		t := tasks[a.ID]
		if seen[a.ID] {
			// The same task twice: one write per task, so the second is
			// answered as the first's lease would be after it finished.
			errs[i] = task.Errorf(task.CodeLeaseLost, "the task is acknowledged twice in this call")
			continue
		}
		seen[a.ID] = true
		fp, err := ackOne(t, a, q, now)
		if err != nil {
			errs[i] = err
			continue
		}
		fps = append(fps, fp)
		at = append(at, i)
	}
	if len(fps) == 0 {
		return errs, nil
	}
	for j, err := range e.batcher.finishMany(ctx, fps) {
		errs[at[j]] = err
		if err == nil {
			countAttempt(e.metrics, task.AttemptSucceeded, true)
		}
	}
	return errs, nil
}

// ackOne checks one ack against its task (nil when the instance has no
// such task) and returns the fenced write that finishes it.
func ackOne(t *task.Task, a AckInput, q *task.Queue, now int64) (*store.FinishParams, error) {
	if t == nil {
		return nil, task.Errorf(task.CodeNotFound, "task %q not found", a.ID)
	}
	if t.Queue != q.Name || !t.Pull {
		return nil, task.Errorf(task.CodeLeaseLost, "the task is not leased from queue %q", q.Name)
	}
	if err := t.CheckLease(a.LeaseID, now); err != nil {
		return nil, err
	}
	lease := t.LeaseID
	if _, err := t.Finish(q, now, task.Outcome{Status: task.AttemptSucceeded, Result: a.Result}); err != nil {
		return nil, err
	}
	return &store.FinishParams{Task: t, LeaseID: lease}, nil
}
