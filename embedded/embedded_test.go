package embedded

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/errandhq/errand/client"
	"github.com/errandhq/errand/errandapi"

	"github.com/errandhq/errand/internal/clock"
	"github.com/errandhq/errand/internal/testkit"
	"github.com/errandhq/errand/internal/testkit/stores"
)

func TestMain(m *testing.M) { testkit.Main(m, "embedded") }

// t0 is where the fake clock starts.
var t0 = time.UnixMilli(1_790_000_000_000)

// open starts an embedded engine in dev mode on a fresh store of kind
// ("sqlite" opens a file through Options.Store, as a program would;
// "postgres" a fresh database) with a fake clock.
func open(t *testing.T, kind string) (*Engine, *clock.Fake) {
	t.Helper()
	fc := clock.NewFake(t0)
	o := Options{Dev: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), clock: fc, outcomes: true}
	if kind == "sqlite" {
		o.Store = "sqlite://" + filepath.Join(t.TempDir(), "sub", "errand.db")
	} else {
		o.st = stores.Open(t, kind)
	}
	// The engine outlives the context it was opened with.
	octx, cancel := context.WithCancel(context.Background())
	e, err := Open(octx, o)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Error(err)
		}
	})
	return e, fc
}

// eachStore runs fn on every store kind this machine has.
func eachStore(t *testing.T, fn func(t *testing.T, kind string)) {
	for _, kind := range stores.Kinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			fn(t, kind)
		})
	}
}

// waitState reads the task until it reaches the v1 state, and reads it
// again only after the engine stores the next attempt outcome (a test
// signal), never on a timer.
func waitState(t *testing.T, e *Engine, id, state string) *Task {
	t.Helper()
	for {
		seen := e.outcomes.Count()
		tk, err := e.Get(context.Background(), "jobs", id)
		if err != nil {
			t.Fatal(err)
		}
		if tk.State == state {
			return tk
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err = e.outcomes.After(ctx, seen)
		cancel()
		if err != nil {
			t.Fatalf("task %s is %s, want %s (last error %q)", id, tk.State, state, tk.LastError)
		}
	}
}

func add(t *testing.T, e *Engine, queue string, tasks ...NewTask) []string {
	t.Helper()
	res, err := e.Add(context.Background(), "jobs", queue, tasks...)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("add: %v", r.Err)
		}
		ids = append(ids, r.ID)
	}
	return ids
}

func TestFunctionServesPushQueue(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, kind string) {
		e, _ := open(t, kind)
		ctx := context.Background()
		seen := make(chan string, 10)
		if err := e.Handle("app/echo", func(ctx context.Context, tk *Task) (json.RawMessage, error) {
			if _, ok := ctx.Deadline(); !ok {
				return nil, errors.New("no deadline on the attempt's context")
			}
			seen <- string(tk.Payload)
			return json.RawMessage(`{"echo":` + string(tk.Payload) + `}`), nil
		}); err != nil {
			t.Fatal(err)
		}
		if err := e.CreateQueue(ctx, "jobs", "echo", QueueOptions{Function: "app/echo"}); err != nil {
			t.Fatal(err)
		}
		ids := add(t, e, "echo", NewTask{Payload: json.RawMessage(`{"n":1}`)}, NewTask{Payload: json.RawMessage(`[2]`), Name: "two"})
		for _, id := range ids {
			tk := waitState(t, e, id, "succeeded")
			if !strings.HasPrefix(string(tk.Result), `{"echo":`) || tk.Attempt != 1 {
				t.Fatalf("task %s: result %s attempt %d", id, tk.Result, tk.Attempt)
			}
		}
		got := map[string]bool{<-seen: true, <-seen: true}
		if !got[`{"n":1}`] || !got[`[2]`] {
			t.Fatalf("handler saw %v", got)
		}
	})
}

func TestFunctionFailureRetriesWithBackoff(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, kind string) {
		e, fc := open(t, kind)
		ctx := context.Background()
		var calls atomic.Int32
		if err := e.Handle("app/flaky", func(ctx context.Context, tk *Task) (json.RawMessage, error) {
			if calls.Add(1) == 1 {
				return nil, errors.New("first try fails")
			}
			return nil, nil
		}); err != nil {
			t.Fatal(err)
		}
		if err := e.CreateQueue(ctx, "jobs", "flaky", QueueOptions{Function: "app/flaky", MinBackoff: 5 * time.Second}); err != nil {
			t.Fatal(err)
		}
		id := add(t, e, "flaky", NewTask{})[0]
		tk := waitState(t, e, id, "retrying")
		if tk.LastError != "first try fails" || !tk.RunAt.Equal(t0.Add(5*time.Second)) {
			t.Fatalf("after the failure: lastError %q runAt %v, want the error and t0+5s", tk.LastError, tk.RunAt)
		}
		fc.Advance(5 * time.Second)
		tk = waitState(t, e, id, "succeeded")
		if tk.Attempt != 2 || calls.Load() != 2 {
			t.Fatalf("attempt %d, calls %d; want 2, 2", tk.Attempt, calls.Load())
		}
	})
}

func TestFunctionPanicDeferAndMissingHandler(t *testing.T) {
	t.Parallel()
	e, fc := open(t, "sqlite")
	ctx := context.Background()
	var deferred atomic.Bool
	must(t, e.Handle("app/panics", func(context.Context, *Task) (json.RawMessage, error) { panic("boom") }))
	must(t, e.Handle("app/defers", func(context.Context, *Task) (json.RawMessage, error) {
		if deferred.CompareAndSwap(false, true) {
			return nil, Defer(30 * time.Second)
		}
		return nil, nil
	}))
	must(t, e.CreateQueue(ctx, "jobs", "q", QueueOptions{Function: "app/panics", MaxAttempts: 1}))
	panicked := add(t, e, "q", NewTask{})[0]
	missing := add(t, e, "q", NewTask{Function: "app/nobody"})[0]
	deferID := add(t, e, "q", NewTask{Function: "app/defers"})[0]

	tk := waitState(t, e, panicked, "failed")
	// The recorded stack starts at the handler that panicked (line 174).
	if !strings.HasPrefix(tk.LastError, "function \"app/panics\" panicked: boom\n") ||
		!strings.Contains(strings.Split(tk.LastError, "\n")[2], "embedded_test.go:174") {
		t.Fatalf("panic recorded as %q", tk.LastError)
	}
	tk = waitState(t, e, deferID, "retrying")
	if tk.Attempt != 0 || !tk.RunAt.Equal(t0.Add(30*time.Second)) {
		t.Fatalf("deferred: attempt %d runAt %v; want 0 (not counted) and t0+30s", tk.Attempt, tk.RunAt)
	}
	fc.Advance(30 * time.Second)
	waitState(t, e, deferID, "succeeded")
	// A function nobody serves is never claimed: it waits, no attempt
	// used, saying why, until a handler comes.
	if tk, err := e.Get(ctx, "jobs", missing); err != nil || tk.State != "scheduled" || tk.Attempt != 0 ||
		!strings.HasPrefix(tk.LastError, "no worker serves app/nobody") {
		t.Fatalf("unserved task: %+v %v; want scheduled, attempt 0, lastError no worker serves app/nobody", tk, err)
	}
	must(t, e.Handle("app/nobody", func(context.Context, *Task) (json.RawMessage, error) { return json.RawMessage(`1`), nil }))
	if tk := waitState(t, e, missing, "succeeded"); tk.Attempt != 1 {
		t.Fatalf("served at last: attempt %d, want 1", tk.Attempt)
	}
}

func TestLeaseAndAckMany(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, kind string) {
		e, fc := open(t, kind)
		ctx := context.Background()
		must(t, e.CreateQueue(ctx, "jobs", "work", QueueOptions{Pull: true}))
		ids := add(t, e, "work", NewTask{Payload: json.RawMessage(`1`)}, NewTask{Payload: json.RawMessage(`2`)})
		got, err := e.Lease(ctx, "jobs", "work", 10, time.Minute, 0)
		if err != nil || len(got) != 2 {
			t.Fatalf("Lease: %d tasks, %v", len(got), err)
		}
		if got[0].State != "leased" || got[0].LeaseID == "" || !got[0].LeaseExpiresAt.Equal(t0.Add(time.Minute)) {
			t.Fatalf("leased task: %+v", got[0])
		}
		acks := []Ack{{ID: got[0].ID, LeaseID: got[0].LeaseID, Result: json.RawMessage(`"ok"`)}, {ID: got[1].ID, LeaseID: "wrong"}}
		errs, err := e.AckMany(ctx, "jobs", "work", acks)
		if err != nil {
			t.Fatal(err)
		}
		var pe *Error
		if errs[0] != nil || !errors.As(errs[1], &pe) || pe.Code != "LEASE_LOST" {
			t.Fatalf("AckMany errors: %v", errs)
		}
		if tk := waitState(t, e, got[0].ID, "succeeded"); string(tk.Result) != `"ok"` {
			t.Fatalf("result %s", tk.Result)
		}
		must(t, e.Release(ctx, "jobs", got[1].ID, got[1].LeaseID, "", 0))
		waitState(t, e, got[1].ID, "retrying")
		// With an error and a delay: a failed attempt, retried after the
		// delay rather than the queue's backoff.
		again, err := e.Lease(ctx, "jobs", "work", 1, time.Minute, 0)
		if err != nil || len(again) != 1 {
			t.Fatalf("Lease again: %d tasks, %v", len(again), err)
		}
		must(t, e.Release(ctx, "jobs", again[0].ID, again[0].LeaseID, "upstream busy", time.Hour))
		if tk := waitState(t, e, again[0].ID, "retrying"); !tk.RunAt.Equal(fc.Now().Add(time.Hour)) || tk.Attempt != 1 {
			t.Fatalf("released with an error and an hour: %+v; want retrying at now+1h, attempt 1", tk)
		}
		_ = ids
	})
}

func TestErrorsAreTyped(t *testing.T) {
	t.Parallel()
	e, _ := open(t, "sqlite")
	ctx := context.Background()
	must(t, e.CreateQueue(ctx, "jobs", "q", QueueOptions{Pull: true}))
	var pe *Error
	if err := e.CreateQueue(ctx, "jobs", "q", QueueOptions{Pull: true}); !errors.As(err, &pe) || pe.Code != "QUEUE_EXISTS" {
		t.Fatalf("second CreateQueue: %v", err)
	}
	if err := e.Handle("no-group", func(context.Context, *Task) (json.RawMessage, error) { return nil, nil }); !errors.As(err, &pe) || pe.Code != "INVALID_ARGUMENT" {
		t.Fatalf("Handle(bad name): %v", err)
	}
	if _, err := e.Add(ctx, "jobs", "q", NewTask{Payload: json.RawMessage(`{bad`)}); !errors.As(err, &pe) || pe.Code != "INVALID_ARGUMENT" {
		t.Fatalf("Add(bad JSON): %v", err)
	}
	res, err := e.Add(ctx, "jobs", "q", NewTask{Name: "once"}, NewTask{Name: "once"})
	if err != nil || res[0].Err != nil || !errors.As(res[1].Err, &pe) || pe.Code != "TASK_EXISTS" || res[1].ID != res[0].ID {
		t.Fatalf("duplicate name: %+v %v", res, err)
	}
}

func TestHTTPHandlerSeesTheSameTasks(t *testing.T) {
	t.Parallel()
	e, _ := open(t, "sqlite")
	ctx := context.Background()
	must(t, e.CreateQueue(ctx, "jobs", "q", QueueOptions{Pull: true}))
	id := add(t, e, "q", NewTask{Payload: json.RawMessage(`{"x":1}`)})[0]
	srv := httptest.NewServer(e.HTTPHandler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/v1/tasks/jobs/tasks/" + id)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Task struct {
			ID      string          `json:"id"`
			State   string          `json:"state"`
			Payload json.RawMessage `json:"payload"`
		} `json:"task"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET task: %d %v", resp.StatusCode, err)
	}
	if got := body.Task; got.ID != id || got.State != "scheduled" || string(got.Payload) != `{"x":1}` {
		t.Fatalf("GET task: %+v", got)
	}
}

// TestHTTPHandlerAfterClose: the handler of a closed engine answers 503
// UNAVAILABLE (clients retry elsewhere), not the closed store's 500.
func TestHTTPHandlerAfterClose(t *testing.T) {
	t.Parallel()
	e, _ := open(t, "sqlite")
	srv := httptest.NewServer(e.HTTPHandler())
	defer srv.Close()
	must(t, e.Close())
	resp, err := http.Get(srv.URL + "/v1/tasks/jobs/queues")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body errandapi.ErrorResponse
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || resp.StatusCode != http.StatusServiceUnavailable || body.Error.Code != errandapi.CodeUnavailable {
		t.Fatalf("after Close: %d %+v %v; want 503 UNAVAILABLE", resp.StatusCode, body, err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestQueueCountsAndPause(t *testing.T) {
	t.Parallel()
	e, _ := open(t, "sqlite")
	ctx := context.Background()
	served := make(chan struct{}, 4)
	must(t, e.Handle("app/x", func(context.Context, *Task) (json.RawMessage, error) {
		served <- struct{}{}
		return nil, nil
	}))
	must(t, e.CreateQueue(ctx, "jobs", "q", QueueOptions{Function: "app/x", Paused: true}))
	ids := add(t, e, "q", NewTask{}, NewTask{})
	q, err := e.Queue(ctx, "jobs", "q")
	if err != nil || !q.Paused || q.Counts["scheduled"] != 2 || q.Capped["scheduled"] {
		t.Fatalf("paused queue: %+v %v", q, err)
	}
	must(t, e.SetPaused(ctx, "jobs", "q", false))
	for _, id := range ids {
		waitState(t, e, id, "succeeded")
	}
	if q, _ = e.Queue(ctx, "jobs", "q"); q.Paused || q.Counts["succeeded"] != 2 || q.Counts["scheduled"] != 0 {
		t.Fatalf("resumed queue: %+v", q)
	}
	if len(served) != 2 {
		t.Fatalf("handler ran %d times, want 2", len(served))
	}
}

// TestErrorsAreTheClients: the engine's refusals are the client SDK's
// errors: errors.Is matches the client's sentinels, TASK_EXISTS carries
// the existing id, and the same refusal over HTTPHandler (through the
// client) is an equal *Error.
func TestErrorsAreTheClients(t *testing.T) {
	e, _ := open(t, "sqlite")
	ctx := context.Background()
	srv := httptest.NewServer(e.HTTPHandler())
	defer srv.Close()
	hc := &http.Client{Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	c, err := client.New(srv.URL, client.Options{HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	must(t, e.CreateQueue(ctx, "jobs", "q", QueueOptions{Pull: true}))
	res, err := e.Add(ctx, "jobs", "q", NewTask{Name: "once"}, NewTask{Name: "once"})
	if err != nil || !errors.Is(res[1].Err, client.ErrTaskExists) || res[1].Err.(*client.Error).ID != res[0].ID {
		t.Fatalf("duplicate name: %+v %v", res, err)
	}
	_, overHTTP := c.AddTask(ctx, "jobs", "q", errandapi.NewTask{Name: "once"})
	if !reflect.DeepEqual(res[1].Err, overHTTP) {
		t.Fatalf("TASK_EXISTS in process %+v, over HTTP %+v", res[1].Err, overHTTP)
	}
	inProc := e.CreateQueue(ctx, "jobs", "q", QueueOptions{Pull: true})
	_, overHTTP = c.CreateQueue(ctx, "jobs", "q", errandapi.QueueRequest{Mode: new(errandapi.ModePull)})
	if !errors.Is(inProc, client.ErrQueueExists) || !reflect.DeepEqual(inProc, overHTTP) {
		t.Fatalf("QUEUE_EXISTS in process %+v, over HTTP %+v", inProc, overHTTP)
	}
	_, inProc = e.Get(ctx, "jobs", "0000000000000000000000")
	_, overHTTP = c.GetTask(ctx, "jobs", "0000000000000000000000")
	if !errors.Is(inProc, client.ErrNotFound) || !reflect.DeepEqual(inProc, overHTTP) {
		t.Fatalf("NOT_FOUND in process %+v, over HTTP %+v", inProc, overHTTP)
	}
	errs, err := e.AckMany(ctx, "jobs", "q", []Ack{{ID: res[0].ID, LeaseID: "nope"}})
	if err != nil || !errors.Is(errs[0], client.ErrLeaseLost) || errors.Is(errs[0], client.ErrNotFound) {
		t.Fatalf("ack of a task not leased: %v %v", errs, err)
	}
}
