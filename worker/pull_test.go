package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/errandhq/errand/client"
	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/worker"
)

// extendWatch is a transport that tells each extend call and can refuse
// them (a transport error, as a network would).
type extendWatch struct {
	cut     atomic.Bool
	extends chan struct{}
}

func (x *extendWatch) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.HasSuffix(r.URL.Path, "/extend") {
		if x.cut.Load() {
			return nil, errors.New("test: extends cut")
		}
		select {
		case x.extends <- struct{}{}:
		default:
		}
	}
	return http.DefaultTransport.RoundTrip(r)
}

// pullClient is a client of url whose extends x watches.
func pullClient(t *testing.T, url string, x *extendWatch) *client.Client {
	t.Helper()
	hc := &http.Client{Transport: x}
	t.Cleanup(hc.CloseIdleConnections)
	c, err := client.New(url, client.Options{HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// pullQueue creates the pull queue name of jobs, retrying after 1 ms.
func pullQueue(t testing.TB, c *client.Client, name string) {
	t.Helper()
	mode, backoff := errandapi.ModePull, 0.001
	if _, err := c.CreateQueue(context.Background(), "jobs", name, errandapi.QueueRequest{Mode: &mode, MinBackoffSeconds: &backoff, MaxBackoffSeconds: &backoff}); err != nil {
		t.Fatal(err)
	}
}

var quietPull = slog.New(slog.NewTextHandler(io.Discard, nil))

// TestPullAnswers: Pull leases a pull queue's tasks and answers each as
// its handler did: a result acks it, an error and a panic release it as a
// failed attempt (naming them), Defer releases it unharmed; a stop lets
// nothing more be leased and Pull returns nil.
func TestPullAnswers(t *testing.T) {
	_, c, outcomes := node(t)
	pullQueue(t, c, "inbox")
	ids := map[string]string{}
	for _, p := range []string{"ok", "fail", "defer", "panic"} {
		r, err := c.AddTask(context.Background(), "jobs", "inbox", errandapi.NewTask{Payload: json.RawMessage(`"` + p + `"`)})
		if err != nil {
			t.Fatal(err)
		}
		ids[p] = r.ID
	}
	ctx, stop := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() {
		ran <- worker.Pull(ctx, c, "jobs", "inbox", worker.PullOptions{Slots: 2, Logger: quietPull}, func(_ context.Context, tk *worker.Task) (json.RawMessage, error) {
			switch string(tk.Payload) {
			case `"ok"`:
				return json.RawMessage(`{"done":"` + tk.ID + `"}`), nil
			case `"fail"`:
				return nil, errors.New("the mail server said no")
			case `"defer"`:
				if tk.Attempt > 1 {
					return nil, errors.New("a deferral counted an attempt")
				}
				return nil, worker.Defer(time.Hour)
			}
			panic("the handler broke")
		})
	}()
	if tk := wait(t, c, outcomes, ids["ok"], errandapi.StateSucceeded); string(tk.Result) != `{"done":"`+ids["ok"]+`"}` {
		t.Fatalf("result %s", tk.Result)
	}
	if tk := wait(t, c, outcomes, ids["fail"], errandapi.StateRetrying); lastError(tk) != "the mail server said no" {
		t.Fatalf("failed: %q", lastError(tk))
	}
	if tk := wait(t, c, outcomes, ids["panic"], errandapi.StateRetrying); !strings.Contains(lastError(tk), "panicked: the handler broke") {
		t.Fatalf("panicked: %q", lastError(tk))
	}
	if tk := wait(t, c, outcomes, ids["defer"], errandapi.StateRetrying); tk.Attempt != 0 || time.Until(time.UnixMilli(tk.RunAt)) < 50*time.Minute {
		t.Fatalf("deferred: attempt %d, due in %v; want 0 and an hour", tk.Attempt, time.Until(time.UnixMilli(tk.RunAt)))
	}
	stop()
	if err := <-ran; err != nil {
		t.Fatalf("Pull after its stop: %v", err)
	}
}

// TestPullExtendsTheLease: a handler that runs past its 1 s lease keeps
// it: Pull extends it every half lease, and the ack after 1.5 s lands on
// the first attempt.
func TestPullExtendsTheLease(t *testing.T) {
	url, c, outcomes := nodeOn(t, nil)
	pullQueue(t, c, "long")
	r, err := c.AddTask(context.Background(), "jobs", "long", errandapi.NewTask{})
	if err != nil {
		t.Fatal(err)
	}
	x := &extendWatch{extends: make(chan struct{}, 1)}
	pc := pullClient(t, url, x)
	ctx, stop := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() {
		ran <- worker.Pull(ctx, pc, "jobs", "long", worker.PullOptions{LeaseSeconds: 1, Logger: quietPull}, func(context.Context, *worker.Task) (json.RawMessage, error) {
			for range 5 { // 1.67 s: past the lease, had it not been extended
				<-x.extends
			}
			return json.RawMessage(`true`), nil
		})
	}()
	if tk := wait(t, c, outcomes, r.ID, errandapi.StateSucceeded); tk.Attempt != 1 {
		t.Fatalf("succeeded on attempt %d, want 1", tk.Attempt)
	}
	stop()
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
}

// TestPullLeaseLost: when its lease is lost (here: no extend got through,
// the lease ran out and another worker leased the task), the handler's
// context ends with the cause ErrLeaseLost and Pull sends no answer.
func TestPullLeaseLost(t *testing.T) {
	url, c, outcomes := nodeOn(t, nil)
	pullQueue(t, c, "lost")
	r, err := c.AddTask(context.Background(), "jobs", "lost", errandapi.NewTask{})
	if err != nil {
		t.Fatal(err)
	}
	x := &extendWatch{extends: make(chan struct{}, 1)}
	x.cut.Store(true)
	pc := pullClient(t, url, x)
	ctx, stop := context.WithCancel(context.Background())
	started, cause := make(chan struct{}), make(chan error, 1)
	ran := make(chan error, 1)
	go func() {
		ran <- worker.Pull(ctx, pc, "jobs", "lost", worker.PullOptions{LeaseSeconds: 1, Logger: quietPull}, func(hctx context.Context, _ *worker.Task) (json.RawMessage, error) {
			close(started)
			<-hctx.Done()
			cause <- context.Cause(hctx)
			return json.RawMessage(`"too late"`), nil
		})
	}()
	<-started
	again, err := c.Lease(context.Background(), "jobs", "lost", errandapi.LeaseRequest{WaitSeconds: 30})
	if err != nil || len(again) != 1 || again[0].ID != r.ID {
		t.Fatalf("the second lease: %v %v", again, err)
	}
	x.cut.Store(false)
	select {
	case err := <-cause:
		if err != worker.ErrLeaseLost {
			t.Fatalf("cause %v, want ErrLeaseLost", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the handler's context did not end with the lease")
	}
	if _, err := c.Ack(context.Background(), "jobs", r.ID, errandapi.AckRequest{LeaseID: again[0].LeaseID, Result: json.RawMessage(`"second"`)}); err != nil {
		t.Fatal(err)
	}
	if tk := wait(t, c, outcomes, r.ID, errandapi.StateSucceeded); string(tk.Result) != `"second"` {
		t.Fatalf("result %s", tk.Result)
	}
	stop()
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
}

// TestPullRefusals: options out of range, and a queue Pull cannot serve,
// end Pull at once with the refusal.
func TestPullRefusals(t *testing.T) {
	_, c, _ := node(t)
	queue(t, c, "pushed", "app/x", 0)
	h := func(context.Context, *worker.Task) (json.RawMessage, error) { return nil, nil }
	for _, tc := range []struct {
		queue string
		o     worker.PullOptions
		code  errandapi.Code
		msg   string
	}{
		{"pushed", worker.PullOptions{}, errandapi.CodeWrongMode, ""},
		{"nosuch", worker.PullOptions{}, errandapi.CodeNotFound, "nosuch"},
		{"pushed", worker.PullOptions{Slots: -1}, errandapi.CodeInvalidArgument, "Slots -1: must be 1–1000"},
		{"pushed", worker.PullOptions{LeaseSeconds: 86_401}, errandapi.CodeInvalidArgument, "LeaseSeconds 86401"},
		{"pushed", worker.PullOptions{WaitSeconds: 31}, errandapi.CodeInvalidArgument, "WaitSeconds 31"},
	} {
		err := worker.Pull(context.Background(), c, "jobs", tc.queue, tc.o, h)
		var e *errandapi.Error
		if !errors.As(err, &e) || e.Code != tc.code || !strings.Contains(e.Message, tc.msg) {
			t.Errorf("%s %+v: %v, want %s", tc.queue, tc.o, err, tc.code)
		}
	}
}

// TestPullAddsAreDeeper: Pull's handler context carries the leased task's
// delivery token, so a handler that adds to its own queue makes a chain of
// depths 0..8, the adds' source "lease", and the deepest add is refused.
func TestPullAddsAreDeeper(t *testing.T) {
	_, c, outcomes := node(t)
	pullQueue(t, c, "loop")
	first, err := c.AddTask(context.Background(), "jobs", "loop", errandapi.NewTask{Payload: json.RawMessage(`"loop"`)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() {
		ran <- worker.Pull(ctx, c, "jobs", "loop", worker.PullOptions{Slots: 1, Logger: quietPull}, func(ctx context.Context, tk *worker.Task) (json.RawMessage, error) {
			r, err := c.AddTask(ctx, "jobs", "loop", errandapi.NewTask{Payload: json.RawMessage(`"loop"`)})
			if err != nil {
				return nil, err
			}
			return json.Marshal(r.ID)
		})
	}()
	walkChain(t, c, outcomes, first.ID, "lease", errandapi.StateRetrying)
	stop()
	if err := <-ran; err != nil {
		t.Fatalf("Pull after its stop: %v", err)
	}
}

// ackCounter is a transport that counts the ack calls by kind and holds
// the first batch ack until release closes.
type ackCounter struct {
	batches, singles atomic.Int64
	release          chan struct{}
}

func (a *ackCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	switch {
	case strings.Contains(r.URL.Path, "/queues/") && strings.HasSuffix(r.URL.Path, "/ack"):
		if a.batches.Add(1) == 1 {
			<-a.release
		}
	case strings.HasSuffix(r.URL.Path, "/ack"):
		a.singles.Add(1)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// TestPullBatchesAcks: the acks of a Pull loop go out in batch acks: the
// first alone and at once, and those made while it is on its way together
// in the next call, each task acked with its own result.
func TestPullBatchesAcks(t *testing.T) {
	url, _, outcomes := node(t)
	ac := &ackCounter{release: make(chan struct{})}
	hc := &http.Client{Transport: ac}
	t.Cleanup(hc.CloseIdleConnections)
	c, err := client.New(url, client.Options{HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	pullQueue(t, c, "busy")
	const n = 20
	ids := make([]string, n)
	for i := range ids {
		r, err := c.AddTask(context.Background(), "jobs", "busy", errandapi.NewTask{Payload: json.RawMessage(`{"n":` + strconv.Itoa(i) + `}`)})
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = r.ID
	}
	queued := make(chan struct{}, n)
	defer worker.OnAckQueued(func() { queued <- struct{}{} })()
	ctx, stop := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() {
		ran <- worker.Pull(ctx, c, "jobs", "busy", worker.PullOptions{Slots: n, Logger: quietPull}, func(_ context.Context, tk *worker.Task) (json.RawMessage, error) {
			return json.RawMessage(`{"echo":` + string(tk.Payload) + `}`), nil
		})
	}()
	bound := time.After(10 * time.Second) // a failure's bound, not a wait for an event
	for i := range n {                    // the first ack is held on its way; the others wait for it
		select {
		case <-queued:
		case <-bound:
			t.Fatalf("%d of %d acks queued for a batch (%d single acks)", i, n, ac.singles.Load())
		}
	}
	close(ac.release)
	for i, id := range ids {
		if tk := wait(t, c, outcomes, id, errandapi.StateSucceeded); string(tk.Result) != `{"echo":{"n":`+strconv.Itoa(i)+`}}` {
			t.Fatalf("task %d's result %s", i, tk.Result)
		}
	}
	stop()
	if err := <-ran; err != nil {
		t.Fatalf("Pull after its stop: %v", err)
	}
	if b, s := ac.batches.Load(), ac.singles.Load(); b != 2 || s != 0 {
		t.Fatalf("%d batch acks and %d single acks for %d tasks; want 2 and 0", b, s, n)
	}
}

// BenchmarkPullAcks drains a pull queue of 2,000 tasks an iteration with
// Pull (200 slots) on a node over loopback HTTP, its handler answering at
// once, and reports tasks/s and the ack calls a task (batch and single).
//
//	go test -run '^$' -bench PullAcks ./worker/
func BenchmarkPullAcks(b *testing.B) {
	url, _, outcomes := nodeOn(b, nil)
	ac := &ackCounter{release: make(chan struct{})}
	close(ac.release)
	hc := &http.Client{Transport: ac}
	b.Cleanup(hc.CloseIdleConnections)
	c, err := client.New(url, client.Options{HTTPClient: hc})
	if err != nil {
		b.Fatal(err)
	}
	pullQueue(b, c, "drain")
	ctx, stop := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() {
		ran <- worker.Pull(ctx, c, "jobs", "drain", worker.PullOptions{Slots: 200, WaitSeconds: 1, Logger: quietPull},
			func(context.Context, *worker.Task) (json.RawMessage, error) { return nil, nil })
	}()
	const n = 2000
	batch := make([]errandapi.NewTask, 100)
	done := 0
	for b.Loop() {
		for range n / len(batch) {
			if _, err := c.AddTasks(context.Background(), "jobs", "drain", batch...); err != nil {
				b.Fatal(err)
			}
		}
		done += n
		for {
			seen := outcomes.Count()
			q, err := c.GetQueue(context.Background(), "jobs", "drain")
			if err != nil {
				b.Fatal(err)
			}
			if q.Counts[errandapi.StateSucceeded] >= done {
				break
			}
			if _, err := outcomes.After(context.Background(), seen); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(done)/b.Elapsed().Seconds(), "tasks/s")
	b.ReportMetric(float64(ac.batches.Load()+ac.singles.Load())/float64(done), "acks/task")
	stop()
	if err := <-ran; err != nil {
		b.Fatal(err)
	}
}
