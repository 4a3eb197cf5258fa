// Package engine is errand's application core: the operations the API,
// console, CLI and MCP call (instances, queues, tasks, leases), and the
// long-lived services that move tasks through their lifecycle (dispatcher,
// lease rescuer, retention cleaner). Each service has Start/Stop, a logger and
// the engine's clock.
package engine

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/errandhq/errand/internal/clock"
	"github.com/errandhq/errand/internal/deliver"
	"github.com/errandhq/errand/internal/id"
	"github.com/errandhq/errand/internal/metrics"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// Config configures an Engine. Zero values take the defaults noted.
type Config struct {
	Store  store.Store
	Clock  clock.Clock  // default clock.Real{}
	Logger *slog.Logger // default slog.Default()
	// Dev is the emulator: instances are created on first use.
	Dev bool
	// URLRules vet webhook URLs when queues and tasks are saved.
	URLRules task.URLRules
	// CleanEvery is how often the retention cleaner runs (default 1 min).
	CleanEvery time.Duration
	// Deliverer carries push attempts to their targets (a deliver.Mux of
	// webhook, function and channel deliverers); nil fails every attempt.
	Deliverer deliver.Deliverer
	// DatabaseClock sets the engine's clock by the store's own (when the
	// store has one, as PostgreSQL does), re-read every 30 s: nodes sharing
	// a database then agree on time even if their clocks drift.
	DatabaseClock bool
	// Metrics receives the engine's counts (nil: a fresh set).
	Metrics *metrics.Metrics
	// Writers is how many outcome batches (push results, pull acks) may be
	// written at once. Default: 1 on a store with a single writer (SQLite,
	// where more would only queue), 4 on a shared store (a store.Notifier,
	// PostgreSQL), whose connections write in parallel.
	Writers int
	// Backstop bounds how long a sleeping service waits without a wake-up,
	// for work that another node wrote (default 1 min; a single node is
	// always woken by its own writes).
	Backstop time.Duration
	// Ops configures the operations API's jobs.
	Ops OpsConfig
}

// Engine holds the store and the services. It is safe for concurrent use.
type Engine struct {
	store    store.Store
	clock    clock.Clock
	log      *slog.Logger
	dev      bool
	rules    task.URLRules
	waker    *waker // tasks became due or queues changed: dispatcher, long polls
	leases   *waker // new lease expiries: rescuer
	ruleWake *waker // trigger rules changed: scheduler
	chains   *waker // a finish may have written chain events: chainer
	cfg      Config
	mu       sync.Mutex
	cancel   context.CancelFunc
	wg       sync.WaitGroup

	metrics    *metrics.Metrics
	cleaner    *Cleaner
	rescuer    *Rescuer
	dispatcher *Dispatcher
	scheduler  *Scheduler
	chainer    *Chainer
	finisher   *finishBatcher
	notifier   *notifierService // nil unless the store is shared
	notify     chan struct{}
	clockSync  *clockSync // nil unless DatabaseClock
	ops        *opsState
}

// New returns an engine; Start runs its services.
func New(cfg Config) *Engine {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Metrics == nil {
		cfg.Metrics = metrics.New()
	}
	if cfg.Backstop <= 0 {
		cfg.Backstop = time.Minute
	}
	e := &Engine{store: cfg.Store, clock: cfg.Clock, log: cfg.Logger, dev: cfg.Dev, rules: cfg.URLRules, cfg: cfg, waker: newWaker(), leases: newWaker(), metrics: cfg.Metrics}
	e.cleaner = &Cleaner{store: cfg.Store, clock: cfg.Clock, log: cfg.Logger.With("service", "cleaner"), every: cfg.CleanEvery}
	e.rescuer = &Rescuer{e: e, log: cfg.Logger.With("service", "rescuer"), backstop: cfg.Backstop}
	e.ops = newOpsState(e, cfg.Ops)
	e.dispatcher = newDispatcher(e, e.ops.router(cfg.Deliverer))
	if cfg.Writers <= 0 {
		cfg.Writers = 1
		if _, ok := cfg.Store.(store.Notifier); ok {
			cfg.Writers = 4
		}
		e.cfg.Writers = cfg.Writers
	}
	e.finisher = &finishBatcher{store: cfg.Store, writers: cfg.Writers, log: cfg.Logger.With("service", "finisher"), stored: e.chainsMaybe}
	if n, ok := cfg.Store.(store.Notifier); ok {
		e.notify = make(chan struct{}, 1)
		e.notifier = &notifierService{e: e, n: n, log: cfg.Logger.With("service", "notifier")}
	}
	if sc, ok := cfg.Store.(store.ServerClock); ok && cfg.DatabaseClock {
		off := &clock.Offset{Base: cfg.Clock}
		e.clock = off
		e.clockSync = &clockSync{e: e, sc: sc, clk: off, log: cfg.Logger.With("service", "clock"), interval: 30 * time.Second}
	}
	e.ruleWake, e.chains = newWaker(), newWaker()
	td := TriggerDeps{Store: cfg.Store, Clock: e.clock, Logger: cfg.Logger, Rules: cfg.URLRules, Added: e.changed, NewID: e.newID}
	td.Wake = e.ruleWake.wait
	e.scheduler = NewScheduler(SchedulerDeps{TriggerDeps: td, Backstop: cfg.Backstop})
	td.Wake = e.chains.wait
	e.chainer = NewChainer(ChainerDeps{TriggerDeps: td, Poll: min(cfg.Backstop, 5*time.Second)})
	return e
}

// Metrics returns the engine's Prometheus collectors.
func (e *Engine) Metrics() *metrics.Metrics { return e.metrics }

// Store returns the engine's store.
func (e *Engine) Store() store.Store { return e.store }

// Clock returns the engine's clock.
func (e *Engine) Clock() clock.Clock { return e.clock }

// Dev reports whether the engine runs as the emulator.
func (e *Engine) Dev() bool { return e.dev }

// Start runs the engine's services until Stop.
func (e *Engine) Start(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cancel != nil {
		return errors.New("engine: already started")
	}
	if e.clockSync != nil {
		if err := e.clockSync.measure(ctx); err != nil {
			return err
		}
	}
	ctx, e.cancel = context.WithCancel(ctx)
	services := []interface{ run(context.Context) }{e.cleaner, e.rescuer, e.dispatcher, e.scheduler, e.chainer}
	if e.notifier != nil {
		services = append(services, e.notifier)
	}
	if e.clockSync != nil {
		services = append(services, e.clockSync)
	}
	for _, svc := range services {
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			svc.run(ctx)
		}()
	}
	return nil
}

// Stop stops the services and waits for them; the store stays open.
func (e *Engine) Stop() {
	e.mu.Lock()
	cancel := e.cancel
	e.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	e.wg.Wait()
}

func (e *Engine) now() int64 { return e.clock.Now().UnixMilli() }

func (e *Engine) newID() string { return id.New(e.clock.Now()) }
