package engine

import (
	"context"
	"errors"
	"log/slog"
	"sync"
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
}

// passService is the life of the trigger services (scheduler, chainer): a
// pass, then a sleep until a wake-up, the next due time or the end.
type passService struct {
	name   string
	log    *slog.Logger
	clock  clock.Clock
	wake   func() <-chan struct{} // nil: no wake-ups
	pass   func(ctx context.Context) (int, error)
	sleep  func(ctx context.Context) time.Duration
	onPass func(n int)

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// Start runs the service until Stop or the end of ctx.
func (p *passService) Start(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cancel != nil {
		return errors.New(p.name + ": already started")
	}
	ctx, p.cancel = context.WithCancel(ctx)
	p.done = make(chan struct{})
	go func() {
		defer close(p.done)
		p.run(ctx)
	}()
	return nil
}

// Stop stops the service and waits for it.
func (p *passService) Stop() {
	p.mu.Lock()
	cancel, done := p.cancel, p.done
	p.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

func (p *passService) run(ctx context.Context) {
	for {
		var woken <-chan struct{}
		if p.wake != nil {
			woken = p.wake()
		}
		n, err := p.pass(ctx)
		if err != nil && ctx.Err() == nil {
			p.log.Warn(p.name+" pass failed", "err", err)
		}
		if p.onPass != nil {
			p.onPass(n)
		}
		select {
		case <-ctx.Done():
			return
		case <-woken:
		case <-p.clock.After(p.sleep(ctx)):
		}
	}
}
