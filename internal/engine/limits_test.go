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
	mu       sync.Mutex
	inFlight int
	peak     int
	total    int
	release  chan int // status to answer
}

func newGate(t *testing.T) *gate {
	g := &gate{release: make(chan int)}
	g.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.mu.Lock()
		g.inFlight++
		g.total++
		g.peak = max(g.peak, g.inFlight)
		g.mu.Unlock()
		status := <-g.release
		g.mu.Lock()
		g.inFlight--
		g.mu.Unlock()
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

// waitFor polls cond (never the fake clock) for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// quiet checks that cond stays false for a moment.
func quiet(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(50 * time.Millisecond)
	for time.Now().Before(deadline) {
		if cond() {
			t.Fatalf("unexpected: %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestDeadlineKeepsTheSlot: past the deadline the attempt is failed, but the
// target is not cut off, the task does not run beside itself, and the late
// answer is recorded on the timed-out attempt.
func TestDeadlineKeepsTheSlot(t *testing.T) {
	b := setup(t)
	g := newGate(t)
	b.queue("slow", &task.QueuePatch{Target: targetPtr(g.URL), DeadlineSeconds: ptr(1), MinBackoffSeconds: ptr(0.5)})
	id := b.add("slow", task.AddInput{})
	waitFor(t, "the first attempt", func() bool { n, _, _ := g.counts(); return n == 1 })
	time.Sleep(10 * time.Millisecond) // let the dispatcher arm the deadline
	b.clock.Advance(time.Second)
	b.clock.Advance(time.Second) // well past the deadline and the backoff
	quiet(t, "a second attempt beside the first", func() bool { _, _, total := g.counts(); return total > 1 })
	if tk, _ := b.eng.TaskGet(b.ctx, engine.TaskRef{Org: "dev", Instance: "jobs", ID: id}); tk.State != task.Running {
		t.Fatalf("state %s while the target still works", tk.State)
	}
	g.release <- 200 // the late answer
	tk := b.waitState(id, task.RetryWait)
	a := tk.Attempts[0]
	if a.Status != task.AttemptTimedOut || a.HTTPStatus != 200 || !strings.Contains(a.Error, "deadline 1s exceeded") {
		t.Fatalf("attempt %+v", a)
	}
	b.clock.Advance(time.Second)
	waitFor(t, "the retry", func() bool { _, _, total := g.counts(); return total == 2 })
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
	b := setup(t)
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { n.Add(1) }))
	defer srv.Close()
	b.queue("q", &task.QueuePatch{Target: targetPtr(srv.URL), RatePerSecond: ptr(ptr(2.0))})
	for range 4 {
		b.add("q", task.AddInput{})
	}
	waitFor(t, "the first delivery", func() bool { return n.Load() == 1 })
	quiet(t, "a second delivery before its token", func() bool { return n.Load() > 1 })
	for want := int32(2); want <= 4; want++ {
		b.clock.Advance(500 * time.Millisecond)
		waitFor(t, "the next delivery", func() bool { return n.Load() == want })
		quiet(t, "more than the rate allows", func() bool { return n.Load() > want })
	}
}

// TestMaxInFlightAcrossQueues: the instance's maxInFlight holds across all
// its queues.
func TestMaxInFlightAcrossQueues(t *testing.T) {
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
		waitFor(t, "a full wave", func() bool { n, _, _ := g.counts(); return n == want })
		g.release <- 200
	}
	if _, peak, total := g.counts(); peak != 3 || total != 8 {
		t.Fatalf("peak %d total %d", peak, total)
	}
}

// TestPausedQueueDeliversNothing, until it is resumed.
func TestPausedQueueDeliversNothing(t *testing.T) {
	b := setup(t)
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { n.Add(1) }))
	defer srv.Close()
	b.queue("q", &task.QueuePatch{Target: targetPtr(srv.URL), Paused: ptr(true)})
	id := b.add("q", task.AddInput{})
	quiet(t, "a delivery from a paused queue", func() bool { return n.Load() > 0 })
	if _, err := b.eng.QueuePatch(b.ctx, engine.QueueRef{Org: "dev", Instance: "jobs", Queue: "q"}, &task.QueuePatch{Paused: ptr(false)}); err != nil {
		t.Fatal(err)
	}
	b.waitState(id, task.Succeeded)
}

// TestTargetLookedUpOnEveryAttempt: a queue target changed after the add is
// where the next attempt goes; a task with no target left fails its attempt.
func TestTargetLookedUpOnEveryAttempt(t *testing.T) {
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
