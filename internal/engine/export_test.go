package engine

import (
	"context"
	"slices"
	"testing"
	"time"
)

// Signals reads the services' test signals. Only tests build it.
type Signals struct{ e *Engine }

// signalWait bounds every wait on a signal: past it the test has failed.
const signalWait = 10 * time.Second

// WithSignals turns on e's test signals; call it before Start.
func WithSignals(e *Engine) *Signals {
	e.dispatcher.asleep = newProgress[sleepReport]()
	e.dispatcher.slotWaits = newProgress[int]()
	e.dispatcher.draining = newProgress[drainReport]()
	e.rescuer.asleep = newProgress[sleepReport]()
	e.scheduler.asleep = newProgress[sleepReport]()
	e.chainer.asleep = newProgress[sleepReport]()
	e.signals.parked = newProgress[int]()
	e.leaseGroup.seen = newProgress[leaseReport]()
	WatchOutcomes(e)
	e.liveness.beats = newProgress[beatReport]()
	if c, ok := e.store.(*cachedStore); ok {
		c.drops = newProgress[int]()
	}
	e.usage.flushes = newProgress[int]()
	e.usage.asleep = newProgress[sleepReport]()
	if e.stats != nil {
		e.stats.ran = newProgress[int]()
	}
	if e.vacuum != nil {
		e.vacuum.ran = newProgress[int]()
	}
	if e.notifier != nil {
		e.notifier.skipped = newProgress[int]()
		e.notifier.heardAll = newProgress[int]()
		e.notifier.asked = newProgress[int]()
		e.notifier.covered = newProgress[int]()
	}
	return &Signals{e: e}
}

// NotifyHeard waits until the node has heard n change notifications or
// connects of its LISTEN in all, and rung its wakers for them, and returns
// how many it has.
func (s *Signals) NotifyHeard(tb testing.TB, n int) int {
	tb.Helper()
	return wait(tb, "notifications heard", s.e.notifier.heardAll, func(got int) bool { return got >= n })
}

// Wakes returns how many times the node's dispatcher, rescuer, scheduler
// and long polls have been woken so far, in that order.
func (s *Signals) Wakes() [4]uint64 {
	return [4]uint64{s.e.dispatch.wakes(), s.e.leases.wakes(), s.e.ruleWake.wakes(), s.e.waker.wakes()}
}

// NotifyAsked returns how many NOTIFYs the node has asked for so far
// (several pending at once are sent as one).
func (s *Signals) NotifyAsked() int { return s.e.notifier.asked.value() }

// NotifyCovered waits until the NOTIFYs the node has sent cover every
// change it has asked one for so far.
func (s *Signals) NotifyCovered(tb testing.TB) {
	tb.Helper()
	n := s.e.notifier.asked.value()
	wait(tb, "NOTIFYs that cover every change asked for", s.e.notifier.covered, func(got int) bool { return got >= n })
}

// SetWaitersNotifyGap sets the least time from the node's last NOTIFY to
// one for the waiters alone (store.ChangeWaiters); call it before Start.
func SetWaitersNotifyGap(e *Engine, d time.Duration) { e.notifier.waitersGap = d }

// NotifySkipped waits until n changes in all went unannounced because the
// node was alone on its store, and returns how many have.
func (s *Signals) NotifySkipped(tb testing.TB, n int) int {
	tb.Helper()
	return wait(tb, "changes unannounced, the node alone", s.e.notifier.skipped, func(got int) bool { return got >= n })
}

// Draining waits until a stop of the dispatcher has begun its grace, and
// returns how many attempts were in flight.
func (s *Signals) Draining(tb testing.TB) int {
	tb.Helper()
	return wait(tb, "the dispatcher to stop", s.e.dispatcher.draining, func(r drainReport) bool { return r.Began }).InFlight
}

// AddsAtTheSlotLock waits until n adds in all have come to take the
// dispatcher's slot lock (to claim a function queue's tasks).
func (s *Signals) AddsAtTheSlotLock(tb testing.TB, n int) {
	tb.Helper()
	wait(tb, "an add to come to the slot lock", s.e.dispatcher.slotWaits, func(c int) bool { return c >= n })
}

// StatsRefreshed waits until the stats keeper has refreshed the store's
// planner statistics n times in all.
func (s *Signals) StatsRefreshed(tb testing.TB, n int) {
	tb.Helper()
	wait(tb, "the planner statistics to be refreshed", s.e.stats.ran, func(r int) bool { return r >= n })
}

// Vacuumed waits until the vacuum keeper has vacuumed the store's tasks
// table n times in all.
func (s *Signals) Vacuumed(tb testing.TB, n int) {
	tb.Helper()
	wait(tb, "the tasks table to be vacuumed", s.e.vacuum.ran, func(r int) bool { return r >= n })
}

// CacheDrops waits until the engine's cache of instances and queues has
// dropped its copies n times in all.
func (s *Signals) CacheDrops(tb testing.TB, n int) {
	tb.Helper()
	wait(tb, "the cache to drop its copies", s.e.store.(*cachedStore).drops, func(d int) bool { return d >= n })
}

// CacheDropCount returns how many times the engine's cache has dropped
// its copies so far.
func (s *Signals) CacheDropCount() int {
	p := s.e.store.(*cachedStore).drops
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last
}

// DueAdded points e's dispatcher at a queue as an add of a due task does
// (a stale hint when the queue has none).
func DueAdded(e *Engine, instanceID, queue string) { e.dispatcher.dueAdded(instanceID, queue) }

// CacheClock sets the clock by which the engine's cache ages its copies.
func CacheClock(e *Engine, now func() time.Time) { e.store.(*cachedStore).now = now }

// CacheTTL is how long a copy is used.
const CacheTTL = cacheTTL

// BeatAt waits until the liveness service has beaten at at or later and
// returns the nodes that beat found dead and how many attempts it ended.
func (s *Signals) BeatAt(tb testing.TB, at time.Time) ([]string, int) {
	tb.Helper()
	r := wait(tb, "a heartbeat at "+at.String(), s.e.liveness.beats, func(r beatReport) bool {
		return r.Beats > 0 && !r.Now.Before(at)
	})
	return r.Dead, r.Ended
}

// Settle wakes the dispatcher and waits until a pass that began after the
// wake, at the clock's current time or later, found nothing more to claim
// and went to sleep; it returns when the dispatcher will wake next. After
// it, whatever the dispatcher would start by now has been claimed.
func (s *Signals) Settle(tb testing.TB) time.Time {
	tb.Helper()
	s.e.dispatch.wake()
	seen, now := s.e.dispatch.wakes(), s.e.clock.Now()
	r := wait(tb, "the dispatcher to settle", s.e.dispatcher.asleep, func(r sleepReport) bool {
		return r.Seen >= seen && !r.Now.Before(now)
	})
	return r.WakeAt
}

// RescuerAsleepUntil waits until the rescuer, after a pass that saw every
// lease taken so far, sleeps with its timer set for at.
func (s *Signals) RescuerAsleepUntil(tb testing.TB, at time.Time) {
	tb.Helper()
	seen := s.e.leases.wakes()
	wait(tb, "the rescuer to sleep until "+at.String(), s.e.rescuer.asleep, func(r sleepReport) bool {
		return r.Seen >= seen && r.WakeAt.Equal(at)
	})
}

// SchedulerAsleepUntil waits until the scheduler, after a pass, sleeps with
// its timer set for at.
func (s *Signals) SchedulerAsleepUntil(tb testing.TB, at time.Time) {
	tb.Helper()
	wait(tb, "the scheduler to sleep until "+at.String(), s.e.scheduler.asleep, func(r sleepReport) bool {
		return r.WakeAt.Equal(at)
	})
}

// Parked waits until n long polls in all have found nothing and wait, and
// returns how many have.
func (s *Signals) Parked(tb testing.TB, n int) int {
	tb.Helper()
	return wait(tb, "a long poll to park", s.e.signals.parked, func(got int) bool { return got >= n })
}

// LeasesWaiting waits until n leases wait for a claim of their queue
// under way on this node.
func (s *Signals) LeasesWaiting(tb testing.TB, n int) {
	tb.Helper()
	wait(tb, "leases to wait for a claim", s.e.leaseGroup.seen, func(r leaseReport) bool { return r.Waiting == n })
}

// LeaseClaims waits until this node has made n lease claims, and returns
// how many leases each served.
func (s *Signals) LeaseClaims(tb testing.TB, n int) []int {
	tb.Helper()
	return slices.Clone(wait(tb, "lease claims", s.e.leaseGroup.seen, func(r leaseReport) bool { return len(r.Claims) >= n }).Claims)
}

// Outcomes returns how many attempt outcomes have been stored so far.
func (s *Signals) Outcomes() int {
	n, _ := s.e.signals.outcomes.wait(context.Background(), func(int) bool { return true })
	return n
}

// OutcomesAfter waits until more than n attempt outcomes in all have been
// stored, and returns how many have.
func (s *Signals) OutcomesAfter(tb testing.TB, n int) int {
	tb.Helper()
	return wait(tb, "an attempt outcome to be stored", s.e.signals.outcomes, func(got int) bool { return got > n })
}

func wait[T any](tb testing.TB, what string, p *progress[T], ok func(T) bool) T {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), signalWait)
	defer cancel()
	v, err := p.wait(ctx, ok)
	if err != nil {
		tb.Fatalf("timed out waiting for %s (last report %+v)", what, v)
	}
	return v
}

// UsageFlushes waits until the usage service's loop has flushed n times in
// all.
func (s *Signals) UsageFlushes(tb testing.TB, n int) {
	tb.Helper()
	wait(tb, "a usage flush", s.e.usage.flushes, func(got int) bool { return got >= n })
}

// UsageAsleepUntil waits until the usage service sleeps with its timer set
// for at (its next flush).
func (s *Signals) UsageAsleepUntil(tb testing.TB, at time.Time) {
	tb.Helper()
	wait(tb, "the usage service to sleep until "+at.String(), s.e.usage.asleep, func(r sleepReport) bool { return r.WakeAt.Equal(at) })
}

// RescuerFullPasses is how many of the rescuer's passes have read the
// expired leases (a pass woken before its time only reads the next expiry).
func RescuerFullPasses(e *Engine) int64 { return e.rescuer.fulls.Load() }

// RescuerNextReads is how many of the rescuer's passes have read the next
// lease expiry from the store.
func RescuerNextReads(e *Engine) int64 { return e.rescuer.nexts.Load() }

// WakeLeases wakes the rescuer as another node's change does: without
// saying what changed.
func WakeLeases(e *Engine) { e.leases.wake() }

// LeasedLen returns how many leased tasks e keeps for their acks.
func LeasedLen(e *Engine) int { return e.leased.len() }

// SetLeasedBounds gives e an empty map of leased tasks with these bounds;
// call it before e leases anything.
func SetLeasedBounds(e *Engine, entries int, bytes int64) { e.leased = newLeasedTasks(entries, bytes) }

// OnHookQueued tells f how many hook calls wait to be written each time
// one joins them (the hook calls' group commit).
func OnHookQueued(e *Engine, f func(waiting int)) { e.hookAdds.Queued = f }

// OnAddOneQueued tells f how many single-task adds wait to be written each
// time one joins them (the single adds' group commit).
func OnAddOneQueued(e *Engine, f func(waiting int)) { e.addOne.Queued = f }

// DispatchWakes is how many times e's dispatcher has been woken.
func DispatchWakes(e *Engine) uint64 { return e.dispatch.wakes() }

// Wakes is how many times e's long polls and console have been woken.
func Wakes(e *Engine) uint64 { return e.waker.wakes() }
