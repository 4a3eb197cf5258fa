package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"
)

// System is one queue under test. The harness calls Setup before every
// workload run (every round), then exactly one workload method, then
// Teardown, so each run starts on a fresh store. Nothing else runs at the same
// time. A System may live in this process (a Go library such as River or
// Asynq) or drive an external process (errand serve over HTTP): the harness
// only sees this interface.
//
// Latency is always "add → handler start": measured from just before the add
// call (the insert time travels in the task's payload) to the moment the
// handler (or, for a push system, the webhook receiver in this process) starts
// with the task. All clocks are this process's clock.
type System interface {
	Name() string  // e.g. "river-pg"
	Store() string // e.g. "postgresql"
	// Settings describes the settings in force for a workload, for the
	// report ("tuned" chooses the tuned idle settings over the defaults).
	Settings(workload string, tuned bool) string

	// Setup creates a fresh store: a new database, schema, keys or process.
	Setup(ctx context.Context) error
	// Teardown removes everything Setup made. It is called even if the
	// workload failed.
	Teardown(ctx context.Context) error

	// Insert adds n no-op tasks in batches of batch (as the system's fastest
	// honest client path allows) with nothing working them, and returns the
	// time the adds took.
	Insert(ctx context.Context, n, batch int) (time.Duration, error)
	// BurnDown adds n no-op tasks (not timed, any fast path), then starts the
	// workers and returns the time from start until all n are recorded as
	// completed in the store.
	BurnDown(ctx context.Context, n int) (time.Duration, error)
	// Steady adds and works at the same time for d: producers add as fast as
	// they can while at most maxBacklog added tasks have not started. It
	// returns the tasks completed within d and the add→start latency of the
	// tasks that started within d.
	Steady(ctx context.Context, d time.Duration, maxBacklog int) (SteadyResult, error)
	// Idle starts the workers with default (tuned=false) or tuned settings
	// on an empty queue and returns a probe that adds one task at a time.
	Idle(ctx context.Context, tuned bool) (IdleProbe, error)
}

// SteadyResult is what Steady measured.
type SteadyResult struct {
	Worked  int             // tasks completed within the window
	Elapsed time.Duration   // the window actually measured (≈ d)
	Latency []time.Duration // add → handler start, tasks started within the window
}

// IdleProbe adds one task to an idle system and waits until its handler starts.
type IdleProbe interface {
	// Once adds one task and returns add → handler start.
	Once(ctx context.Context) (time.Duration, error)
	// Pacing tells the harness how to space the samples: after each one it
	// waits settle plus a uniformly random time in [0, period).
	//
	// period is the period of the timer that governs pickup of a task
	// arriving at an idle system (its poll interval), so that each task
	// arrives at a random phase of that timer, as a task arriving at a random
	// moment would. settle is how long the system takes to become idle
	// again after a task (River: its FetchCooldown, within which a second
	// insert's wake-up notification is suppressed), so that each sample
	// measures an idle system rather than two tasks in quick succession.
	Pacing() (settle, period time.Duration)
	Close(ctx context.Context) error
}

// RSSReporter is implemented by systems whose workers run in another process
// (errand serve). Systems that run inside this process are measured by the
// harness itself (peak RSS of this process during the run).
type RSSReporter interface {
	PeakRSSMB() float64
}

// systemFactories lists every system the harness knows, in run order.
var systemFactories = []struct {
	name string
	make func(Options) System
}{
	{"river-pg", newRiverPG},
	{"river-sqlite", newRiverSQLite},
	{"asynq", newAsynq},
	{"errand-sqlite", func(o Options) System { return newErrandSystem(o, "sqlite") }},
	{"errand-sqlite-full", newErrandSQLiteFull},
	{"errand-pg", func(o Options) System { return newErrandSystem(o, "postgres") }},
	{"errand-inproc-sqlite", func(o Options) System { return newInprocSystem(o, "sqlite") }},
	{"errand-inproc-pg", func(o Options) System { return newInprocSystem(o, "postgres") }},
	{"errand-worker-sqlite", func(o Options) System { return newWorkerSystem(o, "sqlite") }},
	{"errand-worker-pg", func(o Options) System { return newWorkerSystem(o, "postgres") }},
	{"raw-http", newRawHTTP},
	{"raw-http-wide", newRawHTTPWide},
}

// Pusher is implemented by systems that deliver to a webhook (errand) or
// measure the receiver itself (raw-http): the push workload adds n tasks
// untimed, then times their delivery to the loopback webhookReceiver.
type Pusher interface {
	Push(ctx context.Context, n int) (time.Duration, error)
}

// Backlogger is implemented by systems that run the backlog workload: a
// large store of tasks scheduled in the future, then the steady workload on
// the same store.
type Backlogger interface {
	// AddFuture adds n no-op tasks scheduled futureDelay from now — far
	// enough that none becomes due during the run — by the system's fastest
	// honest bulk path, into the queue Steady works, and checks (untimed)
	// that the store holds them as scheduled. The harness does not time it as
	// part of the result (it logs how long it took). Steady, called next on
	// the same store, must neither work these tasks nor count them, and must
	// check afterwards that they are all still there.
	AddFuture(ctx context.Context, n int) error
}

// futureDelay is how far in the future the backlog workload schedules its
// tasks: a day, so that none becomes due during any run.
const futureDelay = 24 * time.Hour

// RSSResetter is implemented by systems whose worker process is not this
// one (errand serve): it resets that process's peak RSS (VmHWM), so that the
// backlog workload reports the peak of its steady window, not of its
// preload. This process's own peak is reset by resetPeakRSS.
type RSSResetter interface {
	ResetPeakRSS()
}

// Supporter is implemented by systems that run only some workloads
// (raw-http runs push only). Without it a system runs every workload its
// methods allow (push needs Pusher, backlog needs Backlogger, nodes needs
// NodeScaler).
type Supporter interface {
	Supports(workload string) bool
}

// supports reports whether s runs workload.
func supports(s System, workload string) bool {
	if sp, ok := s.(Supporter); ok {
		return sp.Supports(workload)
	}
	switch workload {
	case "push":
		_, ok := s.(Pusher)
		return ok
	case "backlog":
		_, ok := s.(Backlogger)
		return ok
	case "nodes":
		_, ok := s.(NodeScaler)
		return ok
	}
	return true
}

// Preflighter is implemented by systems that check, once before any run,
// that they can run here (errand builds its binary; errand-pg checks that
// errand serve accepts a postgres:// store). An error skips the system for
// the whole run; skipError marks the ones that are expected (say so, do not
// fail).
type Preflighter interface {
	Preflight(ctx context.Context) error
}

type skipError struct{ msg string }

func (e *skipError) Error() string { return e.msg }

func skipf(format string, args ...any) error { return &skipError{fmt.Sprintf(format, args...)} }

// Options are the harness-wide settings a system may need.
type Options struct {
	PGAdminURL string // a database on the server where fresh databases are created
	RedisAddr  string
	RedisDB    int
	Quick      bool
	Named      []string // the systems --systems named ("" = the default set)

	ErrandBin      string       // a prebuilt errand binary; "" = build ErrandRoot's ./cmd/errand
	ErrandRoot     string       // the errand repository (default "..", the harness lives in bench/)
	ErrandTuning   errandTuning // client and instance settings of the errand systems
	RawConcurrency int          // raw-http: concurrent POSTs
}

// probe is the instrumentation shared by in-process handlers: count starts
// and finishes, record add→start latencies, signal idle probes.
type probe struct {
	started  atomic.Int64
	finished atomic.Int64

	// latency recording for Steady: only tasks starting before until.
	until atomic.Int64 // unix nanos; 0 = do not record
	lat   []int64
	latN  atomic.Int64

	// idle: the latency of the task that just started.
	idle chan time.Duration
}

func newProbe() *probe { return &probe{idle: make(chan time.Duration, 16)} }

// onStart is called first thing in a handler with the add time carried in
// the task's payload (unix nanos).
func (p *probe) onStart(addedAt int64) {
	now := time.Now().UnixNano()
	p.started.Add(1)
	if u := p.until.Load(); u != 0 && now < u && p.lat != nil {
		if i := p.latN.Add(1) - 1; i < int64(len(p.lat)) {
			p.lat[i] = now - addedAt
		}
	}
	select {
	case p.idle <- time.Duration(now - addedAt):
	default:
	}
}

func (p *probe) onFinish() { p.finished.Add(1) }

// recordLatencies makes room for latencies of tasks started before until.
func (p *probe) recordLatencies(capacity int, until time.Time) {
	p.lat = make([]int64, capacity)
	p.latN.Store(0)
	p.until.Store(until.UnixNano())
}

func (p *probe) latencies() []time.Duration {
	n := min(p.latN.Load(), int64(len(p.lat)))
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = time.Duration(p.lat[i])
	}
	return out
}

// drainIdle empties stale idle signals before a new sample.
func (p *probe) drainIdle() {
	for {
		select {
		case <-p.idle:
		default:
			return
		}
	}
}

// waitIdle waits for the next handler start.
func (p *probe) waitIdle(ctx context.Context, timeout time.Duration) (time.Duration, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case d := <-p.idle:
		return d, nil
	case <-t.C:
		return 0, errTimeout("idle task did not start within " + timeout.String())
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

type errTimeout string

func (e errTimeout) Error() string { return string(e) }

// backlogGate lets producers add only while fewer than max added tasks have
// not started.
func backlogGate(ctx context.Context, added *atomic.Int64, p *probe, max int64) bool {
	for added.Load()-p.started.Load() >= max {
		if ctx.Err() != nil {
			return false
		}
		time.Sleep(200 * time.Microsecond)
	}
	return ctx.Err() == nil
}

// jitter returns a uniformly random duration in [0, d).
func jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return time.Duration(rand.Int64N(int64(d)))
}
