package deliver

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/errandhq/errand/internal/task"
)

func TestFunctionsOutcomes(t *testing.T) {
	var f Functions
	ok := func(context.Context, *task.Task) (json.RawMessage, error) { return json.RawMessage(`{"a":1}`), nil }
	for _, name := range []string{"", "nogroup", "a/b/c"} {
		if err := f.Handle(name, ok); !task.IsCode(err, task.CodeInvalidArgument) {
			t.Fatalf("Handle(%q) = %v, want INVALID_ARGUMENT", name, err)
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
	if r := run("app/defer", bg); !r.Defer || r.DeferDelay != time.Minute || r.OutcomeFor(true).Status != task.AttemptDeferred || r.OutcomeFor(false).Status != task.AttemptFailed {
		t.Fatalf("defer: %+v", r)
	}
	ctx, cancel := context.WithCancel(bg)
	cancel()
	if r := run("app/late", ctx); r.Outcome.Status != task.AttemptFailed || r.Outcome.Error != "deadline exceeded" {
		t.Fatalf("past the deadline: %+v", r)
	}
	if r := run("app/none", bg); r.Outcome.Status != task.AttemptFailed || !strings.Contains(r.Outcome.Error, "no worker serves") {
		t.Fatalf("unserved: %+v", r)
	}
}
