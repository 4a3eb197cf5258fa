package engine_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/task"
)

// gate is a loopback target that holds every request until released, and
// counts how many it holds at once.
type gate struct {
	*httptest.Server
	*events
	mu       sync.Mutex
	inFlight int
	peak     int
	total    int
	release  chan int // status to answer
}

func newGate(t *testing.T) *gate {
	g := &gate{release: make(chan int), events: newEvents()}
	g.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.mu.Lock()
		g.inFlight++
		g.total++
		g.peak = max(g.peak, g.inFlight)
		g.mu.Unlock()
		g.bump()
		status := <-g.release
		g.mu.Lock()
		g.inFlight--
		g.mu.Unlock()
		g.bump()
		w.WriteHeader(status)
	}))
	t.Cleanup(func() {
		close(g.release)
		g.Close()
	})
	return g
}

func (g *gate) counts() (inFlight, peak, total int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.inFlight, g.peak, g.total
}

// events lets a test wait on what its loopback target sees: the target
// bumps it at each change, and waitFor checks its condition again at each
// bump, never on a timer.
type events struct {
	mu sync.Mutex
	ch chan struct{} // closed and replaced at each bump
}

func newEvents() *events { return &events{ch: make(chan struct{})} }

// bump reports a change.
func (e *events) bump() {
	e.mu.Lock()
	close(e.ch)
	e.ch = make(chan struct{})
	e.mu.Unlock()
}

// waitFor returns once cond holds, checking it at first and after each
// bump; past 10 s the test fails.
func (e *events) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	limit := time.NewTimer(10 * time.Second)
	defer limit.Stop()
	for {
		e.mu.Lock()
		ch := e.ch
		e.mu.Unlock()
		if cond() {
			return
		}
		select {
		case <-ch:
		case <-limit.C:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// pending returns how many of queue's tasks wait to be claimed.
func (b *bundle) pending(queue string) int {
	b.t.Helper()
	v, err := b.eng.QueueGet(b.ctx, engine.QueueRef{Org: "dev", Instance: "jobs", Queue: queue})
	if err != nil {
		b.t.Fatal(err)
	}
	return v.Counts[task.Pending] + v.Counts[task.RetryWait]
}

// TestDeadlineKeepsTheSlot: past the deadline the attempt is failed, but the
// target is not cut off, the task does not run beside itself, and the late
// answer is recorded on the timed-out attempt.
func TestDeadlineKeepsTheSlot(t *testing.T) {
	t.Parallel()
	b := setup(t)
	g := newGate(t)
	b.queue("slow", &task.QueuePatch{Target: targetPtr(g.URL), DeadlineSeconds: ptr(1), MinBackoffSeconds: ptr(0.5)})
	id := b.add("slow", task.AddInput{})
	g.waitFor(t, "the first attempt", func() bool { n, _, _ := g.counts(); return n == 1 })
	b.clock.Advance(2 * time.Second) // well past the deadline and the backoff
	b.sig.Settle(t)                  // a claim now would be a second attempt beside the first
	if tk, _ := b.eng.TaskGet(b.ctx, engine.TaskRef{Org: "dev", Instance: "jobs", ID: id}); tk.State != task.Running || tk.Attempt != 1 {
		t.Fatalf("state %s, attempt %d while the target still works", tk.State, tk.Attempt)
	}
	if _, _, total := g.counts(); total != 1 {
		t.Fatalf("%d requests while the first still works", total)
	}
	g.release <- 200 // the late answer
	tk := b.waitState(id, task.RetryWait)
	a := tk.Attempts[0]
	if a.Status != task.AttemptTimedOut || a.HTTPStatus != 200 || !strings.Contains(a.Error, "deadline 1s exceeded") {
		t.Fatalf("attempt %+v", a)
	}
	b.clock.Advance(time.Second)
	g.waitFor(t, "the retry", func() bool { _, _, total := g.counts(); return total == 2 })
	g.release <- 200
	tk = b.waitState(id, task.Succeeded)
	if tk.Attempt != 2 {
		t.Fatalf("attempt %d", tk.Attempt)
	}
}

// TestRatePerSecond: a queue at 2/s (a burst of 1, full at first) starts
// one delivery at once and then one per half second of the (fake) clock,
// and no more.
func TestRatePerSecond(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var n atomic.Int32
	ev := newEvents()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { n.Add(1); ev.bump() }))
	defer srv.Close()
	b.queue("q", &task.QueuePatch{Target: targetPtr(srv.URL), RatePerSecond: ptr(ptr(2.0))})
	for range 4 {
		b.add("q", task.AddInput{})
	}
	ev.waitFor(t, "the first delivery", func() bool { return n.Load() == 1 })
	for want := 1; want <= 4; want++ {
		if want > 1 {
			b.clock.Advance(500 * time.Millisecond)
			ev.waitFor(t, "the next delivery", func() bool { return n.Load() == int32(want) })
		}
		// The dispatcher has looked again at this time: it claimed no
		// more than the rate allows, and sleeps until the next token.
		wakeAt := b.sig.Settle(t)
		if left := b.pending("q"); left != 4-want {
			t.Fatalf("%d tasks claimed by %v, want %d", 4-left, b.clock.Now().Sub(T0), want)
		}
		if next := b.clock.Now().Add(500 * time.Millisecond); want < 4 && !wakeAt.Equal(next) {
			t.Fatalf("the dispatcher sleeps until %v, want the next token at %v", wakeAt, next)
		}
	}
	if got := n.Load(); got != 4 {
		t.Fatalf("%d deliveries, want 4", got)
	}
}

// TestMaxInFlightAcrossQueues: the instance's maxInFlight holds across all
// its queues.
func TestMaxInFlightAcrossQueues(t *testing.T) {
	t.Parallel()
	b := setup(t)
	g := newGate(t)
	if _, err := b.eng.SettingsUpdate(b.ctx, "dev", "jobs", &task.SettingsPatch{MaxInFlight: ptr(3)}); err != nil {
		t.Fatal(err)
	}
	b.queue("a", &task.QueuePatch{Target: targetPtr(g.URL)})
	b.queue("b", &task.QueuePatch{Target: targetPtr(g.URL)})
	for range 4 {
		b.add("a", task.AddInput{})
		b.add("b", task.AddInput{})
	}
	for done := 0; done < 8; done++ {
		want := min(3, 8-done)
		g.waitFor(t, "a full wave", func() bool { n, _, _ := g.counts(); return n == want })
		g.release <- 200
	}
	if _, peak, total := g.counts(); peak != 3 || total != 8 {
		t.Fatalf("peak %d total %d", peak, total)
	}
}

// TestPausedQueueDeliversNothing, until it is resumed.
func TestPausedQueueDeliversNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { n.Add(1) }))
	defer srv.Close()
	b.queue("q", &task.QueuePatch{Target: targetPtr(srv.URL), Paused: ptr(true)})
	id := b.add("q", task.AddInput{})
	b.sig.Settle(t)
	if left := b.pending("q"); left != 1 || n.Load() != 0 {
		t.Fatalf("a paused queue: %d claimed, %d delivered", 1-left, n.Load())
	}
	if _, err := b.eng.QueuePatch(b.ctx, engine.QueueRef{Org: "dev", Instance: "jobs", Queue: "q"}, &task.QueuePatch{Paused: ptr(false)}); err != nil {
		t.Fatal(err)
	}
	b.waitState(id, task.Succeeded)
}

// TestTargetLookedUpOnEveryAttempt: a queue target changed after the add is
// where the next attempt goes; a task with no target left fails its attempt.
func TestTargetLookedUpOnEveryAttempt(t *testing.T) {
	t.Parallel()
	b := setup(t)
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(500) }))
	defer bad.Close()
	var good atomic.Int32
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { good.Add(1) }))
	defer ok.Close()
	b.queue("q", &task.QueuePatch{Target: targetPtr(bad.URL)})
	id := b.add("q", task.AddInput{})
	b.waitState(id, task.RetryWait)
	if _, err := b.eng.QueuePatch(b.ctx, engine.QueueRef{Org: "dev", Instance: "jobs", Queue: "q"}, &task.QueuePatch{Target: targetPtr(ok.URL)}); err != nil {
		t.Fatal(err)
	}
	b.clock.Advance(10 * time.Second)
	tk := b.waitState(id, task.Succeeded)
	if good.Load() != 1 || tk.Attempts[0].HTTPStatus != 500 {
		t.Fatalf("good=%d attempts=%+v", good.Load(), tk.Attempts)
	}
}
