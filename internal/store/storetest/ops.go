package storetest

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

var opsCases = []testCase{
	{"PageOrderAndAfter", testOpsPageOrder},
	{"PageClamps", testOpsPageClamps},
	{"DeleteByIDAndState", testOpsDelete},
	{"UpdateManyPerIDResults", testOpsUpdateMany},
	{"UpdateManyResult", testOpsUpdateManyResult},
	{"SnapshotOneMoment", testOpsSnapshot},
	{"ChainEventsAdded", testTriggerEventAdd},
}

// page reads one page through TaskPage.
func (e *env) page(instanceID string, limit int, after *store.TaskPageKey) []*task.Task {
	e.t.Helper()
	ts, err := e.s.TaskPage(e.ctx, &store.TaskPageParams{InstanceID: instanceID, Limit: limit, After: after})
	if err != nil {
		e.t.Fatalf("TaskPage(limit %d, after %+v): %v", limit, after, err)
	}
	if ts == nil {
		e.t.Fatalf("TaskPage(limit %d, after %+v): nil, want a slice", limit, after)
	}
	return ts
}

// failedTasks stores n tasks of a pull queue of one attempt and fails each
// attempt at T0+1: n FAILED tasks.
func (e *env) failedTasks(q *task.Queue, n int) []*task.Task {
	e.t.Helper()
	e.addN(q, n, T0, nil)
	var out []*task.Task
	for _, c := range e.claim(q, T0, n, 60_000) {
		failed, tk := e.finish(q, c, T0+1, fail("boom"))
		if !failed || tk.State != task.Failed {
			e.t.Fatalf("task %s: %s after its one attempt failed", tk.ID, tk.State)
		}
		out = append(out, tk)
	}
	return out
}

// deadLettersFixture is an instance with FAILED tasks and a PENDING one in
// its queue "work" (one attempt), and another organization's instance with
// one FAILED task.
type deadLettersFixture struct {
	inst, other *task.Instance
	q           *task.Queue
	failed      []*task.Task
	pending     *task.Task
	foreign     *task.Task
}

func (e *env) deadLetters(n int) deadLettersFixture {
	e.t.Helper()
	once := func(q *task.Queue) { q.MaxAttempts = 1 }
	x := deadLettersFixture{inst: e.instance("acme", "jobs"), other: e.instance("globex", "jobs")}
	x.q = e.queue(x.inst, "work", task.ModePull, once)
	x.failed = e.failedTasks(x.q, n)
	x.pending = e.addN(x.q, 1, T0, nil)[0]
	x.foreign = e.failedTasks(e.queue(x.other, "work", task.ModePull, once), 1)[0]
	return x
}

// testOpsPageOrder: TaskPage reads every queue of one instance, newest
// CreatedAt first with ties by id descending, after the key After, returns
// at most Limit, without payloads, and never another instance's task.
func testOpsPageOrder(t *testing.T, e *env) {
	inst := e.instance("acme", "_ops")
	other := e.instance("globex", "_ops")
	q1 := e.queue(inst, "dlq.replay", task.ModePull)
	q2 := e.queue(inst, "dlq.purge", task.ModePull)
	e.withID(q1, "a", T0+10, T0)
	e.withID(q2, "b", T0+30, T0)
	e.withID(q1, "c", T0+20, T0)
	e.withID(q1, "d", T0+30, T0)
	e.withID(e.queue(other, "dlq.replay", task.ModePull), "z", T0+40, T0)

	all := e.page(inst.ID, 10, nil)
	sameIDs(t, "page", all, "d", "b", "c", "a")
	for _, tk := range all {
		if tk.Payload != nil {
			t.Fatalf("task %s carries its payload %s", tk.ID, tk.Payload)
		}
		if tk.InstanceID != inst.ID {
			t.Fatalf("task %s of instance %s", tk.ID, tk.InstanceID)
		}
	}
	if all[1].Queue != "dlq.purge" || all[0].Queue != "dlq.replay" {
		t.Fatalf("queues %s, %s", all[0].Queue, all[1].Queue)
	}
	sameIDs(t, "limit 2 after d", e.page(inst.ID, 2, store.PageAfter(all[0])), "b", "c")
	sameIDs(t, "after the last", e.page(inst.ID, 10, store.PageAfter(all[3])))
	// A key is a place in the order, whether a task holds it or not: a
	// task removed since its page was read moves no other task.
	sameIDs(t, "after a removed c", e.page(inst.ID, 10, &store.TaskPageKey{CreatedAt: T0 + 30, ID: "c"}), "b", "c", "a")
	sameIDs(t, "after the start of time", e.page(inst.ID, 10, &store.TaskPageKey{CreatedAt: 0}))
	sameIDs(t, "an empty instance", e.page(e.instance("acme", "empty").ID, 10, nil))
	sameIDs(t, "another instance", e.page(other.ID, 10, nil), "z")
}

// testOpsPageClamps: a Limit below 1 reads one task, above 200 reads 200,
// and the page after the 200th holds the rest.
func testOpsPageClamps(t *testing.T, e *env) {
	inst := e.instance("acme", "_ops")
	e.addN(e.queue(inst, "dlq.replay", task.ModePull), 205, T0, nil)
	if n := len(e.page(inst.ID, 0, nil)); n != 1 {
		t.Fatalf("limit 0 read %d tasks, want 1", n)
	}
	first := e.page(inst.ID, 1000, nil)
	if n := len(first); n != 200 {
		t.Fatalf("limit 1000 read %d tasks, want 200", n)
	}
	second := e.page(inst.ID, 200, store.PageAfter(first[199]))
	if n := len(second); n != 5 {
		t.Fatalf("the second page holds %d tasks, want 5", n)
	}
	seen := map[string]bool{}
	for _, tk := range append(first, second...) {
		if seen[tk.ID] {
			t.Fatalf("task %s on both pages", tk.ID)
		}
		seen[tk.ID] = true
	}
}

// testOpsDelete: TaskDelete removes only the listed ids of the instance
// that are in a listed state, in one call, and counts them; a missing id,
// another instance's id and a task in another state are left alone.
func testOpsDelete(t *testing.T, e *env) {
	x := e.deadLetters(3)
	inst, other, f, pending, foreign := x.inst, x.other, x.failed, x.pending, x.foreign

	del := func(ids []string, states ...task.State) int {
		t.Helper()
		n, err := e.s.TaskDelete(e.ctx, &store.TaskDeleteParams{InstanceID: inst.ID, IDs: ids, States: states})
		if err != nil {
			t.Fatalf("TaskDelete(%v, %v): %v", ids, states, err)
		}
		return n
	}
	if n := del([]string{f[0].ID, f[1].ID, pending.ID, "no-such-task", foreign.ID}, task.Failed); n != 2 {
		t.Fatalf("deleted %d, want 2", n)
	}
	for _, id := range []string{f[0].ID, f[1].ID} {
		_, err := e.s.TaskGet(e.ctx, store.TaskRef{InstanceID: inst.ID, ID: id})
		wantCode(t, err, task.CodeNotFound, "TaskGet(deleted)")
	}
	e.get(inst.ID, f[2].ID)
	if got := e.get(inst.ID, pending.ID); got.State != task.Pending {
		t.Fatalf("pending task: %s", got.State)
	}
	e.get(other.ID, foreign.ID)
	if n := del([]string{f[2].ID, pending.ID}); n != 0 {
		t.Fatalf("no states deleted %d", n)
	}
	if n := del(nil, task.Failed); n != 0 {
		t.Fatalf("no ids deleted %d", n)
	}
	if n := del([]string{f[2].ID, pending.ID, f[0].ID}, task.Pending, task.Failed); n != 2 {
		t.Fatalf("deleted %d, want 2", n)
	}
	sameIDs(t, "left", e.page(inst.ID, 10, nil))
	sameIDs(t, "other instance", e.page(other.ID, 10, nil), foreign.ID)
}

// testOpsUpdateMany: TaskUpdateMany applies Fn to each listed task of the
// instance and answers one error per id, in order: nil for a written row,
// NOT_FOUND for a missing or foreign id, Fn's own error for a row it
// refused, which is not written even when Fn changed it first.
func testOpsUpdateMany(t *testing.T, e *env) {
	x := e.deadLetters(2)
	inst, other, q, f, pending, foreign := x.inst, x.other, x.q, x.failed, x.pending, x.foreign
	before := e.get(inst.ID, pending.ID)
	foreignBefore := e.get(other.ID, foreign.ID)

	list := []string{f[0].ID, foreign.ID, pending.ID, "no-such-task", f[1].ID}
	errs, err := e.s.TaskUpdateMany(e.ctx, &store.TaskUpdateManyParams{InstanceID: inst.ID, IDs: list,
		Fn: func(tk *task.Task) error { return tk.Retry(T0 + 100) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(errs) != len(list) {
		t.Fatalf("%d results for %d ids", len(errs), len(list))
	}
	if errs[0] != nil || errs[4] != nil {
		t.Fatalf("results %v: the failed tasks were refused", errs)
	}
	wantCode(t, errs[1], task.CodeNotFound, "another instance's id")
	wantCode(t, errs[2], task.CodeNotRetryable, "a pending task")
	wantCode(t, errs[3], task.CodeNotFound, "a missing id")
	for _, old := range f {
		want := *e.get(inst.ID, old.ID)
		got := e.get(inst.ID, old.ID)
		if got.State != task.Pending || got.Attempt != 0 || got.RunAt != T0+100 || got.FinishedAt != 0 || len(got.Attempts) != 1 {
			t.Fatalf("retried task %+v", got)
		}
		sameTask(t, "read twice", got, &want)
	}
	sameTask(t, "refused row", e.get(inst.ID, pending.ID), before)
	sameTask(t, "foreign row", e.get(other.ID, foreign.ID), foreignBefore)
	if n := e.claim(q, T0+100, 10, 1000); len(n) != 3 {
		t.Fatalf("claimed %d after the retry, want 3", len(n))
	}

	// Fn changes the row, then refuses: the change is not written.
	boom := errors.New("boom")
	ref := e.get(inst.ID, f[0].ID)
	errs, err = e.s.TaskUpdateMany(e.ctx, &store.TaskUpdateManyParams{InstanceID: inst.ID, IDs: []string{f[0].ID},
		Fn: func(tk *task.Task) error { tk.LastError = "changed"; tk.State = task.Cancelled; return boom }})
	if err != nil || len(errs) != 1 || !errors.Is(errs[0], boom) {
		t.Fatalf("Fn's error: %v, %v", errs, err)
	}
	sameTask(t, "after Fn refused", e.get(inst.ID, f[0].ID), ref)

	errs, err = e.s.TaskUpdateMany(e.ctx, &store.TaskUpdateManyParams{InstanceID: inst.ID,
		Fn: func(*task.Task) error { t.Error("Fn called without ids"); return nil }})
	if err != nil || len(errs) != 0 {
		t.Fatalf("no ids: %v, %v", errs, err)
	}
}

// testOpsUpdateManyResult: a result Fn sets is stored byte for byte, and a
// row whose result Fn leaves alone keeps it.
func testOpsUpdateManyResult(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	q := e.queue(inst, "work", task.ModePull)
	e.addN(q, 2, T0, nil)
	c := e.claim(q, T0, 2, 60_000)
	_, done := e.finish(q, c[0], T0+1, succeed(`{"kept": [1, 2]}`))
	running := c[1]
	checkpoint := json.RawMessage(`{"progress": {"done": 200, "total": 1000},  "cursor":"ü"}`)
	errs, err := e.s.TaskUpdateMany(e.ctx, &store.TaskUpdateManyParams{InstanceID: inst.ID, IDs: []string{running.ID, done.ID},
		Fn: func(tk *task.Task) error {
			if tk.ID == running.ID {
				return tk.Checkpoint(running.LeaseID, T0+2, checkpoint)
			}
			tk.LastError = "noted"
			return nil
		}})
	if err != nil || errs[0] != nil || errs[1] != nil {
		t.Fatalf("TaskUpdateMany: %v, %v", errs, err)
	}
	if got := e.get(inst.ID, running.ID); string(got.Result) != string(checkpoint) || got.State != task.Running || got.LeaseID != running.LeaseID {
		t.Fatalf("checkpointed task: result %s, %s, lease %s", got.Result, got.State, got.LeaseID)
	}
	got := e.get(inst.ID, done.ID)
	if string(got.Result) != `{"kept": [1, 2]}` || got.LastError != "noted" || len(got.Attempts) != 1 {
		t.Fatalf("finished task: result %s, last error %q, %d attempts", got.Result, got.LastError, len(got.Attempts))
	}
}
