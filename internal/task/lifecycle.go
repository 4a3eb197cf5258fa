package task

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"time"
)

// moveTo is the only place a task's State changes. A transition outside the
// table is an error, never a silent write.
func (t *Task) moveTo(to State) error {
	if !CanTransition(t.State, to) {
		return Errorf(CodeInternal, "refused transition %s→%s for task %s", t.State, to, t.ID)
	}
	t.State = to
	return nil
}

// AddInput is what a caller sends to add one task, already decoded.
type AddInput struct {
	Name            string
	Payload         json.RawMessage
	Params          json.RawMessage
	Target          *Target
	Delay           *float64 // seconds from now
	RunAt           *int64   // epoch ms
	DeadlineSeconds *int
	Priority        *int // 0–MaxPriority; nil is 0
	Source          string
	Depth           int
}

// NewTask validates in against q and returns the task to store, without an ID.
// A push queue without a target refuses a task with none of its own
// (NO_TARGET), once in's fields have passed.
func NewTask(q *Queue, in AddInput, now int64, rules URLRules) (*Task, error) {
	if in.Name != "" {
		if err := ValidateName(in.Name, "name"); err != nil {
			return nil, err
		}
	}
	if in.Payload == nil {
		in.Payload = json.RawMessage("null")
	}
	if err := ValidateJSONBytes(in.Payload, "payload"); err != nil {
		return nil, err
	}
	if IsJSONNull(in.Params) {
		in.Params = nil
	} else if err := ValidateJSONBytes(in.Params, "params"); err != nil {
		return nil, err
	}
	if in.Target != nil {
		if q.Mode == ModePull {
			return nil, FieldErrorf(CodeInvalidArgument, "target", "a task on a pull queue has no target")
		}
		if err := ValidateTarget(in.Target, nil, "target", rules); err != nil {
			return nil, err
		}
	}
	runAt, err := dueTime(in.Delay, in.RunAt, now)
	if err != nil {
		return nil, err
	}
	if in.DeadlineSeconds != nil && (*in.DeadlineSeconds < 1 || *in.DeadlineSeconds > MaxDeadlineSeconds) {
		return nil, FieldErrorf(CodeInvalidArgument, "deadlineSeconds", "must be 1–%d", MaxDeadlineSeconds)
	}
	if in.Priority != nil {
		if err := validPriority(*in.Priority); err != nil {
			return nil, err
		}
	}
	// Every field is checked before the queue's target is looked at: a
	// refused field answers INVALID_ARGUMENT whatever the queue.
	if in.Target == nil && !q.DeliversUntargeted() {
		return nil, Errorf(CodeNoTarget, "queue %q has no target and the task names none: give the task one "+
			`("target": {"webhook": "https://…"}), or the queue one (PATCH the queue with a target), or use a pull queue`, q.Name)
	}
	if in.Depth > MaxDepth {
		return nil, Errorf(CodeDepthExceeded, "a chain of adds more than %d deep is cut", MaxDepth)
	}
	if in.Source == "" {
		in.Source = SourceAPI
	}
	t := &Task{
		InstanceID:  q.InstanceID,
		Queue:       q.Name,
		Name:        in.Name,
		State:       Pending,
		Pull:        q.Mode == ModePull,
		MaxAttempts: q.MaxAttempts,
		RunAt:       runAt,
		CreatedAt:   now,
		Source:      in.Source,
		Depth:       in.Depth,
		Params:      in.Params,
		Target:      in.Target,
		Payload:     in.Payload,
	}
	if in.DeadlineSeconds != nil {
		t.DeadlineSeconds = *in.DeadlineSeconds
	}
	if in.Priority != nil {
		t.Priority = *in.Priority
	}
	return t, nil
}

// ClaimOrder is the order in which a queue's due tasks are claimed: the
// higher priority first, then the earlier runAt, then the lower id.
func ClaimOrder(a, b *Task) int {
	return cmp.Or(cmp.Compare(b.Priority, a.Priority), cmp.Compare(a.RunAt, b.RunAt), cmp.Compare(a.ID, b.ID))
}

// Due reports whether a PENDING or RETRY_WAIT task may be claimed at now.
func (t *Task) Due(now int64) bool {
	return (t.State == Pending || t.State == RetryWait) && t.RunAt <= now
}

// Claim starts an attempt: PENDING or RETRY_WAIT → RUNNING, the attempt
// counter rises, and leaseID fences the attempt until leaseMs from now. For a
// push task DeadlineAt is the queue's (or the task's own) deadline.
func (t *Task) Claim(q *Queue, now int64, leaseID string, leaseMs int64) error {
	if err := t.moveTo(Running); err != nil {
		return err
	}
	t.Attempt++
	t.MaxAttempts = q.budget(t)
	t.StartedAt = now
	t.LeaseID = leaseID
	t.LeaseExpiresAt = now + leaseMs
	t.DeadlineAt = 0
	if !t.Pull {
		t.DeadlineAt = now + int64(t.EffectiveDeadline(q))*1000
	}
	return nil
}

// EffectiveDeadline is the deadline in seconds for t's next push attempt.
func (t *Task) EffectiveDeadline(q *Queue) int {
	if t.DeadlineSeconds > 0 {
		return t.DeadlineSeconds
	}
	return q.DeadlineSeconds
}

// EffectiveFunction is the function t's push attempts call: its own
// target's, or q's when it has none of its own; "" when that target is not
// a function.
func (t *Task) EffectiveFunction(q *Queue) string {
	if t.Target != nil {
		return t.Target.Function
	}
	if q != nil && q.Target != nil {
		return q.Target.Function
	}
	return ""
}

// CheckLease is the fence: it accepts only the current lease of a leased
// task, strictly before it expires. The lease of a task purged during the
// attempt is refused as ErrPurged.
func (t *Task) CheckLease(leaseID string, now int64) error {
	if t.PurgedDuring(leaseID) {
		return ErrPurged
	}
	if t.State != Running || leaseID == "" || t.LeaseID != leaseID || now >= t.LeaseExpiresAt {
		return Errorf(CodeLeaseLost, "the lease is no longer held: it expired, was released, or the task was finished or leased again")
	}
	return nil
}

// AckedBy reports whether t's last attempt succeeded under leaseID: a
// pull worker acknowledged it with that lease, and the same ack repeated
// (its answer lost, say) is done, not LEASE_LOST.
func (t *Task) AckedBy(leaseID string) bool {
	if leaseID == "" || t.State != Succeeded || len(t.Attempts) == 0 {
		return false
	}
	a := t.Attempts[len(t.Attempts)-1]
	return a.Status == AttemptSucceeded && a.Lease == leaseID
}

// Outcome says how an attempt ended, for Finish.
type Outcome struct {
	Status     string // one of the Attempt* statuses
	HTTPStatus int
	Error      string
	Result     json.RawMessage // on success
	// Delay is the wait before the next attempt for a deferral or a release;
	// for a failure the queue's backoff decides, unless Delay is set (a pull
	// worker's release with an error and delaySeconds).
	Delay time.Duration
	// NoBackoff retries a failed attempt at once: it counts against
	// maxAttempts, but the failure was its node's (it died), not the
	// target's, so the next attempt need not wait out a backoff.
	NoBackoff bool
}

// Finish ends the attempt in flight. A success stores the result; a deferral
// or a release without error goes back to RETRY_WAIT and gives the attempt
// back; a failure, timeout or expired lease waits out the backoff or, with
// the budget spent or maxAge passed, fails the task. It reports whether the
// task FAILED (a dead-letter copy is due).
func (t *Task) Finish(q *Queue, now int64, o Outcome) (failed bool, err error) {
	if t.State != Running {
		return false, Errorf(CodeInternal, "finish of task %s in state %s", t.ID, t.State)
	}
	a := Attempt{Attempt: t.Attempt, Status: o.Status, StartedAt: t.StartedAt, EndedAt: now, HTTPStatus: o.HTTPStatus, Error: SanitizeText(truncate(o.Error, 500))}
	if t.Pull && o.Status == AttemptSucceeded {
		a.Lease = t.LeaseID
	}
	t.Attempts = append(t.Attempts, a)
	t.LeaseID, t.LeaseExpiresAt, t.DeadlineAt, t.StartedAt = "", 0, 0, 0
	switch o.Status {
	case AttemptSucceeded:
		t.Result = o.Result
		t.LastError = ""
		t.FinishedAt = now
		return false, t.moveTo(Succeeded)
	case AttemptDeferred, AttemptReleased:
		t.Attempt-- // not counted against maxAttempts
		delay := o.Delay
		if o.Status == AttemptDeferred {
			// A target that defers for 0 again and again would otherwise
			// be called in a loop, as fast as the node can claim.
			delay = max(delay, MinDeferDelay)
		}
		next := now + delay.Milliseconds()
		if t.pastMaxAge(q, next) {
			t.LastError = "maxAgeSeconds passed"
			t.FinishedAt = now
			return true, t.moveTo(Failed)
		}
		t.RunAt = next
		return false, t.moveTo(RetryWait)
	case AttemptFailed, AttemptTimedOut, AttemptExpired:
		t.LastError = a.Error
		if t.LastError == "" {
			t.LastError = o.Status
		}
		next := now
		switch {
		case o.NoBackoff:
		case o.Delay > 0:
			next += o.Delay.Milliseconds()
		default:
			next += Backoff(t.Attempt, q.Backoff()).Milliseconds()
		}
		if t.Attempt >= q.budget(t) || t.pastMaxAge(q, next) {
			if t.Attempt < q.budget(t) { // the age, not the budget, ended it: say so
				const aged = "; maxAgeSeconds passed before the next attempt"
				t.LastError = truncate(t.LastError, 500-len(aged)) + aged
			}
			t.FinishedAt = now
			return true, t.moveTo(Failed)
		}
		t.RunAt = next
		return false, t.moveTo(RetryWait)
	}
	return false, Errorf(CodeInternal, "unknown attempt status %q", o.Status)
}

// MinDeferDelay is the shortest wait of a deferral (a target's 503 with
// x-task-retry: defer, a function's or worker's defer): a shorter one,
// 0 or a past date, waits this long.
const MinDeferDelay = time.Second

// pastMaxAge reports whether next is past t's maxAge. The sum saturates, so
// no stored maxAgeSeconds can overflow into "already past".
func (t *Task) pastMaxAge(q *Queue, next int64) bool {
	if q.MaxAgeSeconds <= 0 {
		return false
	}
	return next > SaturatingAddMs(t.CreatedAt, q.MaxAgeSeconds, 1000)
}

// SaturatingAddMs returns base + n×unit milliseconds, clamped to the int64
// range instead of wrapping.
func SaturatingAddMs(base, n, unit int64) int64 {
	if n > 0 && n > (math.MaxInt64-max(base, 0))/unit {
		return math.MaxInt64
	}
	if n < 0 && n < (math.MinInt64-min(base, 0))/unit {
		return math.MinInt64
	}
	return base + n*unit
}

// Extend lengthens a held lease to leaseSeconds from now.
func (t *Task) Extend(leaseID string, now int64, leaseSeconds int) error {
	if err := t.CheckLease(leaseID, now); err != nil {
		return err
	}
	t.LeaseExpiresAt = now + int64(leaseSeconds)*1000
	return nil
}

// Cancel stops a task that has not started or is waiting for a retry. A
// running task is left running (RUNNING_NOT_CANCELLABLE); a finished one
// answers NOT_CANCELLABLE.
func (t *Task) Cancel(now int64) error {
	switch t.State {
	case Running:
		v1 := t.State.V1(t.Pull) // running, or leased by a pull worker
		return Errorf(CodeRunningNotCancellable, "the task is %s; it is left %s", v1, v1)
	case Succeeded, Failed, Cancelled:
		return Errorf(CodeNotCancellable, "the task is %s and cannot be cancelled", t.State.V1(t.Pull))
	}
	t.FinishedAt = now
	return t.moveTo(Cancelled)
}

// Deletable refuses to remove a task whose attempt runs (RUNNING: a push
// attempt in flight or a pull lease held) — its outcome is on its way and
// would have no record to land on — with RUNNING_NOT_CANCELLABLE; any other
// task's record may be removed.
func (t *Task) Deletable() error {
	if t.State == Running {
		v1 := t.State.V1(t.Pull)
		return Errorf(CodeRunningNotCancellable, "the task is %s and cannot be deleted until its attempt ends; it is left %s", v1, v1)
	}
	return nil
}

// Retry re-queues a FAILED task with a fresh budget; anything else answers
// NOT_RETRYABLE.
func (t *Task) Retry(now int64) error {
	if t.State != Failed {
		return Errorf(CodeNotRetryable, "only a failed task can be retried; this one is %s", t.State.V1(t.Pull))
	}
	t.Attempt = 0
	t.RunAt = now
	t.FinishedAt = 0
	return t.moveTo(Pending)
}

// dueTime is the due time delay (seconds from now) or runAt (epoch ms; a
// past time means now) asks for, at most a year ahead; now for neither.
func dueTime(delay *float64, runAt *int64, now int64) (int64, error) {
	if delay != nil && runAt != nil {
		return 0, FieldErrorf(CodeInvalidArgument, "delay", "send delay or runAt, not both")
	}
	if delay != nil {
		d := *delay
		if !(d >= 0) || d > 365*86400 {
			return 0, FieldErrorf(CodeInvalidArgument, "delay", "must be 0–31536000 seconds")
		}
		return now + int64(d*1000), nil
	}
	if runAt != nil {
		if *runAt < 0 || *runAt > now+365*86400*1000 {
			return 0, FieldErrorf(CodeInvalidArgument, "runAt", "must be epoch milliseconds from 0 to a year from now (a time in the past means now)")
		}
		return max(*runAt, now), nil
	}
	return now, nil
}

// validPriority refuses a priority outside 0–MaxPriority.
func validPriority(p int) error {
	if p < 0 || p > MaxPriority {
		return FieldErrorf(CodeInvalidArgument, "priority", "must be 0–%d (higher is claimed first; 0 by default)", MaxPriority)
	}
	return nil
}

// Change is a change of a task's own fields after its add (the v1 API's
// PATCH of a task); nil fields stay as they are.
type Change struct {
	// Priority orders the task among its queue's due tasks whenever it
	// waits for a claim.
	Priority *int
	// Delay (seconds from now) or RunAt (epoch ms) reschedule a waiting
	// task, as an add's do.
	Delay *float64
	RunAt *int64
}

// Change applies c at now, all of it or, refused, none of it. A priority
// may change in any state: it orders the task whenever it waits for a
// claim — at once for a scheduled or retrying task, from its next retry
// for a running or leased one, after a retry for a failed one (a
// succeeded or cancelled task only keeps it on its record). A new due
// time applies to a scheduled or retrying task only (one in RETRY_WAIT
// stays there, waiting for the new time): a running or leased task's next
// wait is its backoff's, and a finished one waits for nothing, so both are
// refused NOT_RUNNABLE.
func (t *Task) Change(c Change, now int64) error {
	if c.Priority != nil {
		if err := validPriority(*c.Priority); err != nil {
			return err
		}
	}
	reschedule := c.Delay != nil || c.RunAt != nil
	runAt, err := dueTime(c.Delay, c.RunAt, now)
	if err != nil {
		return err
	}
	if reschedule && t.State != Pending && t.State != RetryWait {
		return Errorf(CodeNotRunnable, "the task is %s; only a scheduled or retrying task can be rescheduled", t.State.V1(t.Pull))
	}
	if c.Priority != nil {
		t.Priority = *c.Priority
	}
	if reschedule {
		t.RunAt = runAt
	}
	return nil
}

// RunNow makes a PENDING or RETRY_WAIT task due now. A running task is left
// as it is (it is already running); a finished one answers NOT_RUNNABLE.
func (t *Task) RunNow(now int64) error {
	switch t.State {
	case Pending:
		t.RunAt = now
		return nil
	case RetryWait:
		t.RunAt = now
		return t.moveTo(Pending)
	case Running:
		return nil
	}
	return Errorf(CodeNotRunnable, "the task is %s; only a scheduled or retrying task can be run now", t.State.V1(t.Pull))
}

// DeadLetter returns the copy of a FAILED task for the dead-letter queue dlq:
// same payload and params, no name, deadLetterOf set, source deadletter,
// and depth one more than t's, as every task another task causes. Past
// MaxDepth it returns nil and no copy is made: so a loop of dead-letter
// queues (which the store refuses to save, but concurrent changes could
// still close) ends, as a loop of task rules does.
func (t *Task) DeadLetter(dlq *Queue, now int64) *Task {
	if t.Depth+1 > MaxDepth {
		return nil
	}
	return &Task{
		InstanceID:   t.InstanceID,
		Queue:        dlq.Name,
		State:        Pending,
		Pull:         dlq.Mode == ModePull,
		MaxAttempts:  dlq.MaxAttempts,
		RunAt:        now,
		CreatedAt:    now,
		Source:       SourceDeadLetter,
		Depth:        t.Depth + 1,
		Params:       t.Params,
		DeadLetterOf: t.ID,
		Payload:      t.Payload,
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return CutUTF8(s, n) + fmt.Sprintf("… (%d bytes)", len(s))
}
