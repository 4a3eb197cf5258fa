package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/errandhq/errand/client"
	"github.com/errandhq/errand/embedded"
	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/worker"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// node runs an errand engine (dev rules, a real SQLite file) behind a real
// HTTP server on loopback, and returns its URL and the engine.
func node(t *testing.T) (string, *embedded.Engine) {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	e, err := embedded.Open(context.Background(), embedded.Options{Store: "sqlite://" + filepath.Join(t.TempDir(), "errand.db"), Dev: true, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(e.HTTPHandler())
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		if err := e.Close(); err != nil {
			t.Error(err)
		}
	})
	return srv.URL, e
}

func wait(t *testing.T, e *embedded.Engine, id, state string) *embedded.Task {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		tk, err := e.Get(context.Background(), "jobs", id)
		if err != nil {
			t.Fatal(err)
		}
		if tk.State == state {
			return tk
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s is %s (%q), want %s", id, tk.State, tk.LastError, state)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestHandlerAnswers: a connected worker's handler answers are the
// attempt's outcome: a result, an error, a panic, Defer; the context ends
// at the attempt's deadline and carries the delivery token, so an add
// made with it gets depth 1 and source function.
func TestHandlerAnswers(t *testing.T) {
	url, e := node(t)
	ctx := context.Background()
	c, err := client.New(url, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.CreateQueue(ctx, "jobs", "q", embedded.QueueOptions{Function: "app/ok", MaxAttempts: 1}); err != nil {
		t.Fatal(err)
	}
	var deferred atomic.Bool
	w, err := worker.New(url, "jobs", "app", worker.Options{Slots: 4, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	w.Handle("ok", func(ctx context.Context, tk *worker.Task) (json.RawMessage, error) {
		dl, ok := ctx.Deadline()
		if !ok || !dl.Equal(tk.DeadlineAt) {
			return nil, errors.New("the context does not end at the attempt's deadline")
		}
		return json.RawMessage(`{"payload":` + string(tk.Payload) + `}`), nil
	})
	w.Handle("fail", func(context.Context, *worker.Task) (json.RawMessage, error) { return nil, errors.New("nope") })
	w.Handle("panic", func(context.Context, *worker.Task) (json.RawMessage, error) { panic("boom") })
	w.Handle("defer", func(context.Context, *worker.Task) (json.RawMessage, error) {
		if deferred.CompareAndSwap(false, true) {
			return nil, worker.Defer(10 * time.Millisecond)
		}
		return nil, nil
	})
	w.Handle("add", func(ctx context.Context, tk *worker.Task) (json.RawMessage, error) {
		res, err := c.AddTask(ctx, "jobs", "q", errandapi.NewTask{Payload: json.RawMessage(`"child"`)})
		if err != nil {
			return nil, err
		}
		return json.Marshal(res.ID)
	})
	rctx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- w.Run(rctx) }()
	defer func() {
		stop()
		if err := <-ran; err != nil {
			t.Error(err)
		}
	}()

	add := func(fn string) string {
		t.Helper()
		res, err := e.Add(ctx, "jobs", "q", embedded.NewTask{Function: fn, Payload: json.RawMessage(`7`)})
		if err != nil || res[0].Err != nil {
			t.Fatal(err, res)
		}
		return res[0].ID
	}
	if tk := wait(t, e, add("app/ok"), "succeeded"); string(tk.Result) != `{"payload":7}` {
		t.Fatalf("result %s", tk.Result)
	}
	if tk := wait(t, e, add("app/fail"), "failed"); tk.LastError != "nope" {
		t.Fatalf("error %q", tk.LastError)
	}
	if tk := wait(t, e, add("app/panic"), "failed"); !strings.Contains(tk.LastError, `function "panic" panicked: boom`) {
		t.Fatalf("panic recorded as %q", tk.LastError)
	}
	if tk := wait(t, e, add("app/defer"), "succeeded"); tk.Attempt != 1 {
		t.Fatalf("deferred then done: attempt %d, want 1 (the deferral is not counted)", tk.Attempt)
	}
	parent := wait(t, e, add("app/add"), "succeeded")
	var child string
	if err := json.Unmarshal(parent.Result, &child); err != nil {
		t.Fatal(err)
	}
	if tk := wait(t, e, child, "succeeded"); tk.Depth != 1 || tk.Source != "function" {
		t.Fatalf("a handler's add: depth %d source %s; want 1, function", tk.Depth, tk.Source)
	}
}

// TestRunRefusedHello: a hello the node refuses ends Run with the v1
// error (reconnecting would not fix it).
func TestRunRefusedHello(t *testing.T) {
	url, _ := node(t)
	w, err := worker.New(url, "jobs", "app", worker.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	w.Handle("Not A Name", func(context.Context, *worker.Task) (json.RawMessage, error) { return nil, nil })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err = w.Run(ctx)
	var ce *worker.CloseError
	if !errors.As(err, &ce) || ce.Code != errandapi.CodeInvalidArgument || !strings.Contains(ce.Message, "functions[0]") {
		t.Fatalf("Run with an invalid name: %v", err)
	}
}

// TestRunDrains: when Run's context ends, a running handler finishes and
// its answer is recorded before Run returns nil.
func TestRunDrains(t *testing.T) {
	url, e := node(t)
	ctx := context.Background()
	if err := e.CreateQueue(ctx, "jobs", "q", embedded.QueueOptions{Function: "app/slow"}); err != nil {
		t.Fatal(err)
	}
	started, release := make(chan struct{}), make(chan struct{})
	w, err := worker.New(url, "jobs", "app", worker.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	w.Handle("slow", func(ctx context.Context, tk *worker.Task) (json.RawMessage, error) {
		close(started)
		<-release
		return json.RawMessage(`"finished"`), nil
	})
	rctx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- w.Run(rctx) }()
	res, err := e.Add(ctx, "jobs", "q", embedded.NewTask{})
	if err != nil {
		t.Fatal(err)
	}
	<-started
	stop()
	select {
	case err := <-ran:
		t.Fatalf("Run returned %v with a handler still running", err)
	default:
	}
	close(release)
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
	if tk := wait(t, e, res[0].ID, "succeeded"); string(tk.Result) != `"finished"` || tk.Attempt != 1 {
		t.Fatalf("drained task: %+v", tk)
	}
}
