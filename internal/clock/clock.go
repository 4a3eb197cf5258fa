// Package clock gives services their time, real or simulated, so tests of
// backoff, leases, deadlines and retention never sleep.
package clock

import (
	"sync"
	"sync/atomic"
	"time"
)

// Clock is the time source of every service.
type Clock interface {
	Now() time.Time
	// After returns a channel that receives once d has passed on this clock.
	After(d time.Duration) <-chan time.Time
}

// Real is the wall clock.
type Real struct{}

// Now returns time.Now().
func (Real) Now() time.Time { return time.Now() }

// After returns time.After(d).
func (Real) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Fake is a clock that moves only when told to.
type Fake struct {
	mu      sync.Mutex
	now     time.Time
	waiters []waiter
}

type waiter struct {
	at time.Time
	ch chan time.Time
}

// NewFake returns a fake clock set to start.
func NewFake(start time.Time) *Fake { return &Fake{now: start} }

// Now returns the fake time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// After fires when Advance moves the clock to or past now+d.
func (f *Fake) After(d time.Duration) <-chan time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	ch := make(chan time.Time, 1)
	at := f.now.Add(d)
	if d <= 0 {
		ch <- f.now
		return ch
	}
	f.waiters = append(f.waiters, waiter{at: at, ch: ch})
	return ch
}

// Advance moves the clock forward by d and fires every timer now due.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	f.now = f.now.Add(d)
	now := f.now
	keep := f.waiters[:0]
	var fire []waiter
	for _, w := range f.waiters {
		if !w.at.After(now) {
			fire = append(fire, w)
		} else {
			keep = append(keep, w)
		}
	}
	f.waiters = keep
	f.mu.Unlock()
	for _, w := range fire {
		w.ch <- now
	}
}

// Offset is a clock that runs at its base's rate, shifted by an offset that
// can be set at any time (to follow the database's clock).
type Offset struct {
	Base Clock
	ns   atomic.Int64
}

// Now returns the base's time plus the offset.
func (o *Offset) Now() time.Time { return o.Base.Now().Add(time.Duration(o.ns.Load())) }

// After waits on the base clock.
func (o *Offset) After(d time.Duration) <-chan time.Time { return o.Base.After(d) }

// Set sets the offset.
func (o *Offset) Set(d time.Duration) { o.ns.Store(int64(d)) }

// Get returns the offset.
func (o *Offset) Get() time.Duration { return time.Duration(o.ns.Load()) }
