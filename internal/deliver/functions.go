package deliver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/task"
)

// FunctionHandler serves one function target inside this process. It gets
// the claimed task (read it, do not keep it), and a ctx that ends at the
// attempt's deadline (or sooner, when the engine stops). A nil error is a
// successful attempt whose result is the returned JSON (nil for none), even
// when ctx ended first; an error is a failed attempt that is retried with
// backoff, unless it is a *DeferError, which asks to be tried again later
// without using an attempt.
type FunctionHandler func(ctx context.Context, t *task.Task) (json.RawMessage, error)

// DeferError asks for the attempt to be tried again after Delay without
// using an attempt (a function's form of 503 + x-task-retry: defer).
type DeferError struct{ Delay time.Duration }

// Error implements error.
func (e *DeferError) Error() string { return "deferred for " + e.Delay.String() }

// Functions delivers function targets (`{"function": "group/name"}`) to
// handlers registered in this process: the in-process worker of an errand
// engine embedded in a Go program. Its functions are offered to the
// dispatcher's claim (Free), so a task whose function no handler here
// serves is not claimed by this process: it waits as scheduled, no attempt
// used, until a handler is registered or a worker serves it. Deliver of an
// unserved function (not registered here) fails the attempt.
type Functions struct {
	mu       sync.RWMutex
	handlers map[string]FunctionHandler
}

// Handle registers h for the function name ("group/name"), replacing any
// handler it had.
func (f *Functions) Handle(name string, h FunctionHandler) error {
	if err := task.ValidateFunctionName(name, "function"); err != nil {
		return err
	}
	if h == nil {
		return task.FieldErrorf(task.CodeInvalidArgument, "handler", "must not be nil")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.handlers == nil {
		f.handlers = map[string]FunctionHandler{}
	}
	f.handlers[name] = h
	return nil
}

// Deliver implements Deliverer.
func (f *Functions) Deliver(ctx context.Context, r *Request) (res Result) {
	f.mu.RLock()
	h := f.handlers[r.Target.Function]
	f.mu.RUnlock()
	if h == nil {
		return failed(0, fmt.Sprintf("no worker serves function %q here", r.Target.Function))
	}
	// The handler's ctx ends at the attempt's deadline. The dispatcher's
	// ctx runs lateCap longer (a late webhook's answer is still recorded);
	// a handler is told when its time is up. The engine hands the attempt's
	// context in the request (one timer for a claim's attempts of one
	// deadline); without it, the time left is read in the engine's clock
	// (DeadlineAt and Now), so a fake clock's is honoured.
	switch {
	case r.AttemptCtx != nil:
		ctx = r.AttemptCtx
	case r.Task != nil && r.Task.DeadlineAt != 0:
		now := r.Now
		if now.IsZero() {
			now = time.Now()
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(r.Task.DeadlineAt-now.UnixMilli())*time.Millisecond)
		defer cancel()
	}
	start := time.Now()
	defer func() {
		if p := recover(); p != nil {
			res = failed(0, errandapi.PanicError(r.Target.Function, p, debug.Stack()))
		}
		res.Duration = time.Since(start)
	}()
	out, err := h(ctx, r.Task)
	var de *DeferError
	switch {
	case errors.As(err, &de):
		return Result{Outcome: task.Outcome{Status: task.AttemptFailed, Error: de.Error()}, Defer: true, DeferDelay: de.Delay}
	case err != nil:
		return failed(0, task.Recorded(err))
	}
	// A nil error is a success even when ctx ended first (the engine
	// closing, or the deadline): the handler did its work. The dispatcher
	// records an answer past the deadline as timed out, and keeps a
	// success at shutdown.
	o := task.Outcome{Status: task.AttemptSucceeded}
	if len(out) > 0 && !task.IsJSONNull(out) {
		if verr := task.ValidateJSONBytes(out, "result"); verr != nil {
			return failed(0, "function result: "+verr.Error())
		}
		o.Result = out
	}
	return Result{Outcome: o}
}
