package engine

import (
	"context"
	"log/slog"
	"time"

	"github.com/errandhq/errand/internal/clock"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// TriggerDeps are what the trigger services (scheduler, chainer) share.
type TriggerDeps struct {
	Store  store.Store
	Clock  clock.Clock  // default clock.Real{}
	Logger *slog.Logger // default slog.Default()
	// Rules vet the targets of the tasks it adds.
	Rules task.URLRules
	// Wake returns a channel closed at the next change the service waits
	// for (nil: none).
	Wake func() <-chan struct{}
	// Added is called after a pass that added tasks (wakes the dispatcher
	// here and on other nodes).
	Added func()
	// Counted is called for each task a rule added (usage and metrics count
	// it), with its instance
	// (the instance's usage counts it; nil: nothing).
	Counted func(instanceID string)
	// NewID makes task ids.
	NewID func() string
	// OnPass, if set, is called after every pass of the running service
	// with the tasks it added (a test signal).
	OnPass func(added int)
}

func (d *TriggerDeps) setDefaults() {
	if d.Clock == nil {
		d.Clock = clock.Real{}
	}
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	if d.Added == nil {
		d.Added = func() {}
	}
	if d.Counted == nil {
		d.Counted = func(string) {}
	}
}

// passService is the life of the trigger services (scheduler, chainer): a
// pass, then a sleep until a wake-up, the next due time or the end. Start
// and Stop are the shared runner's.
type passService struct {
	runner
	name  string
	log   *slog.Logger
	clock clock.Clock
	wake  func() <-chan struct{} // nil: no wake-ups
	pass  func(ctx context.Context) (int, error)
	// until is when to look again after a pass that began at now. The time
	// is absolute, so that a sleep armed late (after the clock moved) still
	// ends on time.
	until  func(ctx context.Context, now time.Time) time.Time
	onPass func(n int)
	asleep *progress[sleepReport] // tests only
}

// Start runs the service until Stop or the end of ctx.
func (p *passService) Start(ctx context.Context) error { return p.start(ctx, p.run) }

func (p *passService) run(ctx context.Context) {
	for {
		var woken <-chan struct{}
		if p.wake != nil {
			woken = p.wake()
		}
		now := p.clock.Now()
		n, err := p.pass(ctx)
		if err != nil && ctx.Err() == nil {
			p.log.Warn(p.name+" pass failed", "err", err)
		}
		if p.onPass != nil {
			p.onPass(n)
		}
		wakeAt := p.until(ctx, now)
		if err != nil {
			// What failed is still due (a full disk: reads work, writes
			// fail): look again in a second, as the rescuer and the
			// dispatcher do, not at once in a loop.
			wakeAt = p.clock.Now().Add(time.Second)
		}
		p.asleep.report(sleepReport{Now: now, WakeAt: wakeAt})
		if !sleep(ctx, p.clock, wakeAt, woken, nil) {
			return
		}
	}
}

// instanceName is the name of the instance with id, for a log line: the id
// itself when it cannot be read (deleted since, or the store is down).
// instanceAttrs are the log attributes that say whose an instance is: its
// organization and name (its id when it cannot be read).
func instanceAttrs(ctx context.Context, st store.Store, id string) []any {
	if inst, err := st.InstanceGetByID(ctx, id); err == nil {
		return []any{"org", inst.Org, "instance", inst.Name}
	}
	return []any{"instance", id}
}

func (d *TriggerDeps) instanceName(ctx context.Context, id string) string {
	if inst, err := d.Store.InstanceGetByID(ctx, id); err == nil {
		return inst.Name
	}
	return id
}
