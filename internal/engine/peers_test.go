package engine_test

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/errandhq/errand/internal/clock"
	"github.com/errandhq/errand/internal/deliver"
	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/store/postgres"
	"github.com/errandhq/errand/internal/task"
	"github.com/errandhq/errand/internal/testkit/stores"
)

// notifyingPG reports each NOTIFY a node sends for its changes, and its
// kind.
type notifyingPG struct {
	*postgres.Store
	sent chan store.Change
}

func (n *notifyingPG) Notify(ctx context.Context, c store.Change) error {
	err := n.Store.Notify(ctx, c)
	select {
	case n.sent <- c:
	default: // the test has stopped counting: never hold the notifier
	}
	return err
}

// next waits for the next NOTIFY and returns its kind.
func (n *notifyingPG) next(t *testing.T, what string) store.Change {
	t.Helper()
	return nextNotify(t, n.sent, what)
}

// nextNotify waits for the next NOTIFY reported on sent and returns its
// kind.
func nextNotify(t *testing.T, sent <-chan store.Change, what string) store.Change {
	t.Helper()
	select {
	case c := <-sent:
		return c
	case <-time.After(10 * time.Second):
		t.Fatalf("no NOTIFY: %s", what)
	}
	return 0
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
	stA := &notifyingPG{Store: rawA, sent: make(chan store.Change, 100)}
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

// heardPG reports each notification its node heard, with the node's wake
// counts (engine.Signals.Wakes) just before and after the node took it.
type heardPG struct {
	*postgres.Store
	wakes func() [4]uint64
	heard chan heardWakes
}

// heardWakes is one notification heardPG reported.
type heardWakes struct {
	h             store.Heard
	before, after [4]uint64
}

func (s *heardPG) Listen(ctx context.Context, fn func(store.Heard)) error {
	return s.Store.Listen(ctx, func(h store.Heard) {
		before := s.wakes()
		fn(h)
		select {
		case s.heard <- heardWakes{h: h, before: before, after: s.wakes()}:
		default: // the test has stopped reading: never hold the LISTEN
		}
	})
}

// until returns the next notification of kind h, passing the others.
func (s *heardPG) until(t *testing.T, h store.Heard) heardWakes {
	t.Helper()
	for {
		select {
		case got := <-s.heard:
			if got.h == h {
				return got
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no notification of kind %d heard", h)
		}
	}
}

// TestAddsWakeOtherNodesAsTheyMust: a task added to a pull queue on one
// node wakes only the long polls (and the console's watchers) of another:
// its dispatcher, rescuer and scheduler have nothing to do with it. So
// does a task added to a webhook's push queue, which the adding node
// delivers itself. A function's task wakes the other node's dispatcher
// only once that node serves a function (its workers may be connected
// there; a node that serves none claims none). A paused queue's task (the
// other node may resume it) and any other change wake them all.
func TestAddsWakeOtherNodesAsTheyMust(t *testing.T) {
	t.Parallel()
	open := stores.OpenPostgresShared(t)
	rawA, rawB := open(), open()
	t.Cleanup(func() { rawA.Close(); rawB.Close() })
	stA := &notifyingPG{Store: rawA, sent: make(chan store.Change, 100)}
	stB := &heardPG{Store: rawB, heard: make(chan heardWakes, 256)}
	fc := clock.NewFake(T0)
	ctx := context.Background()
	engA, sigA, add := aloneNode(t, stA, fc)
	stA.next(t, "A's arrival")

	fnsB := &deliver.Functions{} // B serves no function until one is registered
	engB := engine.New(engine.Config{Store: stB, Clock: fc, Dev: true, Logger: discardLog, Node: "bbbb",
		Deliverer: &deliver.Mux{Function: &deliver.FunctionRoutes{InProcess: fnsB, Workers: &deliver.Workers{}}}})
	sigB := engine.WithSignals(engB)
	stB.wakes = sigB.Wakes
	if err := engB.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(engB.Stop)
	sigB.NotifyHeard(t, 1) // its LISTEN is connected
	sigB.BeatAt(t, T0.Add(engine.NodeBeatEvery))

	// A's NOTIFY of an add may be shared with one still on its way (its
	// answer to B's arrival), and then be of any change: A adds until one
	// goes out as a pull add's own.
	for i := 0; ; i++ {
		if i == 10 {
			t.Fatal("A's adds never went out as a pull add's NOTIFY")
		}
		add()
		if stA.next(t, "A's add") == store.ChangeWaiters {
			break
		}
	}
	got := stB.until(t, store.HeardWaiters)
	if got.after[3] == got.before[3] {
		t.Fatal("A's pull add did not wake B's long polls")
	}
	for i, name := range []string{"dispatcher", "rescuer", "scheduler"} {
		if got.after[i] != got.before[i] {
			t.Errorf("A's pull add woke B's %s", name)
		}
	}

	if _, err := engA.QueueCreate(ctx, engine.QueueRef{Org: "dev", Instance: "jobs", Queue: "other"}, &task.QueuePatch{}); err != nil {
		t.Fatal(err)
	}
	got = stB.until(t, store.HeardChange)
	for i, name := range []string{"dispatcher", "rescuer", "scheduler", "long polls"} {
		if got.after[i] == got.before[i] {
			t.Errorf("A's queue create did not wake B's %s", name)
		}
	}

	// Adds to push queues. The receiver holds A's deliveries, so that no
	// finish asks for a NOTIFY of its own.
	release := make(chan struct{})
	rcv := newReceiver(t)
	rcv.answer.Store(func(w http.ResponseWriter) { <-release; w.WriteHeader(200) })
	t.Cleanup(func() { close(release) }) // before the receiver closes
	fn := &task.Target{Function: "img/resize"}
	for _, c := range []struct {
		queue string
		patch *task.QueuePatch
		want  store.Change
		serve bool // B serves a function from then on
	}{
		{"hooks", &task.QueuePatch{Target: targetPtr(rcv.URL)}, store.ChangeWaiters, false},
		{"resize", &task.QueuePatch{Target: &fn}, store.ChangeFunctions, false},
		{"resize2", &task.QueuePatch{Target: &fn}, store.ChangeFunctions, true},
		{"held", &task.QueuePatch{Target: targetPtr(rcv.URL), Paused: ptr(true)}, store.ChangeAny, true},
	} {
		ref := engine.QueueRef{Org: "dev", Instance: "jobs", Queue: c.queue}
		if _, err := engA.QueueCreate(ctx, ref, c.patch); err != nil {
			t.Fatal(err)
		}
		if c.serve {
			// A function other than the tasks': B is woken, and claims none.
			if err := fnsB.Handle("other/fn", func(context.Context, *task.Task) (json.RawMessage, error) { return nil, nil }); err != nil {
				t.Fatal(err)
			}
		}
		sigA.NotifyCovered(t)
		for len(stA.sent) > 0 {
			<-stA.sent
		}
		if res, err := engA.TaskAdd(ctx, ref, []task.AddInput{{}}); err != nil || res[0].Err != nil {
			t.Fatalf("add to %s: %v %+v", c.queue, err, res)
		}
		if got := stA.next(t, c.queue+"'s add"); got != c.want {
			t.Errorf("A's add to %s is a NOTIFY of %d, want %d", c.queue, got, c.want)
			continue
		}
		switch {
		case c.want == store.ChangeWaiters, c.want == store.ChangeFunctions && !c.serve:
			heard := store.HeardWaiters
			if c.want == store.ChangeFunctions {
				heard = store.HeardFunctions
			}
			got := stB.until(t, heard)
			if got.after[0] != got.before[0] || got.after[3] == got.before[3] {
				t.Errorf("A's add to %s woke B's dispatcher (%d → %d) or not its long polls (%d → %d)",
					c.queue, got.before[0], got.after[0], got.before[3], got.after[3])
			}
		case c.want == store.ChangeFunctions:
			got := stB.until(t, store.HeardFunctions)
			if got.after[0] == got.before[0] || got.after[3] == got.before[3] {
				t.Errorf("A's add to %s did not wake B's dispatcher (%d → %d) or its long polls (%d → %d), B serving a function",
					c.queue, got.before[0], got.after[0], got.before[3], got.after[3])
			}
		}
	}
}

// gatedPG reports the kind of each NOTIFY its node sends and, while hold
// is set, holds it until the test lets it go (pass).
type gatedPG struct {
	*postgres.Store
	sent chan store.Change
	hold atomic.Bool
	gate chan struct{}
}

func (g *gatedPG) Notify(ctx context.Context, c store.Change) error {
	select {
	case g.sent <- c:
	default:
	}
	if g.hold.Load() {
		select {
		case <-g.gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return g.Store.Notify(ctx, c)
}

// pass lets the NOTIFY held go.
func (g *gatedPG) pass(t *testing.T) {
	t.Helper()
	select {
	case g.gate <- struct{}{}:
	case <-time.After(10 * time.Second):
		t.Fatal("no NOTIFY held")
	}
}

// heldNode starts a node on a fresh PostgreSQL store where another node's
// row keeps it from ever counting itself alone, with waitersGap as the least
// time before a NOTIFY for pull adds alone, and returns once every NOTIFY
// of its start (and of its pull queue "q"'s creation) is sent, with the
// ones from then on held; add adds one task to "q".
func heldNode(t *testing.T, waitersGap time.Duration) (*gatedPG, *engine.Engine, *engine.Signals, func()) {
	t.Helper()
	open := stores.OpenPostgresShared(t)
	raw := open()
	t.Cleanup(func() { raw.Close() })
	ctx := context.Background()
	if _, err := raw.NodeBeat(ctx, &store.NodeBeatParams{Node: "zzzz", Now: T0.UnixMilli()}); err != nil {
		t.Fatal(err)
	}
	st := &gatedPG{Store: raw, sent: make(chan store.Change, 100), gate: make(chan struct{})}
	fc := clock.NewFake(T0)
	eng := engine.New(engine.Config{Store: st, Clock: fc, Dev: true, Logger: discardLog, Node: "aaaa"})
	sig := engine.WithSignals(eng)
	engine.SetWaitersNotifyGap(eng, waitersGap)
	if err := eng.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(eng.Stop)
	t.Cleanup(func() { st.hold.Store(false); close(st.gate) }) // before Stop: cleanups run last first
	sig.BeatAt(t, T0)
	ref := engine.QueueRef{Org: "dev", Instance: "jobs", Queue: "q"}
	if _, err := eng.QueueCreate(ctx, ref, &task.QueuePatch{Mode: ptr(task.ModePull)}); err != nil {
		t.Fatal(err)
	}
	sig.NotifyCovered(t)
	for len(st.sent) > 0 {
		<-st.sent
	}
	st.hold.Store(true)
	add := func() {
		t.Helper()
		if res, err := eng.TaskAdd(ctx, ref, []task.AddInput{{}}); err != nil || res[0].Err != nil {
			t.Fatalf("add: %v %+v", err, res)
		}
	}
	return st, eng, sig, add
}

// TestCoalescedNotifyIsTheWider: changes asked for while a NOTIFY is on
// its way share the next one, which is of any change if one of them was,
// though the last was a pull add.
func TestCoalescedNotifyIsTheWider(t *testing.T) {
	t.Parallel()
	st, eng, sig, add := heldNode(t, 0)
	ctx := context.Background()
	other := func(name string) {
		t.Helper()
		if _, err := eng.QueueCreate(ctx, engine.QueueRef{Org: "dev", Instance: "jobs", Queue: name}, &task.QueuePatch{}); err != nil {
			t.Fatal(err)
		}
	}
	other("held")
	if c := nextNotify(t, st.sent, "the queue create's"); c != store.ChangeAny {
		t.Fatalf("a queue create's NOTIFY is of %d, want any change (%d)", c, store.ChangeAny)
	}
	// The queue create's NOTIFY is held; a pull add, a queue create and a
	// pull add meet while it is.
	asked := sig.NotifyAsked()
	add()
	other("other")
	add()
	if got := sig.NotifyAsked(); got != asked+3 {
		t.Fatalf("%d NOTIFYs asked for, want 3", got-asked)
	}
	st.pass(t)
	if c := nextNotify(t, st.sent, "the three changes'"); c != store.ChangeAny {
		t.Fatalf("the NOTIFY of a pull add, a queue create and a pull add is of %d, want any change (%d)", c, store.ChangeAny)
	}
	st.pass(t)
	add()
	if c := nextNotify(t, st.sent, "a pull add's"); c != store.ChangeWaiters {
		t.Fatalf("a lone pull add's NOTIFY is of %d, want a pull add (%d)", c, store.ChangeWaiters)
	}
	st.pass(t)

	// A function's add met by pull adds is sent as the function's (it
	// wakes the dispatchers of the nodes that serve a function, and every
	// node's waiters); met by any other change, as that.
	fn := &task.Target{Function: "img/resize"}
	fnRef := engine.QueueRef{Org: "dev", Instance: "jobs", Queue: "resize"}
	if _, err := eng.QueueCreate(ctx, fnRef, &task.QueuePatch{Target: &fn}); err != nil {
		t.Fatal(err)
	}
	if c := nextNotify(t, st.sent, "the function queue's create"); c != store.ChangeAny {
		t.Fatalf("a queue create's NOTIFY is of %d, want any change (%d)", c, store.ChangeAny)
	}
	addFn := func() {
		t.Helper()
		if res, err := eng.TaskAdd(ctx, fnRef, []task.AddInput{{}}); err != nil || res[0].Err != nil {
			t.Fatalf("a function's add: %v %+v", err, res)
		}
	}
	for _, c := range []struct {
		what string
		asks []func()
		want store.Change
	}{
		{"a pull add, a function's add, a pull add", []func(){add, addFn, add}, store.ChangeFunctions},
		{"a function's add, a queue create", []func(){addFn, func() { other("third") }}, store.ChangeAny},
	} {
		asked := sig.NotifyAsked()
		for _, ask := range c.asks {
			ask()
		}
		if got := sig.NotifyAsked(); got != asked+len(c.asks) {
			t.Fatalf("%s: %d NOTIFYs asked for, want %d", c.what, got-asked, len(c.asks))
		}
		st.pass(t) // the NOTIFY held meanwhile
		if got := nextNotify(t, st.sent, c.what); got != c.want {
			t.Fatalf("the NOTIFY of %s is of %d, want %d", c.what, got, c.want)
		}
	}
	st.pass(t)
	sig.NotifyCovered(t)
}

// TestPullAddsWaitOutTheGap: pull adds asked for within the gap after a
// NOTIFY wait for it to pass (here an hour, on real time) and share one;
// a change of any other kind asked for meanwhile is sent at once and
// covers them.
func TestPullAddsWaitOutTheGap(t *testing.T) {
	t.Parallel()
	st, eng, sig, add := heldNode(t, time.Hour)
	ctx := context.Background()
	asked := sig.NotifyAsked()
	for range 3 {
		add()
	}
	if got := sig.NotifyAsked(); got != asked+3 {
		t.Fatalf("%d NOTIFYs asked for, want 3", got-asked)
	}
	if _, err := eng.QueueCreate(ctx, engine.QueueRef{Org: "dev", Instance: "jobs", Queue: "other"}, &task.QueuePatch{}); err != nil {
		t.Fatal(err)
	}
	if c := nextNotify(t, st.sent, "the queue create's"); c != store.ChangeAny {
		t.Fatalf("the first NOTIFY after three pull adds and a queue create is of %d, want any change (%d)", c, store.ChangeAny)
	}
	st.pass(t)
	sig.NotifyCovered(t)
}

// aloneNode starts node "aaaa" on st (a PostgreSQL store no other node
// uses yet) and returns once it counts itself alone (its LISTEN connected
// — a connect counts as a notification heard — and a beat begun after it
// found no other node) and one add to its pull queue "q" went unannounced;
// add adds one task more there.
func aloneNode(t *testing.T, st store.Store, fc *clock.Fake) (*engine.Engine, *engine.Signals, func()) {
	t.Helper()
	ctx := context.Background()
	eng := engine.New(engine.Config{Store: st, Clock: fc, Dev: true, Logger: discardLog, Node: "aaaa",
		URLRules: task.URLRules{AllowHTTP: true}, Deliverer: &deliver.Mux{Webhook: deliver.NewWebhook(deliver.WebhookOptions{})}})
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
