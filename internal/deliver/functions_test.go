package deliver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/errandhq/errand/internal/task"
)

func TestFunctionsOutcomes(t *testing.T) {
	var f Functions
	ok := func(context.Context, *task.Task) (json.RawMessage, error) { return json.RawMessage(`{"a":1}`), nil }
	for _, name := range []string{"", "nogroup", "a/b/c", "app/-x"} {
		// The message says plainly what a function name is.
		if err := f.Handle(name, ok); !task.IsCode(err, task.CodeInvalidArgument) ||
			err.Error() != `INVALID_ARGUMENT: function: must be GROUP/FUNCTION, e.g. app/send-receipt` {
			t.Fatalf("Handle(%q) = %v, want INVALID_ARGUMENT: function: must be GROUP/FUNCTION…", name, err)
		}
	}
	if err := f.Handle("app/x", nil); !task.IsCode(err, task.CodeInvalidArgument) {
		t.Fatalf("Handle(nil) = %v", err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(f.Handle("app/ok", ok))
	must(f.Handle("app/badjson", func(context.Context, *task.Task) (json.RawMessage, error) { return json.RawMessage(`{`), nil }))
	must(f.Handle("app/null", func(context.Context, *task.Task) (json.RawMessage, error) { return json.RawMessage(`null`), nil }))
	must(f.Handle("app/err", func(context.Context, *task.Task) (json.RawMessage, error) { return nil, errors.New("nope") }))
	// A store's error met inside (an operations job's): recorded without
	// the driver's words, which keys that read the attempt would see.
	must(f.Handle("app/store", func(context.Context, *task.Task) (json.RawMessage, error) {
		return nil, fmt.Errorf("export: %w", task.Unavailable("the store is unreachable; try again", errors.New("dial tcp 10.0.0.7:5432: refused")))
	}))
	must(f.Handle("app/defer", func(context.Context, *task.Task) (json.RawMessage, error) {
		return nil, &DeferError{Delay: time.Minute}
	}))
	must(f.Handle("app/late", func(ctx context.Context, _ *task.Task) (json.RawMessage, error) { <-ctx.Done(); return nil, nil }))

	run := func(fn string, ctx context.Context) Result {
		return f.Deliver(ctx, &Request{Task: &task.Task{ID: "t1"}, Target: task.Target{Function: fn}})
	}
	bg := context.Background()
	if r := run("app/ok", bg); r.Outcome.Status != task.AttemptSucceeded || string(r.Outcome.Result) != `{"a":1}` {
		t.Fatalf("ok: %+v", r)
	}
	if r := run("app/null", bg); r.Outcome.Status != task.AttemptSucceeded || r.Outcome.Result != nil {
		t.Fatalf("null result: %+v", r)
	}
	if r := run("app/badjson", bg); r.Outcome.Status != task.AttemptFailed || !strings.Contains(r.Outcome.Error, "function result") {
		t.Fatalf("bad JSON result: %+v", r)
	}
	if r := run("app/err", bg); r.Outcome.Status != task.AttemptFailed || r.Outcome.Error != "nope" {
		t.Fatalf("error: %+v", r)
	}
	if r := run("app/store", bg); r.Outcome.Error != "export: UNAVAILABLE: the store is unreachable; try again" {
		t.Fatalf("a store's error: %q", r.Outcome.Error)
	}
	if r := run("app/defer", bg); !r.Defer || r.DeferDelay != time.Minute || r.OutcomeFor(true).Status != task.AttemptDeferred || r.OutcomeFor(false).Status != task.AttemptFailed {
		t.Fatalf("defer: %+v", r)
	}
	ctx, cancel := context.WithCancel(bg)
	cancel()
	// A handler that returns nil after its ctx ended (the engine closing)
	// did its work: a success, recorded as one.
	if r := run("app/late", ctx); r.Outcome.Status != task.AttemptSucceeded {
		t.Fatalf("success after ctx ended: %+v", r)
	}
	if r := run("app/none", bg); r.Outcome.Status != task.AttemptFailed || !strings.Contains(r.Outcome.Error, "no worker serves") {
		t.Fatalf("unserved: %+v", r)
	}
}

// TestFunctionsCtxEndsAtDeadline: the handler's ctx ends at the attempt's
// deadline, read in the engine's clock (DeadlineAt less the request's Now,
// a time far from the real one here), not at the longer ctx the
// dispatcher gives the deliverer.
func TestFunctionsCtxEndsAtDeadline(t *testing.T) {
	var f Functions
	type seen struct {
		deadline time.Time
		ok       bool
		err      error
	}
	got := make(chan seen, 1)
	if err := f.Handle("app/slow", func(ctx context.Context, _ *task.Task) (json.RawMessage, error) {
		d, ok := ctx.Deadline()
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Second): // bounded: the deadline is 200 ms
		}
		got <- seen{d, ok, ctx.Err()}
		return nil, ctx.Err()
	}); err != nil {
		t.Fatal(err)
	}
	engineNow := time.UnixMilli(1_790_000_000_000) // a fake clock's time
	outer, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	before := time.Now()
	r := f.Deliver(outer, &Request{
		Task:   &task.Task{ID: "t1", DeadlineAt: engineNow.Add(200 * time.Millisecond).UnixMilli()},
		Target: task.Target{Function: "app/slow"}, Now: engineNow,
	})
	s := <-got
	if !s.ok || s.deadline.Before(before.Add(200*time.Millisecond)) || s.deadline.After(time.Now().Add(200*time.Millisecond)) {
		t.Fatalf("handler's deadline %v (set %v); want 200 ms after %v", s.deadline, s.ok, before)
	}
	if !errors.Is(s.err, context.DeadlineExceeded) || time.Since(before) < 200*time.Millisecond {
		t.Fatalf("ctx ended with %v after %v; want DeadlineExceeded at 200 ms", s.err, time.Since(before))
	}
	if r.Outcome.Status != task.AttemptFailed {
		t.Fatalf("outcome %+v; want the handler's error, a failure", r)
	}
}

// TestFunctionsRunsWithAttemptCtx: a request that carries the attempt's
// context (the engine's, shared by a claim's attempts of one deadline) runs
// its handler with that context, starting no timer of its own.
func TestFunctionsRunsWithAttemptCtx(t *testing.T) {
	var f Functions
	type key struct{}
	got := make(chan any, 1)
	if err := f.Handle("app/x", func(ctx context.Context, _ *task.Task) (json.RawMessage, error) {
		_, ok := ctx.Deadline()
		got <- [2]any{ctx.Value(key{}), ok}
		return nil, nil
	}); err != nil {
		t.Fatal(err)
	}
	attempt := context.WithValue(context.Background(), key{}, "attempt")
	r := f.Deliver(context.Background(), &Request{
		Task:   &task.Task{ID: "t1", DeadlineAt: time.Now().Add(time.Minute).UnixMilli()},
		Target: task.Target{Function: "app/x"}, AttemptCtx: attempt,
	})
	if s := <-got; s != ([2]any{"attempt", false}) {
		t.Fatalf("handler's ctx: value %v, deadline set %v; want the attempt's ctx as given (no deadline of its own)", s.([2]any)[0], s.([2]any)[1])
	}
	if r.Outcome.Status != task.AttemptSucceeded {
		t.Fatalf("outcome %+v", r)
	}
}
