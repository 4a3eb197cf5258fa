package main

// errand_worker.go: errand serve delivering through connected function
// workers. The server is the errand system's (the same `errand serve`
// process, store, key and instance; errand.go); the work is done by the
// public worker package (github.com/errandhq/errand/worker) in this
// process, connected to the server over WebSocket, serving the function
// bench/noop. A queue whose target is {"function": "bench/noop"} is claimed
// by the server only while a connected worker has a free slot, and each
// attempt travels to the worker and its answer back over that connection.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/worker"
)

const (
	workerGroup    = "bench"
	workerFunction = "noop"
	// workerConns connections of workerSlots slots each: the server claims
	// up to workerConns × workerSlots attempts at once (under the
	// instance's maxInFlight, 1,000).
	workerConns = 2
	workerSlots = 500
)

// workerSystem is errand serve with connected function workers.
type workerSystem struct {
	*errandSystem

	stop    context.CancelFunc
	done    chan error                // each worker's Run result
	seen    atomic.Pointer[idCounter] // task ids the handler ran, with counts
	started bool
}

func newWorkerSystem(o Options, store string) System {
	return &workerSystem{errandSystem: newErrandSystem(o, store).(*errandSystem)}
}

func (w *workerSystem) Name() string {
	return "errand-worker-" + map[string]string{"sqlite": "sqlite", "postgres": "pg"}[w.store]
}

// Supports: the workloads of a worker pool. Burn-down and idle run in the
// default run; steady (30 s windows in full mode) when --systems names the
// system or in quick mode, as for the in-process systems, to keep the full
// run within its 20 minutes. Insert and push are the errand system's,
// whatever serves the queue.
func (w *workerSystem) Supports(workload string) bool {
	switch workload {
	case "burndown", "idle":
		return true
	case "steady":
		return w.o.Quick || slices.Contains(w.o.Named, w.Name())
	}
	return false
}

func (w *workerSystem) Settings(workload string, tuned bool) string {
	wk := fmt.Sprintf("push queue, target {\"function\": %q} → %d worker connections × %d slots (package worker, this process, WebSocket), instance maxInFlight %d",
		workerGroup+"/"+workerFunction, workerConns, workerSlots, w.tun.MaxInFlight)
	switch workload {
	case "burndown":
		return fmt.Sprintf("%s; %s; preload %d clients × 100 into the paused queue, then PATCH paused=false; done = handler ran every task and the queue's counts show none scheduled/running/retrying", w.storeNote(), wk, w.tun.InsertClients)
	case "steady":
		return fmt.Sprintf("%s; %s; producers %d × add 100; latency = add → handler start; done = handler returned (store checked after the window)", w.storeNote(), wk, w.tun.InsertClients)
	case "idle":
		return w.storeNote() + "; " + wk + "; no poll: the dispatcher wakes on the add; settle 5 ms, period 20 ms"
	}
	return ""
}

// Setup starts the server (errand.go), then the workers, and waits until a
// warm-up task has run through them: the workers are connected.
func (w *workerSystem) Setup(ctx context.Context) error {
	if err := w.errandSystem.Setup(ctx); err != nil {
		return err
	}
	w.seen.Store(newIDCounter(1 << 16))
	p := w.p
	handler := func(_ context.Context, t *worker.Task) (json.RawMessage, error) {
		p.onStart(payloadTime(t.Payload))
		w.seen.Load().add(t.ID)
		p.onFinish()
		return nil, nil
	}
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	w.stop, w.done = cancel, make(chan error, workerConns)
	for range workerConns {
		go func() {
			w.done <- worker.Serve(wctx, w.base, errandInstance, workerGroup,
				worker.Options{APIKey: w.key, Slots: workerSlots, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))},
				map[string]worker.Handler{workerFunction: handler})
		}()
	}
	w.started = true
	if err := w.functionQueue(ctx, "warm", false); err != nil {
		return err
	}
	p.drainIdle()
	if _, err := w.add(ctx, "warm", 1); err != nil {
		return err
	}
	if _, err := p.waitIdle(ctx, 30*time.Second); err != nil {
		return fmt.Errorf("the workers did not connect: %w", err)
	}
	if _, err := w.waitSettled(ctx, "warm", 5*time.Millisecond, 30*time.Second); err != nil {
		return err
	}
	// The counters start at zero for the workload.
	w.p.started.Store(0)
	w.p.finished.Store(0)
	w.seen.Store(newIDCounter(1 << 16))
	return nil
}

// Teardown stops the workers (their attempts end first), then the server.
func (w *workerSystem) Teardown(ctx context.Context) error {
	var err error
	if w.started {
		w.stop()
		for range workerConns {
			if e := <-w.done; e != nil && err == nil {
				err = fmt.Errorf("worker: %w", e)
			}
		}
		w.started = false
	}
	if e := w.errandSystem.Teardown(ctx); e != nil && err == nil {
		err = e
	}
	return err
}

// functionQueue makes a push queue whose target is the workers' function.
func (w *workerSystem) functionQueue(ctx context.Context, name string, paused bool) error {
	mode := errandapi.ModePush
	_, err := w.api.CreateQueue(ctx, errandInstance, name, errandapi.QueueRequest{Mode: &mode, Paused: &paused,
		Target: errandapi.Value(errandapi.Target{Function: workerGroup + "/" + workerFunction})})
	return err
}

func (w *workerSystem) BurnDown(ctx context.Context, n int) (time.Duration, error) {
	if err := w.functionQueue(ctx, "burn", true); err != nil {
		return 0, err
	}
	ids, err := w.addMany(ctx, "burn", n, 100, w.tun.InsertClients)
	if err != nil {
		return 0, fmt.Errorf("preload: %w", err)
	}
	mark := w.markCPU()
	start := time.Now()
	off := false
	if _, err := w.api.UpdateQueue(ctx, errandInstance, "burn", errandapi.QueueRequest{Paused: &off}); err != nil {
		return 0, err
	}
	if err := waitCount(ctx, &w.p.finished, int64(n), 15*time.Minute); err != nil {
		return 0, fmt.Errorf("%w (%d of %d worked)", err, w.p.finished.Load(), n)
	}
	end, err := w.waitSettled(ctx, "burn", 2*time.Millisecond, time.Minute)
	if err != nil {
		return 0, err
	}
	d := end.Sub(start)
	logf("  %s burndown: %s", w.Name(), w.cpuNote(n, mark, d))
	return d, sameIDs("worker", w.seen.Load().snapshot(), ids)
}

func (w *workerSystem) Steady(ctx context.Context, d time.Duration, maxBacklog int) (SteadyResult, error) {
	if err := w.functionQueue(ctx, "steady", false); err != nil {
		return SteadyResult{}, err
	}
	p := w.p
	start := time.Now()
	end := start.Add(d)
	p.recordLatencies(latencyCapacity(d), end)
	pctx, cancel := context.WithDeadline(ctx, end)
	defer cancel()
	var added atomic.Int64
	var mu sync.Mutex
	var ids []string
	var wg sync.WaitGroup
	errs := make(chan error, w.tun.InsertClients)
	for range w.tun.InsertClients {
		wg.Go(func() {
			for backlogGate(pctx, &added, p, int64(maxBacklog)) {
				added.Add(100)
				got, err := w.add(ctx, "steady", 100)
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				ids = append(ids, got...)
				mu.Unlock()
			}
		})
	}
	<-pctx.Done()
	worked := p.finished.Load()
	elapsed := time.Since(start)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return SteadyResult{}, err
	}
	if ctx.Err() != nil {
		return SteadyResult{}, ctx.Err()
	}
	// Untimed: the rest drains; every task ran once and the store agrees.
	if err := waitCount(ctx, &p.finished, int64(len(ids)), 2*time.Minute); err != nil {
		return SteadyResult{}, fmt.Errorf("after the window: %w (%d of %d done)", err, p.finished.Load(), len(ids))
	}
	if _, err := w.waitSettled(ctx, "steady", 10*time.Millisecond, time.Minute); err != nil {
		return SteadyResult{}, err
	}
	if err := sameIDs("worker", w.seen.Load().snapshot(), ids); err != nil {
		return SteadyResult{}, err
	}
	return SteadyResult{Worked: int(worked), Elapsed: elapsed, Latency: p.latencies()}, nil
}

// --- idle ------------------------------------------------------------------------

type workerIdle struct {
	w       *workerSystem
	samples int
}

func (w *workerSystem) Idle(ctx context.Context, tuned bool) (IdleProbe, error) {
	if err := w.functionQueue(ctx, "idle", false); err != nil {
		return nil, err
	}
	return &workerIdle{w: w}, nil
}

func (i *workerIdle) Once(ctx context.Context) (time.Duration, error) {
	i.w.p.drainIdle()
	if _, err := i.w.add(ctx, "idle", 1); err != nil {
		return 0, err
	}
	i.samples++
	return i.w.p.waitIdle(ctx, 30*time.Second)
}

// Pacing: nothing polls (the dispatcher wakes on the add and hands the
// attempt to a connected worker); settle lets the outcome write finish.
func (i *workerIdle) Pacing() (time.Duration, time.Duration) {
	return 5 * time.Millisecond, 20 * time.Millisecond
}

// Close checks that every sample ran exactly once.
func (i *workerIdle) Close(ctx context.Context) error {
	_, err := i.w.waitSettled(ctx, "idle", 10*time.Millisecond, 30*time.Second)
	if got := i.w.seen.Load().snapshot(); err == nil && len(got) != i.samples {
		err = fmt.Errorf("idle: %d tasks added, %d ran", i.samples, len(got))
	}
	if err == nil {
		for id, c := range i.w.seen.Load().snapshot() {
			if c != 1 {
				err = fmt.Errorf("idle: task %s ran %d times", id, c)
				break
			}
		}
	}
	if err != nil {
		logf("  %s idle: %v", i.w.Name(), err)
	}
	return err
}

var (
	_ System      = (*workerSystem)(nil)
	_ RSSReporter = (*workerSystem)(nil)
	_ Preflighter = (*workerSystem)(nil)
	_ Supporter   = (*workerSystem)(nil)
	_ untunedIdle = (*workerSystem)(nil)
	_ RSSResetter = (*workerSystem)(nil)
)
