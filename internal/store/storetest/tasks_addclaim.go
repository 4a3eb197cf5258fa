package storetest

import (
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// addClaimCases are run on a store that is a store.AddClaimer, and skipped
// on the others.
var addClaimCases = []testCase{
	{"ClaimsWhatItAdds", testAddClaimClaimsWhatItAdds},
	{"KeepsTheLimits", testAddClaimKeepsTheLimits},
	{"Priority", testAddClaimPriority},
	{"KeepsTheQueueCapAndRate", testAddClaimKeepsTheQueueCapAndRate},
	{"FullBatch", testAddClaimFullBatch},
	{"FunctionSlots", testAddClaimFunctionSlots},
	{"ConcurrentAddsKeepTheCap", testAddClaimConcurrentAddsKeepTheCap},
	{"MissingQueue", testAddClaimMissingQueue},
	{"TakenID", testAddClaimTakenID},
	{"NotClaimable", testAddClaimNotClaimable},
}

// addClaim runs TaskAddClaim of tasks with a claim of q at now for up to
// limit tasks, with the limits set by mod, or skips the test on a store
// that has none.
func (e *env) addClaim(q *task.Queue, now int64, limit int, mod func(p *store.ClaimParams), tasks ...*task.Task) ([]store.AddResult, []*task.Task) {
	e.t.Helper()
	ac, ok := e.s.(store.AddClaimer)
	if !ok {
		e.t.Skip("the store does not claim in an add's transaction")
	}
	p := &store.ClaimParams{Queue: q, Now: now, Limit: limit, LeaseMs: 60_000, NewLeaseID: e.leases(), Due: true}
	if mod != nil {
		mod(p)
	}
	res, claimed, err := ac.TaskAddClaim(e.ctx, tasks, p)
	if err != nil {
		e.t.Fatalf("TaskAddClaim: %v", err)
	}
	if len(res) != len(tasks) {
		e.t.Fatalf("TaskAddClaim: %d results for %d tasks", len(res), len(tasks))
	}
	return res, claimed
}

// testAddClaimClaimsWhatItAdds: the tasks added are claimed with the
// queue's earlier due tasks, in runAt order, as TaskClaim would; the
// stored rows and the add's results say RUNNING, and a task not claimed
// (past the limit) stays PENDING.
func testAddClaimClaimsWhatItAdds(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	q := e.queue(inst, "work", task.ModePush)
	older := e.add(e.newTask(q, T0))[0]
	a, b, c := e.newTask(q, T0+5), e.newTask(q, T0+5), e.newTask(q, T0+5)
	res, claimed := e.addClaim(q, T0+5, 3, nil, a, b, c)
	if len(claimed) != 3 || claimed[0].ID != older.ID || claimed[1].ID != a.ID || claimed[2].ID != b.ID {
		t.Fatalf("claimed %v; want %s, %s, %s", ids(claimed), older.ID, a.ID, b.ID)
	}
	for i, r := range res {
		if r.Err != nil || r.Task == nil {
			t.Fatalf("result %d: %+v", i, r)
		}
	}
	for i, r := range res[:2] {
		if r.Task.State != task.Running || r.Task.Attempt != 1 || r.Task.LeaseID != claimed[i+1].LeaseID {
			t.Fatalf("result %d of a claimed task: %+v", i, r.Task)
		}
	}
	if res[2].Task.State != task.Pending {
		t.Fatalf("result of the task left: %s", res[2].Task.State)
	}
	for _, ct := range claimed {
		got := e.get(inst.ID, ct.ID)
		if got.State != task.Running || got.LeaseID != ct.LeaseID || got.Attempt != 1 || got.StartedAt != T0+5 {
			t.Fatalf("stored %s: %s attempt %d lease %q started %d", ct.ID, got.State, got.Attempt, got.LeaseID, got.StartedAt)
		}
	}
	if got := e.get(inst.ID, c.ID); got.State != task.Pending {
		t.Fatalf("the task past the limit is %s", got.State)
	}
	if string(claimed[1].Payload) != string(a.Payload) {
		t.Fatalf("claimed payload %q, added %q", claimed[1].Payload, a.Payload)
	}
}

// testAddClaimPriority: an add's claim takes its tasks and the queue's
// earlier due ones in claim order: a prioritized task added goes before
// the default ones already due, and a prioritized one already due before
// a default one added.
func testAddClaimPriority(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	q := e.queue(inst, "work", task.ModePush)
	prio := func(n int) func(*task.AddInput) { return func(in *task.AddInput) { in.Priority = &n } }
	older := e.add(e.newTask(q, T0))[0]
	urgent := e.newTask(q, T0+5, prio(3))
	_, claimed := e.addClaim(q, T0+5, 1, nil, e.newTask(q, T0+5), urgent)
	if len(claimed) != 1 || claimed[0].ID != urgent.ID || claimed[0].Priority != 3 {
		t.Fatalf("claimed %v; want the prioritized task added, %s", ids(claimed), urgent.ID)
	}
	waiting := e.add(e.newTask(q, T0+6, prio(7)))[0]
	_, claimed = e.addClaim(q, T0+7, 2, nil, e.newTask(q, T0+7))
	if len(claimed) != 2 || claimed[0].ID != waiting.ID || claimed[1].ID != older.ID {
		t.Fatalf("claimed %v; want %s, then %s", ids(claimed), waiting.ID, older.ID)
	}
}

// testAddClaimKeepsTheLimits: under the instance's cap, already reached,
// the add stores its task and claims none.
func testAddClaimKeepsTheLimits(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	q := e.queue(inst, "work", task.ModePush)
	e.addN(q, 2, T0, nil)
	e.claim(q, T0, 2, 60_000)
	capped := func(p *store.ClaimParams) { p.InstanceMaxRunning = 2 }
	tk := e.newTask(q, T0+1)
	res, claimed := e.addClaim(q, T0+1, 10, capped, tk)
	if len(claimed) != 0 || res[0].Err != nil {
		t.Fatalf("at the cap: claimed %v, result %+v", ids(claimed), res[0])
	}
	if got := e.get(inst.ID, tk.ID); got.State != task.Pending {
		t.Fatalf("the task added at the cap is %s", got.State)
	}
	capped = func(p *store.ClaimParams) { p.InstanceMaxRunning = 3 }
	if _, claimed = e.addClaim(q, T0+2, 10, capped, e.newTask(q, T0+2)); len(claimed) != 1 || claimed[0].ID != tk.ID {
		t.Fatalf("one slot free: claimed %v; want %s", ids(claimed), tk.ID)
	}
}

// testAddClaimMissingQueue: tasks of a queue that does not exist are
// NOT_FOUND, and nothing is stored or claimed.
func testAddClaimMissingQueue(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	gone := task.NewQueue(inst.ID, "gone", task.ModePush)
	tk := e.newTask(gone, T0)
	res, claimed := e.addClaim(gone, T0, 10, nil, tk)
	if len(claimed) != 0 || res[0].Err == nil || res[0].Err.Code != task.CodeNotFound {
		t.Fatalf("missing queue: claimed %v, result %+v", ids(claimed), res[0])
	}
	if _, err := e.s.TaskGet(e.ctx, store.TaskRef{InstanceID: inst.ID, ID: tk.ID}); !task.IsCode(err, task.CodeNotFound) {
		t.Fatalf("a task of a missing queue was stored: %v", err)
	}
}

// testAddClaimTakenID: a batch with a taken id is added as TaskAdd adds it
// (that task TASK_EXISTS, the others stored) and nothing is claimed with
// it; the holder of the id is left as it was.
func testAddClaimTakenID(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	q := e.queue(inst, "work", task.ModePush)
	held := e.add(e.newTask(q, T0))[0]
	a, dup := e.newTask(q, T0+1), e.newTask(q, T0+1)
	dup.ID = held.ID
	res, claimed := e.addClaim(q, T0+1, 10, nil, a, dup)
	if len(claimed) != 0 || res[0].Err != nil || res[1].Err == nil || res[1].Err.Code != task.CodeTaskExists {
		t.Fatalf("taken id: claimed %v, results %+v", ids(claimed), res)
	}
	if got := e.get(inst.ID, a.ID); got.State != task.Pending {
		t.Fatalf("the other task is %s", got.State)
	}
	if got := e.get(inst.ID, held.ID); got.State != task.Pending || got.Attempt != 0 {
		t.Fatalf("the holder is %s, attempt %d", got.State, got.Attempt)
	}
}

// testAddClaimNotClaimable: a named task is added as TaskAdd adds it, and
// nothing is claimed with it.
func testAddClaimNotClaimable(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	q := e.queue(inst, "work", task.ModePush)
	named := e.newTask(q, T0, func(in *task.AddInput) { in.Name = "once" })
	res, claimed := e.addClaim(q, T0, 10, nil, named)
	if len(claimed) != 0 || res[0].Err != nil || res[0].Task == nil {
		t.Fatalf("named: claimed %v, result %+v", ids(claimed), res[0])
	}
	if got := e.get(inst.ID, named.ID); got.State != task.Pending || got.Name != "once" {
		t.Fatalf("the named task is %s, name %q", got.State, got.Name)
	}
}

// testAddClaimKeepsTheQueueCapAndRate: the queue's cap on RUNNING tasks
// counts the tasks running before the add, and the rate bucket pays a
// token for each task claimed, an earlier one or one added, so that the
// next claim finds it spent.
func testAddClaimKeepsTheQueueCapAndRate(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	q := e.queue(inst, "work", task.ModePush)
	e.add(e.newTask(q, T0))
	e.claim(q, T0, 1, 60_000)
	capped := func(p *store.ClaimParams) { p.MaxRunning = 3 }
	a, b, c := e.newTask(q, T0+1), e.newTask(q, T0+1), e.newTask(q, T0+1)
	res, claimed := e.addClaim(q, T0+1, 10, capped, a, b, c)
	if len(claimed) != 2 || claimed[0].ID != a.ID || claimed[1].ID != b.ID || res[2].Task.State != task.Pending {
		t.Fatalf("under a cap of 3 with 1 running: claimed %v, the third %s", ids(claimed), res[2].Task.State)
	}

	r := e.queue(inst, "rated", task.ModePush)
	older := e.add(e.newTask(r, T0))[0]
	rated := func(p *store.ClaimParams) { p.Rate, p.Burst = 1, 2 }
	d, f := e.newTask(r, T0+1), e.newTask(r, T0+1)
	if _, claimed = e.addClaim(r, T0+1, 10, rated, d, f); len(claimed) != 2 || claimed[0].ID != older.ID || claimed[1].ID != d.ID {
		t.Fatalf("a burst of 2: claimed %v; want %s, %s", ids(claimed), older.ID, d.ID)
	}
	if got := e.claimWith(r, T0+2, 10, rated); len(got) != 0 {
		t.Fatalf("the bucket the add spent gave %d more", len(got))
	}
	if got := e.get(inst.ID, f.ID); got.State != task.Pending {
		t.Fatalf("the task past the bucket is %s", got.State)
	}
}

// testAddClaimFullBatch: a batch of the most tasks an add takes is claimed
// with, up to the limit, in the order of the batch (the ids of one add
// ascend), and every task is stored.
func testAddClaimFullBatch(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	q := e.queue(inst, "work", task.ModePush)
	batch := make([]*task.Task, task.MaxAddBatch)
	for i := range batch {
		batch[i] = e.newTask(q, T0)
	}
	res, claimed := e.addClaim(q, T0, 60, nil, batch...)
	if len(claimed) != 60 {
		t.Fatalf("claimed %d of %d; want 60", len(claimed), len(batch))
	}
	want := slices.Clone(batch)
	slices.SortFunc(want, func(a, b *task.Task) int { return strings.Compare(a.ID, b.ID) })
	for i, c := range claimed {
		if c.ID != want[i].ID || c.State != task.Running {
			t.Fatalf("claimed[%d] = %s %s; want %s RUNNING", i, c.ID, c.State, want[i].ID)
		}
	}
	running := 0
	for i, r := range res {
		if r.Err != nil {
			t.Fatalf("result %d: %v", i, r.Err)
		}
		got := e.get(inst.ID, r.Task.ID)
		if got.State != r.Task.State {
			t.Fatalf("result %d says %s, stored %s", i, r.Task.State, got.State)
		}
		if got.State == task.Running {
			running++
		}
	}
	if running != 60 {
		t.Fatalf("%d stored RUNNING; want 60", running)
	}
}

// testAddClaimFunctionSlots: under ClaimParams.Functions the add claims a
// function's tasks only into its free slots, and a task of a function with
// none stays due.
func testAddClaimFunctionSlots(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	q := e.queue(inst, "work", task.ModePush, func(q *task.Queue) { q.Target = &task.Target{Function: "app/send"} })
	a, b, c := e.newTask(q, T0), e.newTask(q, T0), e.newTask(q, T0)
	slots := func(p *store.ClaimParams) { p.Functions = map[string]int{"app/send": 2} }
	res, claimed := e.addClaim(q, T0, 10, slots, a, b, c)
	if len(claimed) != 2 {
		t.Fatalf("two slots: claimed %v", ids(claimed))
	}
	pending := 0
	for _, r := range res {
		if r.Task.State == task.Pending {
			pending++
		}
	}
	if pending != 1 {
		t.Fatalf("%d left pending; want 1", pending)
	}
	none := func(p *store.ClaimParams) { p.Functions = map[string]int{} }
	if _, claimed = e.addClaim(q, T0, 10, none, e.newTask(q, T0)); len(claimed) != 0 {
		t.Fatalf("no slot: claimed %v", ids(claimed))
	}
}

// testAddClaimConcurrentAddsKeepTheCap: adds claiming at once, each in its
// own transaction, never take the queue past its cap on RUNNING tasks
// together: the room each reads is read under the claim's serialization.
func testAddClaimConcurrentAddsKeepTheCap(t *testing.T, e *env) {
	ac, ok := e.s.(store.AddClaimer)
	if !ok {
		t.Skip("the store does not claim in an add's transaction")
	}
	inst := e.instance("acme", "jobs")
	q := e.queue(inst, "work", task.ModePush)
	const adders, each, capRunning = 8, 3, 5
	batches := make([][]*task.Task, adders)
	for i := range batches {
		for range each {
			batches[i] = append(batches[i], e.newTask(q, T0))
		}
	}
	var wg sync.WaitGroup
	claimed := make([]int, adders)
	errs := make([]error, adders)
	for i, b := range batches {
		wg.Go(func() {
			p := &store.ClaimParams{Queue: q, Now: T0, Limit: 100, LeaseMs: 60_000, NewLeaseID: e.leases(), MaxRunning: capRunning}
			_, c, err := ac.TaskAddClaim(e.ctx, b, p)
			claimed[i], errs[i] = len(c), err
		})
	}
	wg.Wait()
	total := 0
	for i := range adders {
		if errs[i] != nil {
			t.Fatalf("add %d: %v", i, errs[i])
		}
		total += claimed[i]
	}
	counts, err := e.s.QueueCounts(e.ctx, store.QueueRef{InstanceID: inst.ID, Name: "work"}, 100)
	if err != nil {
		t.Fatal(err)
	}
	if total != capRunning || counts[task.Running] != capRunning || counts[task.Pending] != adders*each-capRunning {
		t.Fatalf("claimed %d in all, stored %d RUNNING and %d PENDING; want %d RUNNING, the cap, and the rest PENDING",
			total, counts[task.Running], counts[task.Pending], capRunning)
	}
}
