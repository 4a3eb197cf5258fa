package engine_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/errandhq/errand/internal/clock"
	"github.com/errandhq/errand/internal/engine"
	errandnode "github.com/errandhq/errand/internal/node"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/store/sqlite"
	"github.com/errandhq/errand/internal/task"
	"github.com/errandhq/errand/worker"
)

// workerRig is a dev node (a real SQLite file, the fake clock, the test
// signals) behind a real HTTP server on loopback, and a function worker of
// the public worker package connected to it over WebSocket, serving
// app/hold: each attempt reports its start on started and then waits for
// a value on release (true: succeed).
type workerRig struct {
	*bundle
	started chan string
	release chan bool

	mu      sync.Mutex
	running int
	peak    int
}

func newWorkerRig(t *testing.T, slots int) *workerRig {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "errand.db"), sqlite.Options{Logger: discardLog})
	if err != nil {
		t.Fatal(err)
	}
	return newWorkerRigOn(t, slots, st, func() { _ = st.Close() })
}

// newWorkerRigOn is newWorkerRig on st; closeStore runs once the node
// stopped.
func newWorkerRigOn(t *testing.T, slots int, st store.Store, closeStore func()) *workerRig {
	t.Helper()
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	fc := clock.NewFake(T0)
	n := errandnode.New(errandnode.Config{Store: st, Clock: fc, Logger: log, Dev: true})
	sig := engine.WithSignals(n.Engine)
	if err := n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(n.Handler(errandnode.HandlerConfig{}))
	r := &workerRig{bundle: &bundle{t: t, eng: n.Engine, clock: fc, ctx: ctx, sig: sig},
		started: make(chan string, 64), release: make(chan bool)}
	w, err := worker.New(srv.URL, "jobs", "app", worker.Options{Slots: slots, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	w.Handle("hold", func(_ context.Context, tk *worker.Task) (json.RawMessage, error) {
		r.mu.Lock()
		r.running++
		r.peak = max(r.peak, r.running)
		r.mu.Unlock()
		defer func() {
			r.mu.Lock()
			r.running--
			r.mu.Unlock()
		}()
		r.started <- tk.ID
		// Not ctx: it ends at the attempt's deadline on the fake clock,
		// which is long past on the worker's real clock.
		<-r.release
		return nil, nil
	})
	wctx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- w.Run(wctx) }()
	t.Cleanup(func() {
		close(r.release) // every held attempt ends
		stop()
		if err := <-ran; err != nil {
			t.Error(err)
		}
		srv.CloseClientConnections()
		srv.Close()
		n.Close()
		closeStore()
	})
	// Connected: a first task runs through the worker, and its slot is
	// free again.
	r.queue("warm", &task.QueuePatch{Target: fnTarget()})
	warm := r.add("warm", task.AddInput{})
	r.next()
	r.release <- true
	r.waitState(warm, task.Succeeded)
	return r
}

// next waits for the next attempt to start on the worker.
func (r *workerRig) next() string {
	r.t.Helper()
	select {
	case id := <-r.started:
		return id
	case <-time.After(10 * time.Second):
		r.t.Fatal("timed out waiting for an attempt to start on the worker")
		return ""
	}
}

// none checks that no attempt started beyond those taken.
func (r *workerRig) none() {
	r.t.Helper()
	select {
	case id := <-r.started:
		r.t.Fatalf("task %s started beyond the limit", id)
	default:
	}
}

// TestWorkerRatePerSecond: a function queue served by a connected worker
// at 2/s (a burst of 1) starts one attempt at once and then one per half
// second of the fake clock, and no more, although the worker has free
// slots.
func TestWorkerRatePerSecond(t *testing.T) {
	t.Parallel()
	r := newWorkerRig(t, 8)
	r.queue("q", &task.QueuePatch{Target: fnTarget(), RatePerSecond: ptr(ptr(2.0))})
	for range 4 {
		r.add("q", task.AddInput{})
	}
	for want := 1; want <= 4; want++ {
		if want > 1 {
			r.clock.Advance(500 * time.Millisecond)
		}
		r.next()
		r.release <- true
		// The dispatcher has looked again at this time: it claimed no more
		// than the rate allows, and sleeps until the next token.
		wakeAt := r.sig.Settle(t)
		if left := r.pending("q"); left != 4-want {
			t.Fatalf("%d tasks claimed by %v, want %d", 4-left, r.clock.Now().Sub(T0), want)
		}
		if next := r.clock.Now().Add(500 * time.Millisecond); want < 4 && !wakeAt.Equal(next) {
			t.Fatalf("the dispatcher sleeps until %v, want the next token at %v", wakeAt, next)
		}
		r.none()
	}
}

// TestWorkerMaxInFlight: the instance's maxInFlight (3) holds across two
// function queues served by one worker with 8 slots: never more than 3
// attempts run on the worker, and every task runs.
func TestWorkerMaxInFlight(t *testing.T) {
	t.Parallel()
	r := newWorkerRig(t, 8)
	if _, err := r.eng.SettingsUpdate(r.ctx, "dev", "jobs", &task.SettingsPatch{MaxInFlight: ptr(3)}); err != nil {
		t.Fatal(err)
	}
	r.queue("a", &task.QueuePatch{Target: fnTarget()})
	r.queue("b", &task.QueuePatch{Target: fnTarget()})
	for range 4 {
		r.add("a", task.AddInput{})
		r.add("b", task.AddInput{})
	}
	ran := map[string]bool{}
	for done := 0; done < 8; done++ {
		want := min(3, 8-done)
		for len(ran) < done+want {
			ran[r.next()] = true
		}
		// Whatever the dispatcher would start now has been claimed: no
		// fourth attempt while three run.
		r.sig.Settle(t)
		if left := r.pending("a") + r.pending("b"); left != 8-done-want {
			t.Fatalf("%d tasks claimed with %d finished, want %d", 8-left-done, done, want)
		}
		r.none()
		r.release <- true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.peak != 3 || len(ran) != 8 {
		t.Fatalf("peak %d on the worker, %d tasks ran; want 3 and 8", r.peak, len(ran))
	}
}

// fnTarget is the queue patch's target app/hold.
func fnTarget() **task.Target {
	t := &task.Target{Function: "app/hold"}
	return &t
}
