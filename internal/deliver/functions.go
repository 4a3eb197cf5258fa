package deliver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/errandhq/errand/internal/task"
)

// FunctionHandler serves one function target inside this process. It gets
// the claimed task (read it, do not keep it) and the attempt's deadline in
// ctx. A nil error is a successful attempt whose result is the returned
// JSON (nil for none); an error is a failed attempt that is retried with
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
// engine embedded in a Go program. A function no handler serves fails its
// attempt, which is retried with backoff like any failure, so a task waits
// out a deploy in which its worker is briefly missing.
type Functions struct {
	mu       sync.RWMutex
	handlers map[string]FunctionHandler
}

// Handle registers h for the function name ("group/name"), replacing any
// handler it had.
func (f *Functions) Handle(name string, h FunctionHandler) error {
	if err := task.ValidateTarget(&task.Target{Function: name}, "function", task.URLRules{}); err != nil {
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
	start := time.Now()
	defer func() {
		if p := recover(); p != nil {
			res = failed(0, fmt.Sprintf("function %q panicked: %v\n%s", r.Target.Function, p, firstLines(debug.Stack(), 8)))
		}
		res.Duration = time.Since(start)
	}()
	out, err := h(ctx, r.Task)
	var de *DeferError
	switch {
	case errors.As(err, &de):
		return Result{Outcome: task.Outcome{Status: task.AttemptFailed, Error: de.Error()}, Defer: true, DeferDelay: de.Delay}
	case err != nil:
		return failed(0, err.Error())
	case ctx.Err() != nil:
		return failed(0, "deadline exceeded")
	}
	o := task.Outcome{Status: task.AttemptSucceeded}
	if len(out) > 0 && !task.IsJSONNull(out) {
		if verr := task.ValidateJSONBytes(out, "result"); verr != nil {
			return failed(0, "function result: "+verr.Error())
		}
		o.Result = out
	}
	return Result{Outcome: o}
}

// firstLines returns the first n lines of b.
func firstLines(b []byte, n int) string {
	for i, c := range b {
		if c == '\n' {
			if n--; n == 0 {
				return string(b[:i])
			}
		}
	}
	return string(b)
}
