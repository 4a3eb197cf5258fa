package engine

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/errandhq/errand/internal/clock"
)

// service is a long-lived part of the engine: the dispatcher, the rescuer,
// the cleaner, the notifier, the clock sync. Each takes the dependencies it
// uses (store, clock, wakers, finisher, logger) when it is built, and runs
// from Start until Stop. Engine.Start starts them in order and Engine.Stop
// stops them in reverse, so a new service is one line in Engine.New.
type service interface {
	// Start runs the service until Stop or ctx's end; an error means it
	// did not start.
	Start(ctx context.Context) error
	// Stop ends the service and waits for its goroutines.
	Stop()
}

// runner gives a service its Start and Stop around a run loop.
type runner struct {
	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

var errStarted = errors.New("engine: service already started")

// start runs run in a goroutine with a context that Stop cancels.
func (r *runner) start(ctx context.Context, run func(context.Context)) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cancel != nil {
		return errStarted
	}
	ctx, r.cancel = context.WithCancel(ctx)
	done := make(chan struct{})
	r.done = done
	go func() {
		defer close(done)
		run(ctx)
	}()
	return nil
}

// Stop cancels the run loop and waits for it to return.
func (r *runner) Stop() {
	r.mu.Lock()
	cancel, done := r.cancel, r.done
	r.cancel, r.done = nil, nil
	r.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// sleep waits until wakeAt on c, a wake or a signal on extra, and reports
// false if ctx ended. Its timer is stopped when it returns, so a fake clock
// counts only the services that still sleep.
func sleep(ctx context.Context, c clock.Clock, wakeAt time.Time, woken <-chan struct{}, extra <-chan struct{}) bool {
	t := c.NewTimer(wakeAt.Sub(c.Now()))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-woken:
	case <-extra:
	case <-t.C():
	}
	return true
}

// wakeAtOrBefore returns at if it is before wakeAt, else wakeAt, but never
// less than 1 ms after now: a service whose next due time has passed (a
// pass that failed, or work another node holds) does not loop busily.
func wakeAtOrBefore(now, wakeAt, at time.Time) time.Time {
	if soonest := now.Add(time.Millisecond); at.Before(soonest) {
		at = soonest
	}
	if at.Before(wakeAt) {
		return at
	}
	return wakeAt
}

// sleepReport is what a service reports to tests when it goes to sleep:
// the wakes it had seen when its pass began, the clock then, and when its
// timer will wake it.
type sleepReport struct {
	Seen   uint64
	Now    time.Time
	WakeAt time.Time
}

// progress publishes a service's latest report to tests, River's test
// signals: a test waits for the report it needs ("the dispatcher looked at
// the store at this time and went to sleep") instead of sleeping. It is nil
// in production, where report is a nil check.
type progress[T any] struct {
	mu   sync.Mutex
	last T
	ch   chan struct{} // closed and replaced at each report
}

func newProgress[T any]() *progress[T] { return &progress[T]{ch: make(chan struct{})} }

// report replaces the last report with v.
func (p *progress[T]) report(v T) { p.update(func(last *T) { *last = v }) }

// update changes the last report in place (for counts).
func (p *progress[T]) update(fn func(*T)) {
	if p == nil {
		return
	}
	p.mu.Lock()
	fn(&p.last)
	close(p.ch)
	p.ch = make(chan struct{})
	p.mu.Unlock()
}

// value returns the last report (T's zero value when p is nil: signals
// off).
func (p *progress[T]) value() T {
	if p == nil {
		var zero T
		return zero
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last
}

// wait blocks until the last report satisfies ok, or ctx ends.
func (p *progress[T]) wait(ctx context.Context, ok func(T) bool) (T, error) {
	for {
		p.mu.Lock()
		last, ch := p.last, p.ch
		p.mu.Unlock()
		if ok(last) {
			return last, nil
		}
		select {
		case <-ctx.Done():
			return last, ctx.Err()
		case <-ch:
		}
	}
}
