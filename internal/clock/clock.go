// Package clock gives services their time, real or simulated, so tests of
// backoff, leases, deadlines and retention never sleep.
package clock

import (
	"sync/atomic"
	"time"
)

// Clock is the time source of every service.
type Clock interface {
	Now() time.Time
	// After returns a channel that receives once d has passed on this clock.
	After(d time.Duration) <-chan time.Time
	// NewTimer returns a timer that fires once d has passed on this clock,
	// unless it is stopped first. A service that sleeps on a timer stops it
	// when something else wakes it, so a fake clock knows who still sleeps.
	NewTimer(d time.Duration) Timer
}

// Timer is a one-shot timer of a Clock.
type Timer interface {
	// C receives the time once the timer fires.
	C() <-chan time.Time
	// Stop disarms the timer; it reports whether the timer was still armed.
	Stop() bool
}

// Real is the wall clock.
type Real struct{}

// Now returns time.Now().
func (Real) Now() time.Time { return time.Now() }

// After returns time.After(d).
func (Real) After(d time.Duration) <-chan time.Time { return time.After(d) }

// NewTimer returns a time.Timer.
func (Real) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time { return r.t.C }
func (r realTimer) Stop() bool          { return r.t.Stop() }

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

// NewTimer waits on the base clock.
func (o *Offset) NewTimer(d time.Duration) Timer { return o.Base.NewTimer(d) }

// Set sets the offset.
func (o *Offset) Set(d time.Duration) { o.ns.Store(int64(d)) }

// Get returns the offset.
func (o *Offset) Get() time.Duration { return time.Duration(o.ns.Load()) }
