package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/errandhq/errand/embedded"
)

// inprocSystem is errand's engine embedded in this process
// (github.com/errandhq/errand/embedded), as a Go program would run it beside
// River or Asynq: tasks are added with Engine.Add and worked by an in-process
// function worker (a push queue whose target is {"function": "bench/noop"}),
// with no HTTP anywhere. Every state is written to the store exactly as
// `errand serve` writes it.
type inprocSystem struct {
	o     Options
	store string // "sqlite" or "postgres"

	dir, dbName string
	e           *embedded.Engine
	p           *probe
	future      int // AddFuture's tasks, all still scheduled
}

const (
	inprocInstance = "bench"
	inprocFunction = "bench/noop"
	inprocClients  = 4 // concurrent adders, as for errand over HTTP
)

func newInprocSystem(o Options, store string) System { return &inprocSystem{o: o, store: store} }

// Supports: the in-process function worker runs burn-down and idle in the
// default run (the "later the in-process function worker too");
// steady and backlog, 30 s windows each, and insert (Engine.Add, beside
// River's in-process insert; the default run's insert is errand's over
// HTTP) only when --systems names it, to keep the full run within its 20
// minutes.
func (s *inprocSystem) Supports(workload string) bool {
	switch workload {
	case "burndown", "idle":
		return true
	case "steady", "backlog", "insert":
		return slices.Contains(s.o.Named, s.Name())
	}
	return false
}

func (s *inprocSystem) Name() string {
	if s.store == "sqlite" {
		return "errand-inproc-sqlite"
	}
	return "errand-inproc-pg"
}

func (s *inprocSystem) Store() string {
	if s.store == "sqlite" {
		return "sqlite"
	}
	return "postgresql"
}

func (s *inprocSystem) Settings(workload string, tuned bool) string {
	st := "errand embedded in the harness process, SQLite file in a temp dir, synchronous NORMAL (the default)"
	if s.store == "postgres" {
		st = "errand embedded in the harness process, fresh PostgreSQL database per run, pgx pool default (16 conns)"
	}
	w := fmt.Sprintf("push queue → in-process function worker (target {\"function\": %q}), instance maxInFlight %d", inprocFunction, s.o.ErrandTuning.MaxInFlight)
	switch workload {
	case "insert":
		return st + "; Engine.Add of " + strconv.Itoa(insertCallSize) + " from " + strconv.Itoa(inprocClients) + " concurrent callers into a paused queue"
	case "burndown":
		return st + "; preload into a paused queue, then resume; " + w + "; done = queue counts show nothing scheduled, running or retrying"
	case "steady", "backlog":
		return st + "; " + w + "; producers " + strconv.Itoa(producers(inprocClients)) + " × Add " + strconv.Itoa(steadyCallSize) + "; done = handler returned"
	case "idle":
		return st + "; " + w + "; no poll: the dispatcher wakes on the add"
	}
	return st
}

func (s *inprocSystem) Setup(ctx context.Context) error {
	var err error
	s.dir, err = os.MkdirTemp("", "bench-inproc-")
	if err != nil {
		return err
	}
	storeURL := "sqlite://" + filepath.Join(s.dir, "errand.db")
	if s.store == "postgres" {
		if s.dbName, storeURL, err = freshDatabase(ctx, s.o.PGAdminURL, "bench_inproc"); err != nil {
			return err
		}
	}
	s.e, err = embedded.Open(ctx, embedded.Options{
		Store: storeURL, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		return err
	}
	s.p = newProbe()
	p := s.p
	if err := s.e.Handle(inprocFunction, func(_ context.Context, t *embedded.Task) (json.RawMessage, error) {
		p.onStart(payloadTime(t.Payload))
		p.onFinish()
		return nil, nil
	}); err != nil {
		return err
	}
	s.future = 0
	if err := s.e.CreateInstance(ctx, inprocInstance); err != nil {
		return err
	}
	// The instance's maxInFlight is the function worker's concurrency
	// (--errand-tuning maxInFlight; River runs 2,000 workers, Asynq 100).
	n := s.o.ErrandTuning.MaxInFlight
	return s.e.UpdateSettings(ctx, inprocInstance, embedded.Settings{MaxInFlight: &n})
}

func (s *inprocSystem) Teardown(ctx context.Context) error {
	var errs []error
	if s.e != nil {
		errs = append(errs, s.e.Close())
		s.e = nil
	}
	if s.dbName != "" {
		errs = append(errs, pgAdmin(ctx, s.o.PGAdminURL, "DROP DATABASE IF EXISTS "+s.dbName+" WITH (FORCE)"))
		s.dbName = ""
	}
	if s.dir != "" {
		errs = append(errs, os.RemoveAll(s.dir))
		s.dir = ""
	}
	return errors.Join(errs...)
}

// payload carries the add time (unix nanos) to the handler.
func payloadOf(at int64) json.RawMessage {
	return json.RawMessage(`{"t":` + strconv.FormatInt(at, 10) + `}`)
}

// payloadTime reads payloadOf's time back (0 if it is not there).
func payloadTime(b json.RawMessage) int64 {
	if len(b) < 7 {
		return 0
	}
	n, _ := strconv.ParseInt(string(b[5:len(b)-1]), 10, 64)
	return n
}

func (s *inprocSystem) queue(ctx context.Context, name string, paused bool) error {
	return s.e.CreateQueue(ctx, inprocInstance, name, embedded.QueueOptions{Function: inprocFunction, Paused: paused})
}

// addMany adds n tasks in batches of batch from clients concurrent callers;
// with delay they are scheduled that far ahead.
func (s *inprocSystem) addMany(ctx context.Context, queue string, n, batch, clients int, delay time.Duration) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for range clients {
		wg.Go(func() {
			ts := make([]embedded.NewTask, 0, batch)
			for {
				from := next.Add(int64(batch)) - int64(batch)
				if from >= int64(n) {
					return
				}
				ts = ts[:0]
				at := time.Now().UnixNano()
				for range min(int64(batch), int64(n)-from) {
					ts = append(ts, embedded.NewTask{Payload: payloadOf(at), Delay: delay})
				}
				res, err := s.e.Add(ctx, inprocInstance, queue, ts...)
				if err == nil {
					for _, r := range res {
						if r.Err != nil {
							err = r.Err
							break
						}
					}
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// expectCounts checks (untimed) the queue's counts of scheduled tasks and of
// unfinished ones.
func (s *inprocSystem) expectScheduled(ctx context.Context, queue string, n int) error {
	q, err := s.e.Queue(ctx, inprocInstance, queue)
	if err != nil {
		return err
	}
	if got := q.Counts["scheduled"]; got != min(n, 10_000) {
		return fmt.Errorf("queue %s holds %d scheduled tasks, want %d", queue, got, n)
	}
	return nil
}

func (s *inprocSystem) Insert(ctx context.Context, n, batch int) (time.Duration, error) {
	if err := s.queue(ctx, "insert", true); err != nil {
		return 0, err
	}
	start := time.Now()
	if err := s.addMany(ctx, "insert", n, batch, inprocClients, 0); err != nil {
		return 0, err
	}
	d := time.Since(start)
	return d, s.expectScheduled(ctx, "insert", n)
}

// settled waits until the queue has nothing running or retrying and only
// its future tasks scheduled (errand's counts stop at 10,000).
func (s *inprocSystem) settled(ctx context.Context, queue string, future int, timeout time.Duration) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	for {
		q, err := s.e.Queue(ctx, inprocInstance, queue)
		if err != nil {
			return time.Time{}, err
		}
		if q.Counts["running"]+q.Counts["retrying"] == 0 && q.Counts["scheduled"] == min(future, 10_000) {
			return time.Now(), nil
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("queue %s not settled: %v (future %d)", queue, q.Counts, future)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func (s *inprocSystem) BurnDown(ctx context.Context, n int) (time.Duration, error) {
	if err := s.queue(ctx, "burn", true); err != nil {
		return 0, err
	}
	if err := s.addMany(ctx, "burn", n, 100, inprocClients, 0); err != nil {
		return 0, fmt.Errorf("preload: %w", err)
	}
	if err := s.expectScheduled(ctx, "burn", n); err != nil {
		return 0, err
	}
	mark := markSelf(s.dbName)
	start := time.Now()
	if err := s.e.SetPaused(ctx, inprocInstance, "burn", false); err != nil {
		return 0, err
	}
	if err := waitCount(ctx, &s.p.finished, int64(n), 15*time.Minute); err != nil {
		return 0, fmt.Errorf("%w (%d of %d worked)", err, s.p.finished.Load(), n)
	}
	end, err := s.settled(ctx, "burn", 0, time.Minute)
	if err != nil {
		return 0, err
	}
	logf("  %s burndown: %s", s.Name(), selfCPUNote("errand and the harness", "task", n, mark, end.Sub(start), s.dbName))
	q, err := s.e.Queue(ctx, inprocInstance, "burn")
	if err != nil {
		return 0, err
	}
	if q.Counts["failed"] != 0 || s.p.started.Load() != int64(n) {
		return 0, fmt.Errorf("burn-down: %d started for %d tasks, counts %v", s.p.started.Load(), n, q.Counts)
	}
	return end.Sub(start), nil
}

// steadyQueue is the queue Steady works (and AddFuture fills).
const inprocSteadyQueue = "steady"

func (s *inprocSystem) ensureSteadyQueue(ctx context.Context) error {
	err := s.queue(ctx, inprocSteadyQueue, false)
	var pe *embedded.Error
	if errors.As(err, &pe) && pe.Code == "QUEUE_EXISTS" {
		return nil
	}
	return err
}

// AddFuture adds n tasks scheduled a day ahead to the steady queue.
func (s *inprocSystem) AddFuture(ctx context.Context, n int) error {
	if err := s.ensureSteadyQueue(ctx); err != nil {
		return err
	}
	if err := s.addMany(ctx, inprocSteadyQueue, n, 100, inprocClients, 24*time.Hour); err != nil {
		return err
	}
	s.future += n
	return s.expectScheduled(ctx, inprocSteadyQueue, s.future)
}

func (s *inprocSystem) Steady(ctx context.Context, d time.Duration, maxBacklog int) (SteadyResult, error) {
	if err := s.ensureSteadyQueue(ctx); err != nil {
		return SteadyResult{}, err
	}
	p := s.p
	before := p.finished.Load()
	mark := markSelf(s.dbName)
	start := time.Now()
	end := start.Add(d)
	p.recordLatencies(latencyCapacity(d), end)
	pctx, cancel := context.WithDeadline(ctx, end)
	defer cancel()
	var added atomic.Int64
	added.Store(p.started.Load())
	var wg sync.WaitGroup
	errs := make(chan error, producers(inprocClients))
	for range producers(inprocClients) {
		wg.Go(func() {
			ts := make([]embedded.NewTask, steadyCallSize)
			for backlogGate(pctx, &added, p, int64(maxBacklog)) {
				added.Add(int64(steadyCallSize))
				at := time.Now().UnixNano()
				for i := range ts {
					ts[i] = embedded.NewTask{Payload: payloadOf(at)}
				}
				if _, err := s.e.Add(ctx, inprocInstance, inprocSteadyQueue, ts...); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	<-pctx.Done()
	worked := p.finished.Load() - before
	elapsed := time.Since(start)
	logf("  %s steady window: %s", s.Name(), selfCPUNote("errand and the harness", "task", int(max(worked, 1)), mark, elapsed, s.dbName))
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return SteadyResult{}, err
	}
	if ctx.Err() != nil {
		return SteadyResult{}, ctx.Err()
	}
	// Untimed: the steady tasks drain and the future ones are untouched.
	if _, err := s.settled(ctx, inprocSteadyQueue, s.future, time.Minute); err != nil {
		return SteadyResult{}, fmt.Errorf("after the window: %w", err)
	}
	return SteadyResult{Worked: int(worked), Elapsed: elapsed, Latency: p.latencies()}, nil
}

type inprocIdle struct{ s *inprocSystem }

func (s *inprocSystem) Idle(ctx context.Context, tuned bool) (IdleProbe, error) {
	if err := s.queue(ctx, "idle", false); err != nil {
		return nil, err
	}
	return &inprocIdle{s: s}, nil
}

func (i *inprocIdle) Once(ctx context.Context) (time.Duration, error) {
	i.s.p.drainIdle()
	if _, err := i.s.e.Add(ctx, inprocInstance, "idle", embedded.NewTask{Payload: payloadOf(time.Now().UnixNano())}); err != nil {
		return 0, err
	}
	return i.s.p.waitIdle(ctx, 30*time.Second)
}

// Pacing: nothing polls; settle lets the outcome write finish.
func (i *inprocIdle) Pacing() (time.Duration, time.Duration) {
	return 5 * time.Millisecond, 20 * time.Millisecond
}

func (i *inprocIdle) Close(ctx context.Context) error { return nil }

// idleUntuned: the dispatcher wakes on the add (see untunedIdle).
func (s *inprocSystem) idleUntuned() {}
