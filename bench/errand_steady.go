package main

// errand_steady.go holds errandSystem's steady, backlog and idle
// workloads.

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/errandhq/errand/errandapi"
)

// steadyQueue is the queue Steady works (and AddFuture fills first): made
// once per run, a push queue to the receiver, or a pull queue with
// --errand-tuning steadyMode=pull.
func (e *errandSystem) steadyQueue(ctx context.Context) (string, error) {
	const q = "steady"
	if e.steadyMade {
		return q, nil
	}
	mode := errandapi.ModePush
	if e.tun.SteadyMode == "pull" {
		mode = errandapi.ModePull
	}
	if err := e.createQueue(ctx, q, mode, false); err != nil {
		return "", err
	}
	e.steadyMade = true
	return q, nil
}

// AddFuture adds n tasks with "delay": futureDelay to the steady queue (not
// paused: the tasks are not due), in arrays of 100 from InsertClients
// concurrent clients like the insert workload, and checks that the queue's
// counts show n scheduled.
func (e *errandSystem) AddFuture(ctx context.Context, n int) error {
	q, err := e.steadyQueue(ctx)
	if err != nil {
		return err
	}
	delay := futureDelay.Seconds()
	mark := e.markCPU()
	start := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, e.tun.InsertClients)
	for range e.tun.InsertClients {
		wg.Go(func() {
			for {
				from := next.Add(100) - 100
				if from >= int64(n) {
					return
				}
				if _, err := e.addWith(ctx, q, int(min(100, int64(n)-from)), &delay); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	logf("  %s backlog preload: %s", e.Name(), e.cpuNote(n, mark, time.Since(start)))
	// Every add answered ok per task; errand's counts stop at 10,000.
	c, capped, err := e.countsCapped(ctx, q)
	if err != nil {
		return err
	}
	if !scheduledIs(c, capped, n) || c["running"]+c["leased"]+c["retrying"]+c["succeeded"]+c["failed"]+c["cancelled"] != 0 {
		return fmt.Errorf("after adding %d future tasks, queue %s counts %v (capped: %v)", n, q, c, capped)
	}
	e.future = n
	return nil
}

func (e *errandSystem) Steady(ctx context.Context, d time.Duration, maxBacklog int) (SteadyResult, error) {
	pull := e.tun.SteadyMode == "pull"
	q, err := e.steadyQueue(ctx)
	if err != nil {
		return SteadyResult{}, err
	}
	p := e.p
	mark := e.markCPU()
	start := time.Now()
	end := start.Add(d)
	p.recordLatencies(latencyCapacity(d), end)
	pctx, cancel := context.WithDeadline(ctx, end)
	defer cancel()

	var workersDone chan error
	var acks *idCounter
	var badPayload atomic.Pointer[error] // a leased task without {"t": …}
	if pull {
		acks = newIDCounter(int(d.Seconds() * 10_000))
		wctx, wcancel := context.WithCancel(ctx)
		defer wcancel()
		workersDone = make(chan error, 1)
		var stopping atomic.Bool
		go func() {
			workersDone <- e.pullWorkers(wctx, q, 1,
				stopping.Load,
				func(t errandapi.LeasedTask) {
					at, err := leasedAt(t)
					if err != nil {
						badPayload.CompareAndSwap(nil, &err)
					}
					p.onStart(at)
				},
				func(t errandapi.LeasedTask) { p.onFinish(); acks.add(t.ID) })
		}()
		defer func() { stopping.Store(true); wcancel(); <-workersDone }()
	}

	var added atomic.Int64
	var mu sync.Mutex
	var ids []string
	var wg sync.WaitGroup
	errs := make(chan error, producers(e.tun.InsertClients))
	for range producers(e.tun.InsertClients) {
		wg.Go(func() {
			// The window closes the gate; a batch under way finishes.
			for backlogGate(pctx, &added, p, int64(maxBacklog)) {
				added.Add(int64(steadyCallSize))
				got, err := e.add(ctx, q, steadyCallSize)
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
	// CPU per task of the window: a figure that a busy machine moves less
	// than the throughput.
	logf("  %s steady window: %s", e.Name(), e.cpuNote(int(max(worked, 1)), mark, elapsed))
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return SteadyResult{}, err
	}
	if ctx.Err() != nil {
		return SteadyResult{}, ctx.Err()
	}
	if err := badPayload.Load(); err != nil {
		return SteadyResult{}, *err
	}
	// Untimed: let the rest drain, then check every task was done once.
	if err := waitCount(ctx, &p.finished, int64(len(ids)), 2*time.Minute); err != nil {
		return SteadyResult{}, fmt.Errorf("after the window: %w (%d of %d done)", err, p.finished.Load(), len(ids))
	}
	if _, err := e.waitSettledBut(ctx, q, e.future, 10*time.Millisecond, time.Minute); err != nil {
		return SteadyResult{}, err
	}
	seen := e.hook.ids()
	what := "receiver"
	if pull {
		seen, what = acks.snapshot(), "acked"
	}
	if err := sameIDs(what, seen, ids); err != nil {
		return SteadyResult{}, err
	}
	return SteadyResult{Worked: int(worked), Elapsed: elapsed, Latency: p.latencies()}, nil
}

// --- idle ------------------------------------------------------------------------

type errandIdle struct {
	e       *errandSystem
	samples int64
}

func (e *errandSystem) Idle(ctx context.Context, tuned bool) (IdleProbe, error) {
	if err := e.createQueue(ctx, "idle", "push", false); err != nil {
		return nil, err
	}
	return &errandIdle{e: e}, nil
}

func (i *errandIdle) Once(ctx context.Context) (time.Duration, error) {
	if err := i.check(); err != nil {
		return 0, err
	}
	i.e.p.drainIdle()
	if _, err := i.e.add(ctx, "idle", 1); err != nil {
		return 0, err
	}
	i.samples++
	return i.e.p.waitIdle(ctx, 30*time.Second)
}

// check: every sample so far was delivered exactly once.
func (i *errandIdle) check() error {
	if got, distinct := i.e.hook.count(); got != i.samples || distinct != i.samples {
		return fmt.Errorf("idle: %d tasks added, %d deliveries of %d distinct tasks", i.samples, got, distinct)
	}
	return nil
}

// Pacing: errand has no poll timer (the dispatcher wakes on add), so the
// period is small; settle leaves time for the previous outcome's write.
func (i *errandIdle) Pacing() (time.Duration, time.Duration) {
	return 5 * time.Millisecond, 20 * time.Millisecond
}

func (i *errandIdle) Close(ctx context.Context) error {
	_, err := i.e.waitSettled(ctx, "idle", 10*time.Millisecond, 30*time.Second)
	if err == nil {
		err = i.check()
	}
	if err != nil {
		logf("  %s idle: %v", i.e.Name(), err) // the harness does not read Close's error
	}
	return err
}
