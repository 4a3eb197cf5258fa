package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/errandhq/errand/internal/clock"
	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/store/postgres"
	"github.com/errandhq/errand/internal/task"
	"github.com/errandhq/errand/internal/testkit/stores"
)

// notifyingPG reports each NOTIFY a node sends for its changes.
type notifyingPG struct {
	*postgres.Store
	sent chan struct{}
}

func (n *notifyingPG) Notify(ctx context.Context) error {
	err := n.Store.Notify(ctx)
	n.sent <- struct{}{}
	return err
}

// next waits for the next NOTIFY.
func (n *notifyingPG) next(t *testing.T, what string) {
	t.Helper()
	select {
	case <-n.sent:
	case <-time.After(10 * time.Second):
		t.Fatalf("no NOTIFY: %s", what)
	}
}

// TestLoneNodeSendsNoNotify: on a shared PostgreSQL, a node whose
// heartbeat sees no other node announces its changes to no one (after one
// NOTIFY for its own arrival; the notifier counts each change it does not
// announce, and asks for no NOTIFY then); when a second node joins, the first hears
// its arrival and answers it with a NOTIFY that covers what it left
// unannounced, and from then on the second hears its changes (a long poll
// there, on a fake clock that never runs its backstop, is answered by the
// notification alone); once the second has left, the first is alone again.
func TestLoneNodeSendsNoNotify(t *testing.T) {
	t.Parallel()
	open := stores.OpenPostgresShared(t)
	rawA, rawB := open(), open()
	t.Cleanup(func() { rawA.Close(); rawB.Close() })
	stA := &notifyingPG{Store: rawA, sent: make(chan struct{}, 100)}
	fc := clock.NewFake(T0)
	ctx := context.Background()
	engA := engine.New(engine.Config{Store: stA, Clock: fc, Dev: true, Logger: discardLog, Node: "aaaa"})
	sigA := engine.WithSignals(engA)
	if err := engA.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(engA.Stop)
	sigA.NotifyHeard(t, 1) // A listens (its connect counts as heard)
	sigA.BeatAt(t, T0)
	stA.next(t, "A's arrival")
	// Its LISTEN may have connected after that first beat (a connect counts
	// as a notification heard): the next beat, with nothing heard since it
	// began, finds it alone.
	fc.Advance(engine.NodeBeatEvery)
	sigA.BeatAt(t, T0.Add(engine.NodeBeatEvery))

	now := engine.QueueRef{Org: "dev", Instance: "jobs", Queue: "now"}
	later := engine.QueueRef{Org: "dev", Instance: "jobs", Queue: "later"}
	for _, ref := range []engine.QueueRef{now, later} {
		if _, err := engA.QueueCreate(ctx, ref, &task.QueuePatch{Mode: ptr(task.ModePull)}); err != nil {
			t.Fatal(err)
		}
	}
	add := func(ref engine.QueueRef) {
		t.Helper()
		if res, err := engA.TaskAdd(ctx, ref, []task.AddInput{{}}); err != nil || res[0].Err != nil {
			t.Fatalf("add: %v %+v", err, res)
		}
	}
	skipped, asked := sigA.NotifySkipped(t, 0), sigA.NotifyAsked()
	for range 3 {
		add(now)
	}
	sigA.NotifySkipped(t, skipped+3)
	if got := sigA.NotifyAsked(); got != asked {
		t.Fatalf("A, alone, asked for %d NOTIFYs for its adds", got-asked)
	}
	for len(stA.sent) > 0 { // its arrival's, and its connect's
		<-stA.sent
	}

	// B joins: A answers its arrival.
	engB := engine.New(engine.Config{Store: rawB, Clock: fc, Dev: true, Logger: discardLog, Node: "bbbb"})
	sigB := engine.WithSignals(engB)
	if err := engB.Start(ctx); err != nil {
		t.Fatal(err)
	}
	stoppedB := false
	t.Cleanup(func() {
		if !stoppedB {
			engB.Stop()
		}
	})
	sigB.BeatAt(t, T0.Add(engine.NodeBeatEvery))
	stA.next(t, "A's answer to B's arrival")

	parked := sigB.Parked(t, 0)
	leased := make(chan []*task.Task, 1)
	go func() {
		got, err := engB.Lease(ctx, later, engine.LeaseParams{Count: 1, LeaseSeconds: 60, WaitSeconds: engine.MaxWaitSeconds})
		if err != nil {
			t.Error(err)
		}
		leased <- got
	}()
	sigB.Parked(t, parked+1)
	add(later)
	stA.next(t, "A's add with B there")
	select {
	case got := <-leased:
		if len(got) != 1 {
			t.Fatalf("B's long poll answered %d tasks, want A's one", len(got))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("B's long poll never heard A's add")
	}

	// B leaves; A's next beats see no one.
	engB.Stop()
	stoppedB = true
	// (A hears B's leaving too, at a moment of its own: the beat that
	// began before it does not count A alone, the next one does.)
	for i := 2; ; i++ {
		if i > 10 {
			t.Fatal("A never found itself alone again")
		}
		fc.Advance(engine.NodeBeatEvery)
		sigA.BeatAt(t, T0.Add(time.Duration(i)*engine.NodeBeatEvery))
		skipped, asked = sigA.NotifySkipped(t, 0), sigA.NotifyAsked()
		add(now)
		if sigA.NotifySkipped(t, 0) > skipped {
			break
		}
	}
	if got := sigA.NotifyAsked(); got != asked {
		t.Fatalf("A, alone again, asked for %d NOTIFYs", got-asked)
	}
}
