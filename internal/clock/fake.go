package clock

import (
	"context"
	"slices"
	"sync"
	"time"
)

// Fake is a clock that moves only when told to. Tests line up with the
// services through it: WaitForSleepers blocks until the services have gone
// to sleep on it, so a test advances the clock only past timers that are
// armed, never after a guessed real-time pause.
type Fake struct {
	mu      sync.Mutex
	now     time.Time
	waiters []*waiter
	armed   chan struct{} // closed and replaced when a timer is armed
}

type waiter struct {
	at time.Time
	ch chan time.Time
}

// NewFake returns a fake clock set to start.
func NewFake(start time.Time) *Fake { return &Fake{now: start, armed: make(chan struct{})} }

// Now returns the fake time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// After fires when Advance moves the clock to or past now+d. It counts as a
// sleeper until it fires: prefer NewTimer where the wait may be abandoned.
func (f *Fake) After(d time.Duration) <-chan time.Time {
	return f.arm(d).ch
}

// NewTimer fires when Advance moves the clock to or past now+d, unless it
// is stopped first.
func (f *Fake) NewTimer(d time.Duration) Timer {
	return &fakeTimer{f: f, w: f.arm(d)}
}

func (f *Fake) arm(d time.Duration) *waiter {
	f.mu.Lock()
	defer f.mu.Unlock()
	w := &waiter{at: f.now.Add(d), ch: make(chan time.Time, 1)}
	if d <= 0 {
		w.ch <- f.now
		return w
	}
	f.waiters = append(f.waiters, w)
	close(f.armed)
	f.armed = make(chan struct{})
	return w
}

type fakeTimer struct {
	f *Fake
	w *waiter
}

func (t *fakeTimer) C() <-chan time.Time { return t.w.ch }

func (t *fakeTimer) Stop() bool {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	i := slices.Index(t.f.waiters, t.w)
	if i < 0 {
		return false
	}
	t.f.waiters = slices.Delete(t.f.waiters, i, i+1)
	return true
}

// Sleepers returns when each armed timer fires, earliest first: timers
// neither fired nor stopped.
func (f *Fake) Sleepers() []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	at := make([]time.Time, len(f.waiters))
	for i, w := range f.waiters {
		at[i] = w.at
	}
	slices.SortFunc(at, time.Time.Compare)
	return at
}

// WaitForSleepers blocks until at least n timers are armed, or ctx ends.
func (f *Fake) WaitForSleepers(ctx context.Context, n int) error {
	for {
		f.mu.Lock()
		got, armed := len(f.waiters), f.armed
		f.mu.Unlock()
		if got >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-armed:
		}
	}
}

// WaitForSleeperAt blocks until a timer that fires at exactly at is armed,
// or ctx ends.
func (f *Fake) WaitForSleeperAt(ctx context.Context, at time.Time) error {
	for {
		f.mu.Lock()
		found := slices.ContainsFunc(f.waiters, func(w *waiter) bool { return w.at.Equal(at) })
		armed := f.armed
		f.mu.Unlock()
		if found {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-armed:
		}
	}
}

// Advance moves the clock forward by d and fires every timer now due.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	f.now = f.now.Add(d)
	now := f.now
	keep := f.waiters[:0]
	var fire []*waiter
	for _, w := range f.waiters {
		if !w.at.After(now) {
			fire = append(fire, w)
		} else {
			keep = append(keep, w)
		}
	}
	clear(f.waiters[len(keep):])
	f.waiters = keep
	f.mu.Unlock()
	for _, w := range fire {
		w.ch <- now
	}
}
