package engine

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/errandhq/errand/internal/clock"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
	"github.com/errandhq/errand/internal/testkit/stores"
)

// expiredUnwritable is a store whose reads see an expired lease but whose
// rescue fails, as on a full disk: TaskExpired answers UNAVAILABLE and
// TaskNextDue a lease that expired a second ago.
type expiredUnwritable struct {
	store.Store
	now   func() int64
	calls chan struct{}
}

func (s *expiredUnwritable) TaskExpired(context.Context, int64, int) ([]*task.Task, error) {
	s.calls <- struct{}{}
	return nil, task.Errorf(task.CodeUnavailable, "the store's disk is full; try again later")
}

func (s *expiredUnwritable) TaskNextDue(context.Context) (int64, int64, error) {
	return 0, s.now() - 1000, nil
}

// armedClock is a fake clock that reports every sleep armed on it.
type armedClock struct {
	*clock.Fake
	armed chan time.Duration
}

func (c *armedClock) After(d time.Duration) <-chan time.Time {
	c.armed <- d
	return c.Fake.After(d)
}

// TestRescuerWaitsAfterAFailedPass: a rescue pass that fails while an
// expired lease is still there (the disk is full: reads work, writes do
// not) waits a second before the next, as the dispatcher does, instead of
// looping every millisecond and logging each pass. The fault suite's
// disk-full test found the loop (thousands of "rescue pass failed" lines a
// second).
func TestRescuerWaitsAfterAFailedPass(t *testing.T) {
	base := stores.Open(t, "sqlite")
	defer base.Close()
	fc := &armedClock{Fake: clock.NewFake(time.UnixMilli(1_790_000_000_000)), armed: make(chan time.Duration, 1)}
	st := &expiredUnwritable{Store: base, now: func() int64 { return fc.Now().UnixMilli() }, calls: make(chan struct{}, 1)}
	e := New(Config{Store: st, Clock: fc, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); e.rescuer.run(ctx) }()
	defer func() { cancel(); <-done }()

	<-st.calls
	if d := <-fc.armed; d < time.Second {
		t.Fatalf("after a failed pass the rescuer sleeps %s before the next; want at least 1s", d)
	}
	fc.Advance(time.Second)
	<-st.calls // and it does try again
	if d := <-fc.armed; d < time.Second {
		t.Fatalf("second sleep %s", d)
	}
}
