// Package engine is errand's application core: the operations the API,
// console, CLI and MCP call (instances, queues, tasks, leases), which are
// methods of Engine, and the long-lived services that move tasks through
// their lifecycle: the dispatcher, the lease rescuer, the retention cleaner,
// the trigger scheduler and chainer, and on a shared store the notifier and
// the clock sync.
//
// Each service is built with what it uses (store, clock, logger, the wakers
// it waits on or rings, the finisher, limits), never the whole Engine, and
// has Start(ctx) and Stop(). The rescuer, the cleaner, the scheduler, the
// chainer and the clock sync also have RunOnce, one pass, for tests.
// Engine.Start starts the services as a list and Engine.Stop stops them in
// reverse, so a new service (a channel fan-out, say) is one line in New. The
// finish batcher has no goroutine of its own: its callers write.
package engine

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/errandhq/errand/internal/channels"
	"github.com/errandhq/errand/internal/clock"
	"github.com/errandhq/errand/internal/deliver"
	"github.com/errandhq/errand/internal/groupcommit"
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
	// Node is this node's id among those sharing the store (hex, no dot):
	// its heartbeat row and the prefix of its push attempts' lease ids.
	// Default: a fresh random id.
	Node string
	// UsageEvery is how often a node adds its usage counts to the store
	// (default UsageFlushEvery, 2 s; they are also added at Stop).
	UsageEvery time.Duration
	// Channels configures channel targets: retention and subscribers.
	Channels ChannelsConfig
	// StopGrace is how long Stop lets push attempts in flight finish (no
	// new one starts) before it cuts the rest and gives them back,
	// uncounted: a target's request cut mid-way is sent again by the next
	// node, so a restart within it delivers nothing twice. 0 cuts at once.
	StopGrace time.Duration
	// InstanceDeleted, if set, is told the id of each instance deleted
	// through this engine, or found deleted by the node (InstanceGone):
	// the node closes its function workers' connections to it.
	InstanceDeleted func(instanceID string)
}

// Engine holds the store and the services. It is safe for concurrent use.
// Its operations (add, lease, ack, cancel, …) are its methods; its
// long-lived work is done by services that each own their dependencies.
type Engine struct {
	store    store.Store
	clock    clock.Clock
	log      *slog.Logger
	dev      bool
	node     string
	rules    task.URLRules
	waker    *waker // tasks became due or queues changed: long polls, the console
	dispatch *waker // the same, and push slots freed: the dispatcher (a pull queue's add rings only waker)
	leases   *waker // new lease expiries: rescuer
	ruleWake *waker // trigger rules changed: scheduler
	chains   *waker // a finish may have written chain events: chainer
	mu       sync.Mutex
	state    int // notStarted, started, stopped

	metrics    *metrics.Metrics
	batcher    *finishBatcher
	hookAdds   *groupcommit.Group[*store.TriggerHookAddParams, store.TriggerFireResult]
	addOne     *groupcommit.Group[[]*task.Task, []AddResult] // calls that add one task
	singleAdds atomic.Int64                                  // calls of one task under way in addDue
	fin        *finisher
	leased     *leasedTasks // the tasks this node leased out, for their acks
	leaseGroup leaseGroups  // this node's lease claims, one at a time a queue
	cleaner    *Cleaner
	rescuer    *Rescuer
	liveness   *Liveness
	dispatcher *Dispatcher
	addClaimer store.AddClaimer // nil unless the store claims in an add's transaction
	scheduler  *Scheduler
	chainer    *Chainer
	notifier   *notifierService // nil unless the store is shared
	stats      *keeper          // nil unless the store keeps planner statistics (StatsKeeper)
	vacuum     *keeper          // nil unless the store vacuums its tasks table (Vacuumer)
	usage      *Usage
	hub        *channels.Hub // this node's channel subscribers
	// instanceDeleted is Config.InstanceDeleted.
	instanceDeleted func(instanceID string)
	// pollsEnd is closed by EndLongPolls: a lease waiting for tasks
	// answers what it has, and none waits from then on.
	pollsEnd  chan struct{}
	pollsOnce sync.Once
	endBells  endBells // waiters of tasks that end on this node (TaskWait)
	pruner    *ChannelPruner
	ops       *opsState
	// services run from Start to Stop, started in this order and stopped
	// in reverse.
	services []service
	signals  engineSignals
	unserved unservedLog
}

// engineSignals report the engine's own progress to tests (nil in
// production).
type engineSignals struct {
	parked   *progress[int] // long polls that found nothing and wait
	outcomes *progress[int] // attempt outcomes stored, in all
}

const (
	notStarted = iota
	started
	stopped
)

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
	// Other nodes' channel appends are heard from the store itself (the
	// cache below does not pass the listener on).
	listener, _ := cfg.Store.(store.ChannelListener)
	statsKeeper, _ := cfg.Store.(store.StatsKeeper) // nor this
	vacuumer, _ := cfg.Store.(store.Vacuumer)       // nor this
	addClaimer, _ := cfg.Store.(store.AddClaimer)   // nor this
	if n, ok := cfg.Store.(store.Notifier); ok {
		// A shared store: instances and queues are cached, and dropped on
		// every node when one changes them.
		cfg.Store = newCachedStore(cfg.Store, n)
	}
	if cfg.Node == "" {
		cfg.Node = id.Secret(8)
	}
	if cfg.Writers <= 0 {
		cfg.Writers = 1
		if _, ok := cfg.Store.(store.Notifier); ok {
			cfg.Writers = 4
		}
	}
	e := &Engine{store: cfg.Store, addClaimer: addClaimer, clock: cfg.Clock, log: cfg.Logger, dev: cfg.Dev, node: cfg.Node, rules: cfg.URLRules, instanceDeleted: cfg.InstanceDeleted,
		waker: newWaker(), dispatch: newWaker(), leases: newWaker(), ruleWake: newWaker(), chains: newWaker(), metrics: cfg.Metrics,
		pollsEnd: make(chan struct{})}
	if sc, ok := cfg.Store.(store.ServerClock); ok && cfg.DatabaseClock {
		// First, so that every other service starts on the database's time.
		off := &clock.Offset{Base: cfg.Clock}
		e.clock = off
		e.services = append(e.services, &clockSync{sc: sc, clk: off, log: cfg.Logger.With("service", "clock"), interval: 30 * time.Second})
	}
	e.usage = newUsage(usageDeps{store: cfg.Store, clock: e.clock, log: cfg.Logger.With("service", "usage"), every: cfg.UsageEvery})
	e.batcher = newFinishBatcher(cfg.Store, cfg.Writers, cfg.Logger.With("service", "finisher"), e.outcomesStored)
	// One writer of hook calls, not Config.Writers: the calls of one rule
	// all update its row, so a second transaction beside the first would
	// only wait for its lock, as a batch of its own, where the first's
	// successor takes it whole (16 senders to one hook on PostgreSQL: 4
	// writers 2,750 calls/s, 1 writer 5,060-5,328). The calls of several
	// rules share the one transaction too.
	e.hookAdds = &groupcommit.Group[*store.TriggerHookAddParams, store.TriggerFireResult]{
		Write: cfg.Store.TriggerHookAdd, Max: maxHookBatch, Writers: 1, Alone: true}
	// Two writers of single adds at most (Config.Writers is 1 on SQLite):
	// 16 callers adding one task each over HTTP on PostgreSQL got 6,880-
	// 7,369 tasks/s with 4, 8,413-8,792 with 2 and 11,239-12,149 with 1,
	// but two callers 2,041-2,162 with 1 (the second waits for the first's
	// write) against 2,718-3,040 with 2 or 4, as without the group commit.
	e.addOne = newAddOne(cfg.Store, min(cfg.Writers, 2))
	e.fin = &finisher{store: cfg.Store, clock: e.clock, batch: e.batcher, metrics: cfg.Metrics, log: e.log, changed: e.changed}
	e.leased = newLeasedTasks(leasedMaxEntries, leasedMaxBytes)
	e.cleaner = newCleaner(cleanerDeps{store: cfg.Store, clock: e.clock, log: cfg.Logger.With("service", "cleaner"), every: cfg.CleanEvery})
	e.rescuer = newRescuer(rescuerDeps{store: cfg.Store, clock: e.clock, log: cfg.Logger.With("service", "rescuer"),
		leases: e.leases, finisher: e.fin, backstop: cfg.Backstop})
	e.liveness = newLiveness(livenessDeps{store: cfg.Store, clock: e.clock, log: cfg.Logger.With("service", "liveness"),
		node: cfg.Node, rescue: e.rescuer.RescueNodes, every: NodeBeatEvery, deadAfter: NodeDeadAfter, metrics: cfg.Metrics})
	// Attempts of operations jobs run in this process; the rest go to
	// cfg.Deliverer.
	e.ops = newOpsState(e, cfg.Ops)
	e.dispatcher = newDispatcher(dispatcherDeps{store: cfg.Store, clock: e.clock, log: cfg.Logger.With("service", "dispatcher"),
		node: cfg.Node, targets: e.ops.router(cfg.Deliverer), metrics: cfg.Metrics, usage: e.usage, wake: e.dispatch, dev: cfg.Dev, writers: cfg.Writers, backstop: cfg.Backstop, stored: e.outcomesStored,
		stopGrace: cfg.StopGrace})
	td := TriggerDeps{Store: cfg.Store, Clock: e.clock, Logger: cfg.Logger, Rules: cfg.URLRules, Added: e.changed, NewID: e.newID,
		Counted: func(instanceID string) {
			e.usage.count(instanceID, usageAdded, 1)
			e.metrics.TasksAdded.Inc()
		}}
	td.Wake = e.ruleWake.next
	e.scheduler = NewScheduler(SchedulerDeps{TriggerDeps: td, Backstop: cfg.Backstop})
	td.Wake = e.chains.next
	e.chainer = NewChainer(ChainerDeps{TriggerDeps: td, Poll: min(cfg.Backstop, 5*time.Second)})
	cfg.Channels.setDefaults()
	e.pruner = newChannelPruner(channelPrunerDeps{store: cfg.Store, clock: e.clock, log: cfg.Logger.With("service", "channel-pruner"), cfg: cfg.Channels})
	e.hub = channels.New(channels.Config{Store: cfg.Store, Listener: listener, Clock: e.clock, Logger: cfg.Logger.With("service", "channels"),
		Metrics: cfg.Metrics, Buffer: cfg.Channels.Buffer, MaxLag: cfg.Channels.MaxLag, LagTimeout: cfg.Channels.LagTimeout, Backstop: cfg.Backstop})
	// The liveness service stops after the dispatcher: the node leaves
	// once it has handed back its attempts.
	// usage first, so that it stops last and flushes what the others counted.
	e.services = append(e.services, e.usage, e.cleaner, e.pruner, e.hub, e.rescuer, e.liveness, e.dispatcher, e.scheduler, e.chainer)
	if statsKeeper != nil {
		e.stats = newStatsKeeper(statsKeeper, e.clock, cfg.Logger.With("service", "stats"))
		e.services = append(e.services, e.stats)
	}
	if vacuumer != nil {
		e.vacuum = newVacuumKeeper(vacuumer, e.clock, cfg.Logger.With("service", "vacuum"))
		e.services = append(e.services, e.vacuum)
	}
	cfg.Metrics.SetBacklog(e.readBacklog, e.clock.Now)
	if n, ok := cfg.Store.(store.Notifier); ok {
		// Other nodes' changes wake the dispatcher and long polls, the
		// rescuer and the scheduler here; their adds for the waiters alone
		// (store.ChangeWaiters), the long polls.
		e.notifier = newNotifierService(n, cfg.Logger.With("service", "notifier"), servesFunctions(cfg.Deliverer), e.waker, e.waker, e.dispatch, e.leases, e.ruleWake)
		e.services = append(e.services, e.notifier)
		e.liveness.peers = e.notifier
	}
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

// Start runs the engine's services until Stop. An engine starts once.
func (e *Engine) Start(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.state != notStarted {
		return errors.New("engine: already started")
	}
	for i, svc := range e.services {
		if err := svc.Start(ctx); err != nil {
			for j := i - 1; j >= 0; j-- {
				e.services[j].Stop()
			}
			return err
		}
	}
	e.state = started
	return nil
}

// Stop stops the services, in the reverse of their start, and waits for
// them; the store stays open.
func (e *Engine) Stop() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.state != started {
		return
	}
	e.state = stopped
	for i := len(e.services) - 1; i >= 0; i-- {
		e.services[i].Stop()
	}
	if n, ok := e.store.(store.Notifier); ok {
		// The attempts the dispatcher handed back on its way out are due
		// now: the other nodes hear it at once, not at their backstop (the
		// notifier service, stopped first, sent nothing for them).
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := n.Notify(ctx, store.ChangeAny); err != nil {
			e.log.Warn("telling the other nodes of the attempts handed back failed; they find them within their backstop", "err", err)
		}
	}
}

func (e *Engine) now() int64 { return e.clock.Now().UnixMilli() }

func (e *Engine) newID() string { return newID(e.clock) }
