package clock

import (
	"context"
	"testing"
	"time"
)

var t0 = time.UnixMilli(1_790_000_000_000)

// fired reports whether ch has a value now.
func fired(ch <-chan time.Time) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// within fails tb unless ch receives within 10 s (a real clock's timer).
func within(tb testing.TB, ch <-chan time.Time, what string) time.Time {
	tb.Helper()
	select {
	case at := <-ch:
		return at
	case <-time.After(10 * time.Second):
		tb.Fatalf("%s did not fire", what)
	}
	return time.Time{}
}

func TestRealClock(t *testing.T) {
	t.Parallel()
	var c Clock = Real{}
	before := time.Now()
	if now := c.Now(); now.Before(before) || now.Sub(before) > time.Second {
		t.Fatalf("Now %v, want about %v", now, before)
	}
	if at := within(t, c.After(time.Millisecond), "After(1ms)"); at.Before(before.Add(time.Millisecond)) {
		t.Fatalf("After(1ms) fired at %v, before 1 ms passed", at)
	}
	within(t, c.NewTimer(time.Millisecond).C(), "NewTimer(1ms)")
	within(t, c.NewTimer(-time.Second).C(), "NewTimer(-1s)")
	long := c.NewTimer(time.Hour)
	if !long.Stop() || long.Stop() {
		t.Fatal("Stop: want true for an armed timer, then false")
	}
}

func TestFakeMovesOnlyWhenTold(t *testing.T) {
	t.Parallel()
	f := NewFake(t0)
	if !f.Now().Equal(t0) {
		t.Fatalf("Now %v, want %v", f.Now(), t0)
	}
	a, b := f.After(time.Second), f.NewTimer(2*time.Second)
	if !fired(f.After(0)) || !fired(f.NewTimer(-time.Second).C()) {
		t.Fatal("a timer of zero or less fires at once")
	}
	f.Advance(999 * time.Millisecond)
	if fired(a) || fired(b.C()) {
		t.Fatal("fired early")
	}
	f.Advance(time.Millisecond) // exactly due
	if at := <-a; !at.Equal(t0.Add(time.Second)) {
		t.Fatalf("fired with %v, want the clock's new time", at)
	}
	if fired(b.C()) {
		t.Fatal("the 2 s timer fired at 1 s")
	}
	f.Advance(time.Hour)
	if !fired(b.C()) || b.Stop() {
		t.Fatal("the 2 s timer: want fired, and Stop false after it fired")
	}
	if got := f.Now(); !got.Equal(t0.Add(time.Hour + time.Second)) {
		t.Fatalf("Now %v", got)
	}
}

func TestFakeStoppedTimerNeitherFiresNorSleeps(t *testing.T) {
	t.Parallel()
	f := NewFake(t0)
	keep, stop := f.NewTimer(time.Minute), f.NewTimer(time.Second)
	if got := f.Sleepers(); len(got) != 2 || !got[0].Equal(t0.Add(time.Second)) || !got[1].Equal(t0.Add(time.Minute)) {
		t.Fatalf("Sleepers %v, want 1 s and 1 min, earliest first", got)
	}
	if !stop.Stop() {
		t.Fatal("Stop of an armed timer: false")
	}
	if got := f.Sleepers(); len(got) != 1 || !got[0].Equal(t0.Add(time.Minute)) {
		t.Fatalf("Sleepers after Stop %v", got)
	}
	f.Advance(time.Hour)
	if fired(stop.C()) || !fired(keep.C()) {
		t.Fatal("a stopped timer fired, or an armed one did not")
	}
	if got := f.Sleepers(); len(got) != 0 {
		t.Fatalf("Sleepers after they fired: %v", got)
	}
}

// TestFakeWaitForSleepers: the wait returns once n timers are armed (each
// one armed by another goroutine), and not while fewer are.
func TestFakeWaitForSleepers(t *testing.T) {
	t.Parallel()
	f := NewFake(t0)
	done := make(chan error, 1)
	go func() { done <- f.WaitForSleepers(context.Background(), 3) }()
	f.After(time.Second)
	tm := f.NewTimer(2 * time.Second)
	tm.Stop() // a stopped timer does not count
	f.NewTimer(3 * time.Second)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if err := f.WaitForSleepers(cancelled, 3); err != context.Canceled {
		t.Fatalf("with 2 armed: %v, want it to wait (here: until its context ends)", err)
	}
	select {
	case err := <-done:
		t.Fatalf("returned with 2 armed: %v", err)
	default:
	}
	f.NewTimer(4 * time.Second)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := f.WaitForSleepers(cancelled, 3); err != nil {
		t.Fatalf("with 3 armed and a done context: %v, want nil at once", err)
	}
}

func TestFakeWaitForSleeperAt(t *testing.T) {
	t.Parallel()
	f := NewFake(t0)
	done := make(chan error, 1)
	go func() { done <- f.WaitForSleeperAt(context.Background(), t0.Add(5*time.Second)) }()
	f.NewTimer(4 * time.Second)
	f.Advance(time.Second)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if err := f.WaitForSleeperAt(cancelled, t0.Add(5*time.Second)); err != context.Canceled {
		t.Fatalf("with no timer at 5 s: %v", err)
	}
	f.NewTimer(4 * time.Second) // armed at 1 s: fires at 5 s
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestOffset(t *testing.T) {
	t.Parallel()
	f := NewFake(t0)
	o := &Offset{Base: f}
	o.Set(-3 * time.Second)
	if got := o.Now(); !got.Equal(t0.Add(-3*time.Second)) || o.Get() != -3*time.Second {
		t.Fatalf("Now %v Get %v", got, o.Get())
	}
	a, tm := o.After(time.Second), o.NewTimer(time.Second)
	if n := len(f.Sleepers()); n != 2 {
		t.Fatalf("the offset clock's timers are its base's: %d sleepers, want 2", n)
	}
	f.Advance(time.Second)
	if !fired(a) || !fired(tm.C()) {
		t.Fatal("the offset clock's timers run at its base's rate")
	}
}
