package engine_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/errandhq/errand/internal/clock"
	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/store"
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
	select {
	case n.sent <- struct{}{}:
	default: // the test has stopped counting: never hold the notifier
	}
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
// announce, and asks for no NOTIFY then); when a second node joins, the
// first hears its arrival and answers it with a NOTIFY that covers what it
// left unannounced, and from then on the second hears its changes (a long
// poll there, on a fake clock that never runs its backstop, is answered by
// the notification alone); once the second has left, the first is alone
// again.
func TestLoneNodeSendsNoNotify(t *testing.T) {
	t.Parallel()
	open := stores.OpenPostgresShared(t)
	rawA, rawB := open(), open()
	t.Cleanup(func() { rawA.Close(); rawB.Close() })
	stA := &notifyingPG{Store: rawA, sent: make(chan struct{}, 100)}
	fc := clock.NewFake(T0)
	ctx := context.Background()
	engA, sigA, add := aloneNode(t, stA, fc)
	stA.next(t, "A's arrival")

	later := engine.QueueRef{Org: "dev", Instance: "jobs", Queue: "later"}
	if _, err := engA.QueueCreate(ctx, later, &task.QueuePatch{Mode: ptr(task.ModePull)}); err != nil {
		t.Fatal(err)
	}
	skipped, asked := sigA.NotifySkipped(t, 0), sigA.NotifyAsked()
	for range 3 {
		add()
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
	if res, err := engA.TaskAdd(ctx, later, []task.AddInput{{}}); err != nil || res[0].Err != nil {
		t.Fatalf("add: %v %+v", err, res)
	}
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
		add()
		if sigA.NotifySkipped(t, 0) > skipped {
			break
		}
	}
	if got := sigA.NotifyAsked(); got != asked {
		t.Fatalf("A, alone again, asked for %d NOTIFYs", got-asked)
	}
}

// TestLoneNodeSeesAnotherAtItsBeat: a node that counts itself alone learns
// of another from a beat that sees its row, even when it heard nothing
// from it (its announcement lost: here a row written behind the engine's
// back, with no notification at all), and then asks for a NOTIFY at once
// and announces every change after.
func TestLoneNodeSeesAnotherAtItsBeat(t *testing.T) {
	t.Parallel()
	open := stores.OpenPostgresShared(t)
	raw := open()
	t.Cleanup(func() { raw.Close() })
	fc := clock.NewFake(T0)
	ctx := context.Background()
	_, sig, add := aloneNode(t, raw, fc)
	skipped := sig.NotifySkipped(t, 0)

	// Another node's row, and no word from it.
	if _, err := raw.NodeBeat(ctx, &store.NodeBeatParams{Node: "zzzz", Now: T0.Add(engine.NodeBeatEvery).UnixMilli()}); err != nil {
		t.Fatal(err)
	}
	asked := sig.NotifyAsked()
	fc.Advance(engine.NodeBeatEvery)
	sig.BeatAt(t, T0.Add(2*engine.NodeBeatEvery))
	if got := sig.NotifyAsked(); got != asked+1 {
		t.Fatalf("after a beat that saw another node: %d NOTIFYs asked for, want the 1 that covers the unannounced add", got-asked)
	}
	add()
	if got := sig.NotifyAsked(); got != asked+2 {
		t.Fatalf("an add with another node there: %d NOTIFYs asked for in all, want 2", got-asked)
	}
	if got := sig.NotifySkipped(t, 0); got != skipped {
		t.Fatalf("%d adds skipped with another node there", got-skipped)
	}
}

// heldBeatPG holds a heartbeat's answer, once asked to: the beat has read
// the nodes table when read is closed, and returns when release is.
type heldBeatPG struct {
	*postgres.Store
	hold          atomic.Bool
	read, release chan struct{}
}

func (h *heldBeatPG) NodeBeat(ctx context.Context, p *store.NodeBeatParams) (store.NodeBeatResult, error) {
	r, err := h.Store.NodeBeat(ctx, p)
	if h.hold.CompareAndSwap(true, false) {
		close(h.read)
		<-h.release
	}
	return r, err
}

// TestArrivalDuringABeat: a node's arrival heard while a beat of a lone
// node is under way — a beat whose read of the nodes table came before the
// newcomer's row — leaves the lone node counting the newcomer: that beat
// does not set it alone again, and its changes are announced.
func TestArrivalDuringABeat(t *testing.T) {
	t.Parallel()
	open := stores.OpenPostgresShared(t)
	rawA, rawB := open(), open()
	t.Cleanup(func() { rawA.Close(); rawB.Close() })
	stA := &heldBeatPG{Store: rawA, read: make(chan struct{}), release: make(chan struct{})}
	fc := clock.NewFake(T0)
	ctx := context.Background()
	release := sync.OnceFunc(func() { close(stA.release) })
	_, sigA, add := aloneNode(t, stA, fc)
	t.Cleanup(release) // before A stops: a failed test leaves no beat held

	// A's next beat reads the table (no one else there) and is held.
	stA.hold.Store(true)
	fc.Advance(engine.NodeBeatEvery)
	<-stA.read
	// B arrives; A hears its announcement, then its beat returns.
	engB := engine.New(engine.Config{Store: rawB, Clock: fc, Dev: true, Logger: discardLog, Node: "bbbb"})
	sigB := engine.WithSignals(engB)
	if err := engB.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(engB.Stop)
	sigB.BeatAt(t, T0.Add(2*engine.NodeBeatEvery))
	sigA.NotifyHeard(t, 2)
	release()
	sigA.BeatAt(t, T0.Add(2*engine.NodeBeatEvery))

	asked := sigA.NotifyAsked()
	add()
	if got := sigA.NotifyAsked(); got != asked+1 {
		t.Fatalf("A's add after B arrived asked for %d NOTIFYs, want 1 (the beat that began before B must not leave A alone)", got-asked)
	}
}

// aloneNode starts node "aaaa" on st (a PostgreSQL store no other node
// uses yet) and returns once it counts itself alone (its LISTEN connected
// — a connect counts as a notification heard — and a beat begun after it
// found no other node) and one add to its pull queue "q" went unannounced;
// add adds one task more there.
func aloneNode(t *testing.T, st store.Store, fc *clock.Fake) (*engine.Engine, *engine.Signals, func()) {
	t.Helper()
	ctx := context.Background()
	eng := engine.New(engine.Config{Store: st, Clock: fc, Dev: true, Logger: discardLog, Node: "aaaa"})
	sig := engine.WithSignals(eng)
	if err := eng.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(eng.Stop)
	sig.NotifyHeard(t, 1)
	sig.BeatAt(t, T0)
	fc.Advance(engine.NodeBeatEvery)
	sig.BeatAt(t, T0.Add(engine.NodeBeatEvery))
	ref := engine.QueueRef{Org: "dev", Instance: "jobs", Queue: "q"}
	if _, err := eng.QueueCreate(ctx, ref, &task.QueuePatch{Mode: ptr(task.ModePull)}); err != nil {
		t.Fatal(err)
	}
	add := func() {
		t.Helper()
		if res, err := eng.TaskAdd(ctx, ref, []task.AddInput{{}}); err != nil || res[0].Err != nil {
			t.Fatalf("add: %v %+v", err, res)
		}
	}
	skipped := sig.NotifySkipped(t, 0)
	add()
	sig.NotifySkipped(t, skipped+1)
	return eng, sig, add
}
