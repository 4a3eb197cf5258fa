package engine_test

import (
	"context"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/store/sqlite"
	"github.com/errandhq/errand/internal/task"
)

// heldWrites is a real store that records how many calls (tasks) each hook
// add (task add) wrote, and whose first write of the kind held waits for
// release.
type heldWrites struct {
	store.Store
	held             *[]int // &hooks or &adds: the kind whose first write waits
	entered, release chan struct{}
	mu               sync.Mutex
	hooks, adds      []int
}

// hold records a write of n in sizes, and holds it if it is the first of
// the kind held.
func (h *heldWrites) hold(sizes *[]int, n int) {
	h.mu.Lock()
	*sizes = append(*sizes, n)
	first := len(*sizes) == 1 && sizes == h.held
	h.mu.Unlock()
	if first {
		close(h.entered)
		<-h.release
	}
}

// sizes returns a copy of what sizes holds.
func (h *heldWrites) sizes(sizes *[]int) []int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(*sizes)
}

func (h *heldWrites) TriggerHookAdd(ctx context.Context, ps []*store.TriggerHookAddParams) ([]store.TriggerFireResult, error) {
	h.hold(&h.hooks, len(ps))
	return h.Store.TriggerHookAdd(ctx, ps)
}

func (h *heldWrites) TaskAdd(ctx context.Context, ts []*task.Task) ([]store.AddResult, error) {
	h.hold(&h.adds, len(ts))
	return h.Store.TaskAdd(ctx, ts)
}

// heldSetup starts an engine on a real SQLite file behind heldWrites,
// holding the first hook add (hooks) or the first task add.
func heldSetup(t *testing.T, hooks bool) (*bundle, *heldWrites) {
	t.Helper()
	raw, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "errand.db"), sqlite.Options{Logger: discardLog})
	if err != nil {
		t.Fatal(err)
	}
	st := &heldWrites{Store: raw, entered: make(chan struct{}), release: make(chan struct{})}
	st.held = &st.adds
	if hooks {
		st.held = &st.hooks
	}
	return start(t, st, func() { _ = raw.Close() }), st
}

// joined waits for the next report of a group commit's queue, failing the
// test if none comes: a call that never joins a batch.
func joined(t *testing.T, c <-chan int) int {
	t.Helper()
	select {
	case n := <-c:
		return n
	case <-time.After(10 * time.Second):
		t.Fatal("no call joined the group commit")
		return 0
	}
}

// TestHookCallsShareATransaction: hook calls that arrive while another
// call's transaction is being written are written together in the next
// one (a rule's count is one row, so calls written one at a time would each
// wait for the last one's commit), and each is answered with its own task
// and counted on the rule.
func TestHookCallsShareATransaction(t *testing.T) {
	b, st := heldSetup(t, true)
	b.queue("in", &task.QueuePatch{Mode: new(task.ModePull)})
	tr, err := b.eng.TriggerCreate(b.ctx, "dev", "jobs", &task.TriggerPatch{Queue: new("jobs/in"), Hook: &task.HookPatch{}})
	if err != nil {
		t.Fatal(err)
	}
	queued := make(chan int, 8)
	engine.OnHookQueued(b.eng, func(n int) { queued <- n })

	type answer struct {
		id  string
		err error
	}
	answers := make(chan answer, 4)
	call := func() {
		h, err := b.eng.HookFind(b.ctx, "jobs", tr.HookToken)
		if err != nil {
			answers <- answer{err: err}
			return
		}
		added, err := b.eng.HookFire(b.ctx, h, engine.HookCall{Body: []byte(`{"n":1}`), Header: func(string) string { return "" }})
		if err != nil {
			answers <- answer{err: err}
			return
		}
		answers <- answer{id: added.TaskID}
	}
	go call()
	joined(t, queued)
	<-st.entered // the first call's transaction is being written
	for range 3 {
		go call()
	}
	for want := 1; want <= 3; want++ {
		if n := joined(t, queued); n != want {
			t.Fatalf("%d calls waiting, want %d", n, want)
		}
	}
	close(st.release)
	ids := map[string]bool{}
	for range 4 {
		a := <-answers
		if a.err != nil || a.id == "" {
			t.Fatalf("a hook call: %+v", a)
		}
		ids[a.id] = true
	}
	if len(ids) != 4 {
		t.Fatalf("4 calls answered %d tasks", len(ids))
	}
	if sizes := st.sizes(&st.hooks); !slices.Equal(sizes, []int{1, 3}) {
		t.Fatalf("hook adds wrote %v calls, want [1 3]", sizes)
	}
	got, err := b.eng.TriggerGet(b.ctx, engine.TriggerRef{Org: "dev", Instance: "jobs", ID: tr.ID})
	if err != nil || got.Fired != 4 {
		t.Fatalf("rule fired %+v %v, want 4", got, err)
	}
}

// TestSingleAddsShareATransaction: calls that add one task each and arrive
// while another such call is being written are stored in one TaskAdd, each
// answered with its own task (a name an earlier call of the batch took is
// TASK_EXISTS with that call's task); a call of several tasks writes alone,
// in a transaction of its own.
func TestSingleAddsShareATransaction(t *testing.T) {
	b, st := heldSetup(t, false)
	b.queue("in", &task.QueuePatch{Mode: new(task.ModePull)})
	queued := make(chan int, 8)
	engine.OnAddOneQueued(b.eng, func(n int) { queued <- n })
	ref := engine.QueueRef{Org: "dev", Instance: "jobs", Queue: "in"}

	type answer struct {
		res []engine.AddResult
		err error
	}
	answers := make(chan answer, 8)
	add := func(names ...string) {
		ins := make([]task.AddInput, len(names))
		for i, n := range names {
			ins[i] = task.AddInput{Payload: []byte(`{"n":1}`), Name: n}
		}
		res, err := b.eng.TaskAdd(b.ctx, ref, ins)
		answers <- answer{res, err}
	}
	go add("first")
	joined(t, queued)
	<-st.entered // the first call's transaction is being written
	go add("a")
	joined(t, queued)
	go add("")
	joined(t, queued)
	go add("a") // a retry of the second call, in the same batch
	if n := joined(t, queued); n != 3 {
		t.Fatalf("%d calls waiting, want 3", n)
	}
	close(st.release)
	byName := map[string]string{} // the added tasks' ids by name
	var existing []string         // the ids TASK_EXISTS answered
	for range 4 {
		a := <-answers
		if a.err != nil || len(a.res) != 1 {
			t.Fatalf("a single add: %+v", a)
		}
		r := a.res[0]
		switch {
		case r.Err == nil:
			byName[r.Task.Name] = r.Task.ID
		case r.Err.Code == task.CodeTaskExists:
			existing = append(existing, r.Err.ID)
		default:
			t.Fatalf("a single add: %v", r.Err)
		}
	}
	if len(byName) != 3 || len(existing) != 1 || existing[0] != byName["a"] || byName["a"] == "" {
		t.Fatalf("4 calls, one a retry: added %v, TASK_EXISTS %v", byName, existing)
	}
	// A call of two tasks is its own transaction, not queued with others.
	add("x", "y")
	if a := <-answers; a.err != nil || a.res[0].Err != nil || a.res[1].Err != nil {
		t.Fatalf("a call of two tasks: %+v", a)
	}
	if sizes := st.sizes(&st.adds); !slices.Equal(sizes, []int{1, 3, 2}) {
		t.Fatalf("task adds wrote %v tasks, want [1 3 2]", sizes)
	}
	select {
	case n := <-queued:
		t.Fatalf("a call of two tasks joined the single adds' queue (%d waiting)", n)
	default:
	}
}
