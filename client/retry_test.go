package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/errandhq/errand/client"
	"github.com/errandhq/errand/errandapi"
)

// failing is a real front server for the API that fails the first n
// requests whose path ends in suffix: with a 503 UNAVAILABLE body
// ("503"), by cutting the connection before the API sees the request
// ("cut"), or by letting the API serve it and cutting the connection
// before the answer ("lose").
type failing struct {
	n      int
	suffix string
	how    string
	seen   atomic.Int64 // requests to suffix, failed or not
	first  chan struct{}
	once   sync.Once
}

func (f *failing) wrap(api http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, f.suffix) {
			api.ServeHTTP(w, r)
			return
		}
		if f.first != nil {
			f.once.Do(func() { close(f.first) })
		}
		if f.seen.Add(1) > int64(f.n) {
			api.ServeHTTP(w, r)
			return
		}
		switch f.how {
		case "503":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			_ = json.NewEncoder(w).Encode(errandapi.ErrorResponse{Error: errandapi.ErrorDetail{Code: errandapi.CodeUnavailable, Message: "the store is unreachable; try again"}})
		case "lose":
			api.ServeHTTP(httptest.NewRecorder(), r)
			fallthrough
		case "cut":
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				_ = conn.Close()
			}
		}
	})
}

// count is the number of tasks in jobs/q.
func (e *env) count(t *testing.T) int {
	t.Helper()
	page := must(e.c.ListTasks(context.Background(), "jobs", "q", client.ListOptions{Limit: 200})).of(t)
	return len(page.Tasks)
}

func (e *env) pullQueue(t *testing.T) {
	t.Helper()
	must(e.c.CreateQueue(context.Background(), "jobs", "q", errandapi.QueueRequest{Mode: new(errandapi.ModePull)})).of(t)
}

// TestRepeatableCallsRetry503AndCuts: a named add and a GET get through a
// server that fails twice (503, or a cut connection), with two waits of
// capped, jittered backoff between the three tries.
func TestRepeatableCallsRetry503AndCuts(t *testing.T) {
	for _, how := range []string{"503", "cut"} {
		t.Run(how, func(t *testing.T) {
			f := &failing{n: 2, suffix: "/tasks", how: how}
			e := start(t, options{wrap: f.wrap})
			e.pullQueue(t)
			res, err := e.c.AddTask(context.Background(), "jobs", "q", errandapi.NewTask{Name: "n"})
			if err != nil || !res.OK {
				t.Fatalf("named add through two failures: %+v %v", res, err)
			}
			if got := f.seen.Load(); got != 3 {
				t.Fatalf("%d tries, want 3", got)
			}
			w := e.recordedWaits()
			if len(w) != 2 || w[0] < 50*time.Millisecond || w[0] > 100*time.Millisecond || w[1] < 100*time.Millisecond || w[1] > 200*time.Millisecond {
				t.Fatalf("waits %v, want one in [50, 100] ms then one in [100, 200] ms", w)
			}
			// The GET of the same path fails twice too, then answers.
			f.seen.Store(0)
			if n := e.count(t); n != 1 || f.seen.Load() != 3 {
				t.Fatalf("%d tasks after %d tries, want 1 after 3", n, f.seen.Load())
			}
		})
	}
}

// TestNamedAddWhoseAnswerWasLost: the first try is stored but its answer
// lost; the retry answers TASK_EXISTS with that task's id, and exactly
// one task exists.
func TestNamedAddWhoseAnswerWasLost(t *testing.T) {
	f := &failing{n: 1, suffix: "/tasks", how: "lose"}
	e := start(t, options{wrap: f.wrap})
	e.pullQueue(t)
	_, err := e.c.AddTask(context.Background(), "jobs", "q", errandapi.NewTask{Name: "n"})
	var ce *client.Error
	if !errors.As(err, &ce) || !errors.Is(err, client.ErrTaskExists) || ce.ID == "" {
		t.Fatalf("got %v, want TASK_EXISTS with the id", err)
	}
	if got := must(e.c.GetTask(context.Background(), "jobs", ce.ID)).of(t); *got.Name != "n" {
		t.Fatalf("the id names %+v", got)
	}
	f.seen.Store(1)
	if n := e.count(t); n != 1 {
		t.Fatalf("%d tasks, want 1", n)
	}
}

// TestAckWhoseAnswerWasLost: the first try of an ack (single and batch)
// is stored but its answer lost; the retry answers success with the task
// as the first try stored it, not LEASE_LOST.
func TestAckWhoseAnswerWasLost(t *testing.T) {
	f := &failing{n: 0, suffix: "/ack", how: "lose"}
	e := start(t, options{wrap: f.wrap})
	e.pullQueue(t)
	ctx := context.Background()
	for range 2 {
		must(e.c.AddTask(ctx, "jobs", "q", errandapi.NewTask{Payload: json.RawMessage(`1`)})).of(t)
	}
	leased := must(e.c.Lease(ctx, "jobs", "q", errandapi.LeaseRequest{Count: new(2), LeaseSeconds: new(60)})).of(t)
	if len(leased) != 2 {
		t.Fatalf("leased %d", len(leased))
	}
	f.n = 1
	got, err := e.c.Ack(ctx, "jobs", leased[0].ID, errandapi.AckRequest{LeaseID: leased[0].LeaseID, Result: json.RawMessage(`{"w":1}`)})
	if err != nil || got.State != errandapi.StateSucceeded || string(got.Result) != `{"w":1}` || f.seen.Load() != 2 {
		t.Fatalf("ack after a lost answer: %+v %v in %d tries, want the task succeeded in 2", got, err, f.seen.Load())
	}
	f.n = 3 // the batch's first try is lost too
	res, err := e.c.AckMany(ctx, "jobs", "q", []errandapi.BatchAck{{ID: leased[1].ID, LeaseID: leased[1].LeaseID}})
	if err != nil || len(res) != 1 || res[0].Err() != nil || f.seen.Load() != 4 {
		t.Fatalf("batch ack after a lost answer: %+v %v in %d tries, want OK in 2", res, err, f.seen.Load()-2)
	}
}

// TestNonRepeatableCallsAreNotSentTwice: an add without a name, a lease
// and a task retry that may have reached the server (503, a cut or a
// lost answer) answer their error after one try and add nothing more.
func TestNonRepeatableCallsAreNotSentTwice(t *testing.T) {
	for _, how := range []string{"503", "cut", "lose"} {
		t.Run(how, func(t *testing.T) {
			f := &failing{n: 1, suffix: "/tasks", how: how}
			e := start(t, options{wrap: f.wrap})
			e.pullQueue(t)
			_, err := e.c.AddTask(context.Background(), "jobs", "q", errandapi.NewTask{})
			switch how {
			case "503":
				if !errors.Is(err, client.ErrUnavailable) {
					t.Fatalf("got %v, want UNAVAILABLE", err)
				}
			default:
				if !client.IsConnectionError(err) {
					t.Fatalf("got %v, want a connection error", err)
				}
			}
			if got := f.seen.Load(); got != 1 {
				t.Fatalf("%d tries, want 1", got)
			}
			want := 0
			if how == "lose" {
				want = 1 // the one try was stored; nothing was sent again
			}
			if n := e.count(t); n != want {
				t.Fatalf("%d tasks, want %d", n, want)
			}
			if w := e.recordedWaits(); len(w) != 0 {
				t.Fatalf("waited %v", w)
			}
		})
	}
	t.Run("lease", func(t *testing.T) {
		f := &failing{n: 1, suffix: "/lease", how: "503"}
		e := start(t, options{wrap: f.wrap})
		e.pullQueue(t)
		must(e.c.AddTask(context.Background(), "jobs", "q", errandapi.NewTask{})).of(t)
		if _, err := e.c.Lease(context.Background(), "jobs", "q", errandapi.LeaseRequest{}); !errors.Is(err, client.ErrUnavailable) || f.seen.Load() != 1 {
			t.Fatalf("lease: %v after %d tries", err, f.seen.Load())
		}
	})
}

// TestDialErrorsRetryEveryCall: a server that is not listening yet never
// saw the request, so even an add without a name is sent again; the
// server starts during the first wait.
func TestDialErrorsRetryEveryCall(t *testing.T) {
	e := start(t, options{})
	e.pullQueue(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	c, err := client.New("http://"+addr, client.Options{HTTPClient: e.hc})
	if err != nil {
		t.Fatal(err)
	}
	var late *http.Server
	done := make(chan struct{})
	client.SetSleep(c, func(ctx context.Context, d time.Duration) error {
		if late == nil {
			l, err := net.Listen("tcp", addr)
			if err != nil {
				t.Errorf("listen again on %s: %v", addr, err)
				return err
			}
			late = &http.Server{Handler: e.srv.Config.Handler}
			go func() { defer close(done); _ = late.Serve(l) }()
		}
		return nil
	})
	defer func() {
		if late != nil {
			_ = late.Close()
			<-done
		}
	}()
	res, err := c.AddTask(context.Background(), "jobs", "q", errandapi.NewTask{})
	if err != nil || !res.OK {
		t.Fatalf("add after a refused dial: %+v %v", res, err)
	}
	if n := e.count(t); n != 1 {
		t.Fatalf("%d tasks, want 1", n)
	}
}

// TestRateLimitedWaitsRetryAfter: past the instance's rateLimit every call
// (an unnamed add too) waits the server's Retry-After and is sent again;
// a Retry-After over MaxRetryAfter is answered at once.
func TestRateLimitedWaitsRetryAfter(t *testing.T) {
	e := start(t, options{})
	e.pullQueue(t)
	ctx := context.Background()
	must(e.c.UpdateSettings(ctx, "jobs", errandapi.SettingsRequest{RateLimit: errandapi.Value(1.0)})).of(t)
	must(e.c.AddTask(ctx, "jobs", "q", errandapi.NewTask{})).of(t)
	must(e.c.AddTask(ctx, "jobs", "q", errandapi.NewTask{})).of(t) // waits 1 s of the fake clock
	if w := e.recordedWaits(); len(w) != 1 || w[0] != time.Second {
		t.Fatalf("waits %v, want the server's Retry-After (1 s)", w)
	}
	impatient := e.client("", client.RetryPolicy{MaxRetryAfter: 500 * time.Millisecond})
	_, err := impatient.AddTask(ctx, "jobs", "q", errandapi.NewTask{})
	var ce *client.Error
	if !errors.As(err, &ce) || !errors.Is(err, client.ErrRateLimited) || ce.RetryAfter != time.Second {
		t.Fatalf("got %v, want RATE_LIMITED with RetryAfter 1 s", err)
	}
	if w := e.recordedWaits(); len(w) != 1 {
		t.Fatalf("waits %v: the impatient client waited", w)
	}
	e.clock.Advance(time.Second)
	if n := e.count(t); n != 2 {
		t.Fatalf("%d tasks, want 2", n)
	}
}

// TestAttemptsAndBackoffAreBounded: a server that always answers 503 gets
// MaxAttempts tries, with waits that double from MinBackoff and stop at
// MaxBackoff (jitter at its top and its bottom).
func TestAttemptsAndBackoffAreBounded(t *testing.T) {
	f := &failing{n: 1 << 30, suffix: "/queues", how: "503"}
	e := start(t, options{wrap: f.wrap})
	c := e.client("", client.RetryPolicy{MaxAttempts: 5, MinBackoff: 100 * time.Millisecond, MaxBackoff: 250 * time.Millisecond})
	client.SetJitter(c, func(n int64) int64 { return n - 1 })
	_, err := c.ListQueues(context.Background(), "jobs")
	if !errors.Is(err, client.ErrUnavailable) || f.seen.Load() != 5 {
		t.Fatalf("got %v after %d tries, want UNAVAILABLE after 5", err, f.seen.Load())
	}
	want := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 250 * time.Millisecond, 250 * time.Millisecond}
	if w := e.recordedWaits(); len(w) != 4 || w[0] != want[0] || w[1] != want[1] || w[2] != want[2] || w[3] != want[3] {
		t.Fatalf("waits %v, want %v", w, want)
	}
	client.SetJitter(c, func(int64) int64 { return 0 })
	for n, want := range map[int]time.Duration{1: 50 * time.Millisecond, 2: 100 * time.Millisecond, 3: 125 * time.Millisecond, 80: 125 * time.Millisecond} {
		if got := client.Backoff(c, n); got != want {
			t.Errorf("backoff %d at the bottom of its jitter: %v, want %v", n, got, want)
		}
	}
}

// TestContextEndsTheWait: a call waiting between tries ends when its
// context does, with the context's error (real waits here).
func TestContextEndsTheWait(t *testing.T) {
	f := &failing{n: 1 << 30, suffix: "/queues", how: "503", first: make(chan struct{})}
	e := start(t, options{wrap: f.wrap})
	c, err := client.New(e.srv.URL, client.Options{HTTPClient: e.hc, Retry: client.RetryPolicy{MinBackoff: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-f.first; cancel() }()
	if _, err := c.ListQueues(ctx, "jobs"); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}

// cancelAfter is a transport that reads each answer whole and then cancels
// the call's context, before the client decides on another try.
type cancelAfter struct {
	base   http.RoundTripper
	cancel context.CancelFunc
}

func (c cancelAfter) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	c.cancel()
	return resp, err
}

// TestContextEndedAfterAnAnswer: a context that ends after an answer to
// retry arrived and before the next try returns the context's error, not
// the answer's.
func TestContextEndedAfterAnAnswer(t *testing.T) {
	f := &failing{n: 1 << 30, suffix: "/queues", how: "503"}
	e := start(t, options{wrap: f.wrap})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hc := &http.Client{Transport: cancelAfter{base: e.hc.Transport, cancel: cancel}}
	c, err := client.New(e.srv.URL, client.Options{HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ListQueues(ctx, "jobs"); !errors.Is(err, context.Canceled) || f.seen.Load() != 1 {
		t.Fatalf("got %v after %d tries, want context.Canceled after 1", err, f.seen.Load())
	}
}
