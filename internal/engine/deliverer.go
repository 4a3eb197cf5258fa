package engine

import (
	"context"
	"time"

	"github.com/errandhq/errand/internal/task"
)

// Delivery is one push attempt handed to a target.
type Delivery struct {
	Task     *task.Task     // as claimed: attempt, deadlineAt, payload …
	Queue    *task.Queue    // the queue's settings at claim time
	Instance *task.Instance // for the signing key, read at claim time
	Target   task.Target    // resolved for this attempt
}

// DeliveryResult is how a target answered.
type DeliveryResult struct {
	// Outcome is the attempt's outcome as if the target asked for nothing
	// special (succeeded, or failed with HTTPStatus and Error).
	Outcome task.Outcome
	// Defer is set when the target asked to be tried again later without
	// using an attempt (503 + x-task-retry: defer), with DeferDelay. The
	// engine honours it only when the queue's targetControl is on.
	Defer      bool
	DeferDelay time.Duration
}

// Deliverer delivers attempts to one kind of target (webhook, function,
// channel). Deliver returns when the target has answered or ctx ended.
type Deliverer interface {
	Deliver(ctx context.Context, d *Delivery) DeliveryResult
}

// DelivererFunc adapts a function to Deliverer.
type DelivererFunc func(ctx context.Context, d *Delivery) DeliveryResult

// Deliver calls f.
func (f DelivererFunc) Deliver(ctx context.Context, d *Delivery) DeliveryResult { return f(ctx, d) }
