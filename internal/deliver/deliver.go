package deliver

import (
	"context"
	"fmt"
	"time"

	"github.com/errandhq/errand/internal/task"
)

// Request is one delivery attempt.
type Request struct {
	// Task is the task as claimed: ID, Queue, Name, Attempt, MaxAttempts,
	// RunAt, CreatedAt, DeadlineAt, Source, Depth, Params, DeadLetterOf and
	// Payload are sent.
	Task *task.Task
	// Target is the target resolved for this attempt.
	Target task.Target
	// Key is the instance's whole `whsec_…` signing key.
	Key string
	// Now stamps the attempt (the timestamp headers, and the base of an
	// HTTP-date retry-after); zero means time.Now().
	Now time.Time
	// AttemptCtx, when set, ends at Task.DeadlineAt (and with the ctx
	// Deliver is given): the engine makes one for the attempts of a claim
	// that share a deadline, and Functions runs its handler with it rather
	// than starting a timer of its own for each attempt.
	AttemptCtx context.Context
}

// Result is how the attempt ended.
//
// Outcome is the attempt as it stands with target control off: a 503 that
// asked to defer is a failed attempt there like any other 503. When the
// target asked to defer (503, `x-task-retry: defer` and a valid
// `retry-after`), Defer is set and DeferDelay holds the wait; the engine,
// which knows the queue's targetControl, calls OutcomeFor to get the outcome
// to record.
type Result struct {
	// Outcome: Status is AttemptSucceeded or AttemptFailed; HTTPStatus is the
	// answer's status (0 when none came); Error is short ("connect:
	// connection refused", "HTTP 500: <first bytes>", "deadline exceeded");
	// Result is a 2xx answer's body when it is JSON of at most 64 KiB.
	Outcome task.Outcome
	// Duration is how long the attempt took, from send to the answer's end.
	Duration time.Duration
	// Defer reports that the target asked to be tried again after
	// DeferDelay without using an attempt.
	Defer      bool
	DeferDelay time.Duration
	// Late says in words what the target answered after the attempt's
	// deadline ("success", "failure: …"), when the deliverer itself saw
	// the answer come late and reports the attempt as timed out (a
	// connected worker's answer, refused with LEASE_LOST). The dispatcher
	// records it on the timed-out attempt.
	Late string
	// OnTime reports that the deliverer itself judged the answer to have
	// come before the attempt's deadline (a connected worker's answer,
	// told "recorded", or "refused" when the answer itself was bad, as a
	// result over 64 KiB: a failed attempt, on time): the dispatcher keeps
	// that judgement rather than read the clock again, later.
	OnTime bool
}

// LateAnswer describes r as the answer that came after an attempt's
// deadline: its HTTP status, a success, a deferral or a failure with its
// error.
func LateAnswer(r Result) string {
	switch {
	case r.Late != "":
		return r.Late
	case r.Outcome.HTTPStatus != 0:
		return fmt.Sprintf("HTTP %d", r.Outcome.HTTPStatus)
	case r.Defer:
		return "a deferral of " + r.DeferDelay.String()
	case r.Outcome.Status == task.AttemptSucceeded:
		return "success"
	case r.Outcome.Error != "":
		return "failure: " + r.Outcome.Error
	}
	return "failure"
}

// OutcomeFor returns the outcome to record under the queue's targetControl
// setting: a requested deferral becomes AttemptDeferred with Delay when
// targetControl is on, and stays the failed Outcome when it is off.
func (r Result) OutcomeFor(targetControl bool) task.Outcome {
	o := r.Outcome
	switch {
	case !r.Defer:
		return o
	case !targetControl:
		o.Error += " (the deferral was ignored: the queue's targetControl is off)"
		return o
	}
	o.Status = task.AttemptDeferred
	o.Delay = r.DeferDelay
	o.Error = "deferred by the target for " + r.DeferDelay.Round(time.Millisecond).String()
	if r.DeferDelay < task.MinDeferDelay {
		o.Error += "; tried again after " + task.MinDeferDelay.String() + ", the shortest deferral"
	}
	return o
}

// Deliverer carries one attempt to its target. It never panics on a bad
// target and never returns without an outcome; the context's deadline is
// the attempt's time limit.
type Deliverer interface {
	Deliver(ctx context.Context, r *Request) Result
}

// Mux sends each attempt to the deliverer of its target's kind. A kind
// without a deliverer fails the attempt.
type Mux struct {
	Webhook  Deliverer
	Function Deliverer
	Channel  Deliverer
}

// Deliver implements Deliverer.
func (m *Mux) Deliver(ctx context.Context, r *Request) Result {
	var d Deliverer
	kind := r.Target.Kind()
	switch kind {
	case "webhook":
		d = m.Webhook
	case "function":
		d = m.Function
	case "channel":
		d = m.Channel
	}
	if d == nil {
		if kind == "" {
			return failed(0, "no target")
		}
		return failed(0, kind+" targets are not served here")
	}
	return d.Deliver(ctx, r)
}

func failed(status int, msg string) Result {
	return Result{Outcome: task.Outcome{Status: task.AttemptFailed, HTTPStatus: status, Error: msg}}
}
