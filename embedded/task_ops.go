package embedded

import (
	"context"
	"time"

	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/task"
)

// RunNow makes a scheduled or retrying task due at once (the v1 API's
// POST …/tasks/{id}/run) and returns it. A running or leased task is
// returned as it is; a finished one is refused with NOT_RUNNABLE.
func (e *Engine) RunNow(ctx context.Context, instance, id string) (*Task, error) {
	return e.taskOp(ctx, instance, id, e.eng.TaskRun)
}

// Cancel cancels a task that has not finished (River's JobCancel) and
// returns it: a scheduled or retrying one is cancelled at once; a running
// or leased one is refused with RUNNING_NOT_CANCELLABLE and left to its
// attempt; a finished one with NOT_CANCELLABLE.
func (e *Engine) Cancel(ctx context.Context, instance, id string) (*Task, error) {
	return e.taskOp(ctx, instance, id, e.eng.TaskCancel)
}

// Retry gives a failed task a fresh set of attempts, due at once
// (River's JobRetry), and returns it; any other is refused with
// NOT_RETRYABLE.
func (e *Engine) Retry(ctx context.Context, instance, id string) (*Task, error) {
	return e.taskOp(ctx, instance, id, e.eng.TaskRetry)
}

// Delete removes a task's record at once (River's JobDelete) and returns
// the task as it was: its name is free again, and a Wait on it ends with
// NOT_FOUND. A running or leased task is refused with
// RUNNING_NOT_CANCELLABLE and left as it is.
func (e *Engine) Delete(ctx context.Context, instance, id string) (*Task, error) {
	return e.taskOp(ctx, instance, id, e.eng.TaskDelete)
}

// SetPriority changes a task's priority, 0–9 (the v1 API's PATCH
// …/tasks/{id}; BullMQ's changePriority), and returns the task. It orders
// the task among its queue's due tasks whenever it waits for a claim: at
// once for a scheduled or retrying task, from its next retry for a running
// or leased one, after a Retry for a failed one. A priority outside 0–9 is
// refused with INVALID_ARGUMENT naming priority.
func (e *Engine) SetPriority(ctx context.Context, instance, id string, priority int) (*Task, error) {
	return e.taskOp(ctx, instance, id, func(ctx context.Context, ref engine.TaskRef) (*task.Task, error) {
		return e.eng.TaskChange(ctx, ref, task.Change{Priority: &priority})
	})
}

// Reschedule moves a scheduled or retrying task's due time to at (a time
// past means now; at most a year ahead), as the v1 API's PATCH
// …/tasks/{id} with runAt does (BullMQ's changeDelay, Sidekiq's
// reschedule), and returns the task; a retrying one stays retrying until
// then. A running or leased task (its next wait is its backoff's) and a
// finished one are refused with NOT_RUNNABLE.
func (e *Engine) Reschedule(ctx context.Context, instance, id string, at time.Time) (*Task, error) {
	ms := at.UnixMilli()
	return e.taskOp(ctx, instance, id, func(ctx context.Context, ref engine.TaskRef) (*task.Task, error) {
		return e.eng.TaskChange(ctx, ref, task.Change{RunAt: &ms})
	})
}

// taskOp runs one of the engine's operations on a task.
func (e *Engine) taskOp(ctx context.Context, instance, id string, op func(context.Context, engine.TaskRef) (*task.Task, error)) (*Task, error) {
	if err := e.refuse(); err != nil {
		return nil, err
	}
	t, err := op(ctx, engine.TaskRef{Org: e.org, Instance: instance, ID: id})
	if err != nil {
		return nil, e.fail(err)
	}
	return publicTask(t), nil
}
