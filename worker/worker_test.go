package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"go.uber.org/goleak"

	"github.com/errandhq/errand/client"
	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/auth"
	"github.com/errandhq/errand/internal/clock"
	"github.com/errandhq/errand/internal/engine"
	inode "github.com/errandhq/errand/internal/node"
	"github.com/errandhq/errand/internal/testkit/stores"
	"github.com/errandhq/errand/worker"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// node runs an errand node (dev rules, a real SQLite file) behind a real
// HTTP server on loopback, and returns its URL, a client of it and the
// engine's outcome signal.
func node(t *testing.T) (string, *client.Client, *engine.OutcomeWatch) {
	t.Helper()
	return nodeOn(t, nil)
}

// nodeOn is node on clk (nil for the real clock).
func nodeOn(t testing.TB, clk clock.Clock) (string, *client.Client, *engine.OutcomeWatch) {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	st := stores.Open(t, "sqlite")
	n := inode.New(inode.Config{Store: st, Clock: clk, Logger: quiet, Dev: true})
	outcomes := engine.WatchOutcomes(n.Engine)
	if err := n.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(n.Handler(inode.HandlerConfig{Auth: auth.Dev{}}))
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		n.Close()
		if err := st.Close(); err != nil {
			t.Error(err)
		}
	})
	c, err := client.New(srv.URL, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return srv.URL, c, outcomes
}

// wait reads the task until it reaches the v1 state, and reads it again
// only after the engine stores the next attempt outcome (a test signal),
// never on a timer; it fails when the state is not reached within 10 s.
func wait(t *testing.T, c *client.Client, outcomes *engine.OutcomeWatch, id string, state errandapi.State) *errandapi.Task {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		seen := outcomes.Count()
		tk, err := c.GetTask(context.Background(), "jobs", id)
		if err != nil {
			t.Fatal(err)
		}
		if tk.State == state {
			return tk
		}
		if _, err := outcomes.After(ctx, seen); err != nil {
			t.Fatalf("task %s is %s (%q), want %s", id, tk.State, lastError(tk), state)
		}
	}
}

// lastError is the task's last error, "" for none.
func lastError(tk *errandapi.Task) string {
	if tk.LastError == nil {
		return ""
	}
	return *tk.LastError
}

// queue creates the queue name of jobs, whose tasks go to function.
func queue(t *testing.T, c *client.Client, name, function string, maxAttempts int) {
	t.Helper()
	req := errandapi.QueueRequest{Target: errandapi.Value(errandapi.Target{Function: function})}
	if maxAttempts > 0 {
		req.MaxAttempts = &maxAttempts
	}
	if _, err := c.CreateQueue(context.Background(), "jobs", name, req); err != nil {
		t.Fatal(err)
	}
}

// TestHandlerAnswers: a connected worker's handler answers are the
// attempt's outcome: a result, an error, a panic, Defer; the context ends
// at the attempt's deadline and carries the delivery token, so an add
// made with it gets depth 1 and source function.
func TestHandlerAnswers(t *testing.T) {
	url, c, outcomes := node(t)
	ctx := context.Background()
	queue(t, c, "q", "app/ok", 1)
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
	// Past the frame's bound: failed by the worker, not sent (which would
	// end the connection and every attempt on it).
	w.Handle("big", func(context.Context, *worker.Task) (json.RawMessage, error) {
		return json.RawMessage(`"` + strings.Repeat("x", 300_000) + `"`), nil
	})
	w.Handle("longerr", func(context.Context, *worker.Task) (json.RawMessage, error) {
		return nil, errors.New(strings.Repeat("e", 300_000))
	})
	w.Handle("panic", func(context.Context, *worker.Task) (json.RawMessage, error) { panic("boom") })
	// Within the bound as the handler made it, and on the wire: a frame does
	// not escape <, > and & (six bytes each).
	w.Handle("angles", func(context.Context, *worker.Task) (json.RawMessage, error) {
		return json.RawMessage(`"` + strings.Repeat("<&>", 20_000) + `"`), nil
	})
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
	runWorker(t, w)

	add := func(fn string) string {
		t.Helper()
		res, err := c.AddTask(ctx, "jobs", "q", errandapi.NewTask{Target: &errandapi.Target{Function: fn}, Payload: json.RawMessage(`7`)})
		if err != nil {
			t.Fatal(err)
		}
		return res.ID
	}
	succeeded, failed := errandapi.StateSucceeded, errandapi.StateFailed
	if tk := wait(t, c, outcomes, add("app/ok"), succeeded); string(tk.Result) != `{"payload":7}` {
		t.Fatalf("result %s", tk.Result)
	}
	if tk := wait(t, c, outcomes, add("app/fail"), failed); lastError(tk) != "nope" {
		t.Fatalf("error %q", lastError(tk))
	}
	if tk := wait(t, c, outcomes, add("app/big"), failed); !strings.Contains(lastError(tk), "a result is at most 65536 bytes") {
		t.Fatalf("a 300 KB result: %q", lastError(tk))
	}
	if tk := wait(t, c, outcomes, add("app/longerr"), failed); !strings.HasPrefix(lastError(tk), "eeee") || strings.Contains(lastError(tk), "disconnected") {
		t.Fatalf("a 300 KB error: %q", lastError(tk))
	}
	// The recorded stack starts at the handler that panicked (line 135).
	if tk := wait(t, c, outcomes, add("app/panic"), failed); !strings.HasPrefix(lastError(tk), "function \"panic\" panicked: boom\n") ||
		!strings.Contains(strings.Split(lastError(tk), "\n")[2], "worker_test.go:135") {
		t.Fatalf("panic recorded as %q", lastError(tk))
	}
	if tk, s := wait(t, c, outcomes, add("app/angles"), succeeded), ""; json.Unmarshal(tk.Result, &s) != nil || s != strings.Repeat("<&>", 20_000) {
		t.Fatalf("a 60 KB result of <&>: %.40q", tk.Result)
	}
	if tk := wait(t, c, outcomes, add("app/defer"), succeeded); tk.Attempt != 1 {
		t.Fatalf("deferred then done: attempt %d, want 1 (the deferral is not counted)", tk.Attempt)
	}
	parent := wait(t, c, outcomes, add("app/add"), succeeded)
	var child string
	if err := json.Unmarshal(parent.Result, &child); err != nil {
		t.Fatal(err)
	}
	if tk := wait(t, c, outcomes, child, succeeded); tk.Depth != 1 || tk.Source != "function" {
		t.Fatalf("a handler's add: depth %d source %s; want 1, function", tk.Depth, tk.Source)
	}
}

// runWorker runs w until the test ends, and fails the test if Run does not
// end cleanly then.
func runWorker(t *testing.T, w *worker.Worker) {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- w.Run(ctx) }()
	t.Cleanup(func() {
		stop()
		if err := <-ran; err != nil {
			t.Error(err)
		}
	})
}

// TestRunRefusesABadFunctionName: a function name the node would refuse
// ends Run before it connects, with the whole reason (not the node's close
// reason, cut to 123 bytes) naming the function as given.
func TestRunRefusesABadFunctionName(t *testing.T) {
	url, _, _ := node(t)
	w, err := worker.New(url, "jobs", "app", worker.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	w.Handle("ok", func(context.Context, *worker.Task) (json.RawMessage, error) { return nil, nil })
	w.Handle("Not A Name", func(context.Context, *worker.Task) (json.RawMessage, error) { return nil, nil })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err = w.Run(ctx)
	const want = `function "Not A Name": may hold only letters, digits, '-' and '_', and must start with a letter or digit`
	var ce *worker.CloseError
	if errors.As(err, &ce) || !errors.Is(err, errandapi.ErrInvalidArgument) || !strings.HasSuffix(err.Error(), want) {
		t.Fatalf("Run with an invalid name: %v; want INVALID_ARGUMENT ending %q, before connecting", err, want)
	}
}

// TestNewRefusesBadNames: an instance or group name the node would refuse
// is INVALID_ARGUMENT from New, naming the field and the name as given
// (not URL-escaped, and not a NOT_FOUND from the node).
func TestNewRefusesBadNames(t *testing.T) {
	for _, c := range []struct{ instance, group, want string }{
		{"bad inst", "app", `instance "bad inst": may hold only letters, digits, '-' and '_', and must start with a letter or digit`},
		{"jobs", "-app", `group "-app": may hold only letters, digits, '-' and '_', and must start with a letter or digit`},
		{"", "app", `instance "": must be 1–100 characters`},
		{"jobs", strings.Repeat("g", 101), `group "` + strings.Repeat("g", 101) + `": must be 1–100 characters`},
	} {
		_, err := worker.New("http://127.0.0.1:9", c.instance, c.group, worker.Options{})
		if !errors.Is(err, errandapi.ErrInvalidArgument) || !strings.HasSuffix(err.Error(), c.want) || strings.Contains(err.Error(), "%") {
			t.Errorf("New(%q, %q): %v; want INVALID_ARGUMENT ending %q", c.instance, c.group, err, c.want)
		}
	}
}

// TestNewRefusesAKeyWithANewline: a key with its file's newline is refused
// by New; it made Run retry for ever ("invalid header field value").
func TestNewRefusesAKeyWithANewline(t *testing.T) {
	_, err := worker.New("http://127.0.0.1:9", "jobs", "app", worker.Options{APIKey: "errk_abc\n"})
	if !errors.Is(err, errandapi.ErrInvalidArgument) || !strings.Contains(err.Error(), "worker: INVALID_ARGUMENT: APIKey holds whitespace") {
		t.Fatalf("New with a key ending in a newline: %v", err)
	}
}

// TestCloseReasonCutAtAWord: a close reason the node had to cut to 123
// bytes, inside a word (here its refusal of a raw first frame that is not
// hello, which the worker itself never sends), reads as a message cut at
// a word's end, marked Truncated, and says so: never a part-word.
func TestCloseReasonCutAtAWord(t *testing.T) {
	url, _, _ := node(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(url, "http")+errandapi.WorkerPath+"jobs", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	// A first frame of an unknown type, named at length: the node's
	// refusal quotes it, and its cut falls inside the name.
	typ := strings.Repeat("nonsense", 20)
	if err := conn.Write(ctx, websocket.MessageText, []byte(`{"type":"`+typ+`"}`)); err != nil {
		t.Fatal(err)
	}
	_, _, err = conn.Read(ctx)
	full := `type: the first frame must be hello, not "` + typ + `"`
	var ce *worker.CloseError
	if !errors.As(worker.CloseErrorOf(err), &ce) || ce.Code != errandapi.CodeInvalidArgument {
		t.Fatalf("the node's refusal read as %v", worker.CloseErrorOf(err))
	}
	cut, ok := strings.CutSuffix(ce.Message, "…")
	if !ce.Truncated || !ok || !strings.HasPrefix(full, cut) || full[len(cut)] != ' ' ||
		!strings.Contains(ce.Error(), "cut its message short") {
		t.Fatalf("a cut reason read as %q (Truncated %v, %q); want a prefix of %q ending at a word, then …",
			ce.Message, ce.Truncated, ce.Error(), full)
	}
}

// TestRunDrains: when Run's context ends, a running handler finishes and
// its answer is recorded before Run returns nil.
func TestRunDrains(t *testing.T) {
	url, c, outcomes := node(t)
	ctx := context.Background()
	queue(t, c, "q", "app/slow", 0)
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
	res, err := c.AddTask(ctx, "jobs", "q", errandapi.NewTask{})
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
	if tk := wait(t, c, outcomes, res.ID, errandapi.StateSucceeded); string(tk.Result) != `"finished"` || tk.Attempt != 1 {
		t.Fatalf("drained task: %+v", tk)
	}
}

// TestDrainingWorkerFailsNothing: a worker whose Run's context ended says
// draining; the node sends it no new attempt, and one it sent before is
// run, so that nothing counts as a failed attempt, even on a queue whose
// targetControl is off (where a deferral would) and that allows one
// attempt. The task added meanwhile waits and runs on the next worker.
func TestDrainingWorkerFailsNothing(t *testing.T) {
	url, c, outcomes := node(t)
	ctx := context.Background()
	off, one := false, 1
	for q, fn := range map[string]string{"slow": "app/slow", "quick": "app/quick"} {
		req := errandapi.QueueRequest{Target: errandapi.Value(errandapi.Target{Function: fn}), TargetControl: &off, MaxAttempts: &one}
		if _, err := c.CreateQueue(ctx, "jobs", q, req); err != nil {
			t.Fatal(err)
		}
	}
	quiet := worker.Options{Slots: 4, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	started, release := make(chan struct{}), make(chan struct{})
	w1, err := worker.New(url, "jobs", "app", quiet)
	if err != nil {
		t.Fatal(err)
	}
	quick := func(context.Context, *worker.Task) (json.RawMessage, error) { return json.RawMessage(`"quick"`), nil }
	w1.Handle("slow", func(context.Context, *worker.Task) (json.RawMessage, error) {
		close(started)
		<-release
		return json.RawMessage(`"slow"`), nil
	})
	w1.Handle("quick", quick)
	rctx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- w1.Run(rctx) }()
	slow, err := c.AddTask(ctx, "jobs", "slow", errandapi.NewTask{})
	if err != nil {
		t.Fatal(err)
	}
	<-started
	stop() // draining, with the slow attempt running and three slots free
	added, err := c.AddTask(ctx, "jobs", "quick", errandapi.NewTask{})
	if err != nil {
		t.Fatal(err)
	}
	close(release)
	select {
	case err := <-ran:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return once the draining worker had answered")
	}
	w2, err := worker.New(url, "jobs", "app", quiet)
	if err != nil {
		t.Fatal(err)
	}
	w2.Handle("quick", quick)
	runWorker(t, w2)
	for id, want := range map[string]string{slow.ID: `"slow"`, added.ID: `"quick"`} {
		if tk := wait(t, c, outcomes, id, errandapi.StateSucceeded); string(tk.Result) != want || tk.Attempt != 1 {
			t.Fatalf("task %s: %s attempt %d, want %s at attempt 1", id, tk.Result, tk.Attempt, want)
		}
	}
}

// walkChain follows a chain of tasks each of which adds the next and
// answers its id as its result, from first (added by the API): each is
// one deeper than the one before, with source (the first api), and the
// one at errandapi.MaxDepth ends in state last, refused DEPTH_EXCEEDED.
func walkChain(t *testing.T, c *client.Client, outcomes *engine.OutcomeWatch, first, source string, last errandapi.State) {
	t.Helper()
	for depth, id := 0, first; ; depth++ {
		if depth == errandapi.MaxDepth {
			tk := wait(t, c, outcomes, id, last)
			if !strings.Contains(lastError(tk), "DEPTH_EXCEEDED") || tk.Depth != depth || tk.Source != source {
				t.Fatalf("the deepest task: depth %d, source %s, %q", tk.Depth, tk.Source, lastError(tk))
			}
			return
		}
		tk := wait(t, c, outcomes, id, errandapi.StateSucceeded)
		if want := map[bool]string{true: "api", false: source}[depth == 0]; tk.Depth != depth || tk.Source != want {
			t.Fatalf("task %d of the chain: depth %d, source %s", depth, tk.Depth, tk.Source)
		}
		if err := json.Unmarshal(tk.Result, &id); err != nil {
			t.Fatalf("task %d's result %s: %v", depth, tk.Result, err)
		}
	}
}
