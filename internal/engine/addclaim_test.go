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
	"github.com/errandhq/errand/internal/store/postgres"
	"github.com/errandhq/errand/internal/store/sqlite"
	"github.com/errandhq/errand/internal/task"
	"github.com/errandhq/errand/internal/testkit/stores"
)

// pgCallLog records, in order, the claims that reach PostgreSQL: the
// dispatcher's ("claim QUEUE") and those made in an add's transaction
// ("add+claim QUEUE").
type pgCallLog struct {
	*postgres.Store
	callRecorder
}

func (c *pgCallLog) TaskClaim(ctx context.Context, p *store.ClaimParams) ([]*task.Task, error) {
	c.log("claim " + p.Queue.Name)
	return c.Store.TaskClaim(ctx, p)
}

func (c *pgCallLog) TaskAddClaim(ctx context.Context, tasks []*task.Task, p *store.ClaimParams) ([]store.AddResult, []*task.Task, error) {
	c.log("add+claim " + p.Queue.Name)
	return c.Store.TaskAddClaim(ctx, tasks, p)
}

// setupPG is setup on a fresh PostgreSQL database whose store logs claims.
func setupPG(t *testing.T) (*bundle, *pgCallLog) {
	t.Helper()
	raw := stores.OpenPostgresShared(t)()
	st := &pgCallLog{Store: raw}
	return start(t, st, func() { _ = raw.Close() }), st
}

// TestAddClaimsInItsTransaction: on PostgreSQL a task added due now to an
// idle push queue is claimed by the add's own transaction and delivered,
// without a claim of the dispatcher's; the add answers it running, and its
// outcome is stored as any other. On a paused queue the add only adds, and
// the dispatcher claims the task once the queue is resumed.
func TestAddClaimsInItsTransaction(t *testing.T) {
	t.Parallel()
	b, st := setupPG(t)
	rcv := newReceiver(t)
	b.queue("emails", &task.QueuePatch{Target: targetPtr(rcv.URL + "/hook")})
	b.sig.Settle(t)
	st.take()
	res, err := b.eng.TaskAdd(b.ctx, engine.QueueRef{Org: "dev", Instance: "jobs", Queue: "emails"}, []task.AddInput{{}})
	if err != nil || res[0].Err != nil {
		t.Fatalf("add: %v %+v", err, res)
	}
	if got := res[0].Task; got.State != task.Running || got.Attempt != 1 {
		t.Fatalf("the add answered %s, attempt %d; want RUNNING, attempt 1", got.State, got.Attempt)
	}
	rcv.next(t)
	b.waitState(res[0].Task.ID, task.Succeeded)
	b.sig.Settle(t)
	if calls := st.take(); len(calls) != 1 || calls[0] != "add+claim emails" {
		t.Fatalf("claims %v; want the add's alone", calls)
	}

	paused := b.queue("later", &task.QueuePatch{Target: targetPtr(rcv.URL + "/hook"), Paused: ptr(true)})
	b.sig.Settle(t)
	st.take()
	id := b.add("later", task.AddInput{})
	if calls := st.take(); len(calls) != 0 {
		t.Fatalf("an add to a paused queue claimed: %v", calls)
	}
	if _, err := b.eng.QueuePatch(b.ctx, engine.QueueRef{Org: "dev", Instance: "jobs", Queue: paused.Name}, &task.QueuePatch{Paused: ptr(false)}); err != nil {
		t.Fatal(err)
	}
	rcv.next(t)
	b.waitState(id, task.Succeeded)
}

// TestAddClaimLeavesAFullCapToThePass: while this node's own attempts fill
// the instance's maxInFlight, an add only adds; the dispatcher claims the
// task once a slot is freed, and the cap holds throughout.
func TestAddClaimLeavesAFullCapToThePass(t *testing.T) {
	t.Parallel()
	b, st := setupPG(t)
	g := newGate(t)
	if _, err := b.eng.SettingsUpdate(b.ctx, "dev", "jobs", &task.SettingsPatch{MaxInFlight: ptr(1)}); err != nil {
		t.Fatal(err)
	}
	b.queue("q", &task.QueuePatch{Target: targetPtr(g.URL)})
	b.sig.Settle(t)
	st.take()
	first := b.add("q", task.AddInput{})
	g.waitFor(t, "the first delivery", func() bool { n, _, _ := g.counts(); return n == 1 })
	second := b.add("q", task.AddInput{})
	if calls := st.take(); len(calls) == 0 || calls[0] != "add+claim q" || slices.Contains(calls[1:], "add+claim q") {
		t.Fatalf("claims %v; want the first add's, and no other add's", calls)
	}
	g.release <- 200
	b.waitState(first, task.Succeeded)
	g.waitFor(t, "the second delivery", func() bool { _, _, total := g.counts(); return total == 2 })
	g.release <- 200
	b.waitState(second, task.Succeeded)
	if _, peak, _ := g.counts(); peak != 1 {
		t.Fatalf("peak %d under a cap of 1", peak)
	}
	if calls := st.take(); slices.Contains(calls, "add+claim q") {
		t.Fatalf("claims %v; want the dispatcher's alone", calls)
	}
}

// TestAddClaimCountsItsOwnInstance: another instance's attempts in flight
// on this node do not count against this instance's maxInFlight.
func TestAddClaimCountsItsOwnInstance(t *testing.T) {
	t.Parallel()
	b, st := setupPG(t)
	g := newGate(t)
	rcv := newReceiver(t)
	for _, inst := range []string{"jobs", "other"} {
		if _, err := b.eng.SettingsUpdate(b.ctx, "dev", inst, &task.SettingsPatch{MaxInFlight: ptr(1)}); err != nil {
			t.Fatal(err)
		}
	}
	b.queue("held", &task.QueuePatch{Target: targetPtr(g.URL)})
	otherQ := engine.QueueRef{Org: "dev", Instance: "other", Queue: "q"}
	if _, err := b.eng.QueueCreate(b.ctx, otherQ, &task.QueuePatch{Target: targetPtr(rcv.URL + "/hook")}); err != nil {
		t.Fatal(err)
	}
	b.sig.Settle(t)
	held := b.add("held", task.AddInput{})
	g.waitFor(t, "the held delivery", func() bool { n, _, _ := g.counts(); return n == 1 })
	st.take()
	res, err := b.eng.TaskAdd(b.ctx, otherQ, []task.AddInput{{}})
	if err != nil || res[0].Err != nil {
		t.Fatalf("add: %v %+v", err, res)
	}
	if calls := st.take(); len(calls) == 0 || calls[0] != "add+claim q" {
		t.Fatalf("claims %v; want the other instance's add to claim", calls)
	}
	rcv.next(t)
	g.release <- 200
	b.waitState(held, task.Succeeded)
}

// TestAddClaimTakesAFreeWorkerSlot: on PostgreSQL a task added to a
// function queue whose connected worker has a free slot is claimed by the
// add's own transaction into that slot; while the worker's one slot is
// held, an add only adds, and the dispatcher claims the task once the
// slot is free. The worker never runs more than its slot.
func TestAddClaimTakesAFreeWorkerSlot(t *testing.T) {
	t.Parallel()
	raw := stores.OpenPostgresShared(t)()
	st := &pgCallLog{Store: raw}
	r := newWorkerRigOn(t, 1, st, func() { _ = raw.Close() })
	r.queue("fn", &task.QueuePatch{Target: fnTarget()})
	r.sig.Settle(t)
	st.take()
	res, err := r.eng.TaskAdd(r.ctx, engine.QueueRef{Org: "dev", Instance: "jobs", Queue: "fn"}, []task.AddInput{{}})
	if err != nil || res[0].Err != nil {
		t.Fatalf("add: %v %+v", err, res)
	}
	if got := res[0].Task; got.State != task.Running {
		t.Fatalf("the add answered %s; want RUNNING", got.State)
	}
	if id := r.next(); id != res[0].Task.ID {
		t.Fatalf("the worker started %s, want %s", id, res[0].Task.ID)
	}
	if calls := st.take(); len(calls) == 0 || calls[0] != "add+claim fn" {
		t.Fatalf("claims %v; want the add's first", calls)
	}
	second, err := r.eng.TaskAdd(r.ctx, engine.QueueRef{Org: "dev", Instance: "jobs", Queue: "fn"}, []task.AddInput{{}})
	if err != nil || second[0].Err != nil {
		t.Fatalf("add: %v %+v", err, second)
	}
	if got := second[0].Task; got.State != task.Pending {
		t.Fatalf("with the slot held the add answered %s; want PENDING", got.State)
	}
	r.none()
	if calls := st.take(); slices.Contains(calls, "add+claim fn") {
		t.Fatalf("claims %v; an add claimed with no slot free", calls)
	}
	r.release <- true
	r.waitState(res[0].Task.ID, task.Succeeded)
	if id := r.next(); id != second[0].Task.ID {
		t.Fatalf("the worker started %s, want %s", id, second[0].Task.ID)
	}
	r.release <- true
	r.waitState(second[0].Task.ID, task.Succeeded)
	if r.peak != 1 {
		t.Fatalf("peak %d on a worker of one slot", r.peak)
	}
}

// gatedClaims is a SQLite store whose first claim of queue "slow" tells
// entered and then waits until release is closed.
type gatedClaims struct {
	*sqlite.Store
	once    sync.Once
	entered chan struct{}
	release chan struct{}
}

func (g *gatedClaims) TaskClaim(ctx context.Context, p *store.ClaimParams) ([]*task.Task, error) {
	if p.Queue.Name == "slow" {
		g.once.Do(func() {
			close(g.entered)
			<-g.release
		})
	}
	return g.Store.TaskClaim(ctx, p)
}

// TestAddClaimWaitsForThePassClaim: an add to a function queue made while
// a claim of the pass holds the slot lock waits for that claim, then claims
// its own task into the free slot (it is answered RUNNING and the worker
// starts it), rather than leaving it to a later pass.
func TestAddClaimWaitsForThePassClaim(t *testing.T) {
	t.Parallel()
	raw, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "errand.db"), sqlite.Options{Logger: discardLog})
	if err != nil {
		t.Fatal(err)
	}
	st := &gatedClaims{Store: raw, entered: make(chan struct{}), release: make(chan struct{})}
	r := newWorkerRigOn(t, 1, st, func() { _ = raw.Close() })
	rcv := newReceiver(t)
	r.queue("fn", &task.QueuePatch{Target: fnTarget()})
	slow := r.queue("slow", &task.QueuePatch{Target: targetPtr(rcv.URL + "/hook")})
	r.sig.Settle(t)
	tk, err := task.NewTask(slow, task.AddInput{}, r.clock.Now().UnixMilli(), task.URLRules{AllowHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	tk.ID = "slow-task"
	if res, err := raw.TaskAdd(r.ctx, []*task.Task{tk}); err != nil || res[0].Err != nil {
		t.Fatal(err, res)
	}
	engine.DueAdded(r.eng, slow.InstanceID, slow.Name)
	r.eng.Wake()
	<-st.entered // the pass holds the slot lock in its claim of slow
	done := make(chan []engine.AddResult, 1)
	go func() {
		res, err := r.eng.TaskAdd(r.ctx, engine.QueueRef{Org: "dev", Instance: "jobs", Queue: "fn"}, []task.AddInput{{}})
		if err != nil || res[0].Err != nil {
			t.Errorf("add: %v %+v", err, res)
		}
		done <- res
	}()
	r.sig.AddsAtTheSlotLock(t, 1)
	close(st.release)
	res := <-done
	if t.Failed() {
		return
	}
	if got := res[0].Task; got.State != task.Running {
		t.Fatalf("the add answered %s; want RUNNING, claimed by the add once the pass's claim ended", got.State)
	}
	if id := r.next(); id != res[0].Task.ID {
		t.Fatalf("the worker started %s, want %s", id, res[0].Task.ID)
	}
	r.release <- true
	rcv.next(t)
}

// heldAddClaims is a real SQLite store (an AddClaimer) whose first add
// that claims waits for release, and which counts the adds that claim and
// those that do not.
type heldAddClaims struct {
	*sqlite.Store
	entered, release chan struct{}
	mu               sync.Mutex
	addClaims, adds  int
}

func (h *heldAddClaims) TaskAddClaim(ctx context.Context, tasks []*task.Task, p *store.ClaimParams) ([]store.AddResult, []*task.Task, error) {
	h.mu.Lock()
	h.addClaims++
	first := h.addClaims == 1
	h.mu.Unlock()
	if first {
		close(h.entered)
		<-h.release
	}
	return h.Store.TaskAddClaim(ctx, tasks, p)
}

func (h *heldAddClaims) TaskAdd(ctx context.Context, tasks []*task.Task) ([]store.AddResult, error) {
	h.mu.Lock()
	h.adds++
	h.mu.Unlock()
	return h.Store.TaskAdd(ctx, tasks)
}

// TestSingleAddsBesideAnAddClaim: a call of one task that arrives while
// another is under way on the node does not claim in its add (that would
// wait for the other's claim lock): it is added alone, answered at once
// though the other's claim is still held, and the dispatcher delivers it.
// A lone single add still claims in its add.
func TestSingleAddsBesideAnAddClaim(t *testing.T) {
	t.Parallel()
	raw, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "errand.db"), sqlite.Options{Logger: discardLog})
	if err != nil {
		t.Fatal(err)
	}
	st := &heldAddClaims{Store: raw, entered: make(chan struct{}), release: make(chan struct{})}
	b := start(t, st, func() { _ = raw.Close() })
	rcv := newReceiver(t)
	b.queue("emails", &task.QueuePatch{Target: targetPtr(rcv.URL + "/hook")})
	ref := engine.QueueRef{Org: "dev", Instance: "jobs", Queue: "emails"}

	first := make(chan []engine.AddResult, 1)
	go func() {
		res, err := b.eng.TaskAdd(b.ctx, ref, []task.AddInput{{}})
		if err != nil {
			t.Error(err)
		}
		first <- res
	}()
	<-st.entered // the first add claims, holding its claim
	release := sync.OnceFunc(func() { close(st.release) })
	defer release() // a failing test lets the first go, so that it can end
	second := make(chan []engine.AddResult, 1)
	go func() {
		res, err := b.eng.TaskAdd(b.ctx, ref, []task.AddInput{{}})
		if err != nil {
			t.Error(err)
		}
		second <- res
	}()
	var res []engine.AddResult
	select {
	case res = <-second:
	case <-time.After(10 * time.Second):
		t.Fatal("a single add beside another waited for the other's claim")
	}
	if res == nil || res[0].Err != nil || res[0].Task.State != task.Pending {
		t.Fatalf("a single add beside another: %+v", res)
	}
	st.mu.Lock()
	addClaims, adds := st.addClaims, st.adds
	st.mu.Unlock()
	if addClaims != 1 || adds != 1 {
		t.Fatalf("adds that claimed %d, that did not %d; want 1 and 1", addClaims, adds)
	}
	release()
	other := <-first
	if other == nil || other[0].Err != nil || other[0].Task.State != task.Running {
		t.Fatalf("the lone add: %+v; want it claimed in its add", other)
	}
	rcv.next(t)
	rcv.next(t)
	b.waitState(res[0].Task.ID, task.Succeeded)
	b.waitState(other[0].Task.ID, task.Succeeded)
}
