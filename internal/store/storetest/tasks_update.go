package storetest

import (
	"errors"
	"slices"
	"testing"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

var updateCases = []testCase{
	{"GetForeign", testGetForeign},
	{"GetMany", testGetMany},
	{"Cancel", testUpdateCancel},
	{"CancelRunning", testUpdateCancelRunning},
	{"FnErrorWritesNothing", testUpdateFnError},
	{"RetryAndRunNow", testUpdateRetryRunNow},
	{"Extend", testUpdateExtend},
	{"Priority", testUpdatePriority},
}

// testUpdatePriority: a priority a domain method sets is stored (by
// TaskUpdate and by TaskUpdateMany), and the queue's claims follow it: a
// waiting task raised above an earlier one is claimed first; one lowered
// back to 0 waits its turn by runAt again.
func testUpdatePriority(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	q := e.queue(inst, "work", task.ModePull)
	ts := e.addN(q, 3, T0, func(i int, in *task.AddInput) { in.RunAt = ptr(T0 + int64(i)) })
	set := func(p int) func(*task.Task) error {
		return func(t *task.Task) error { return t.Change(task.Change{Priority: &p}, T0) }
	}
	got, err := e.s.TaskUpdate(e.ctx, store.TaskRef{InstanceID: inst.ID, ID: ts[2].ID}, set(7))
	if err != nil || got.Priority != 7 {
		t.Fatalf("TaskUpdate(priority 7) = %+v, %v", got, err)
	}
	if stored := e.get(inst.ID, ts[2].ID); stored.Priority != 7 || stored.State != task.Pending {
		t.Fatalf("stored after the change: priority %d, state %s", stored.Priority, stored.State)
	}
	if errs, err := e.s.TaskUpdateMany(e.ctx, &store.TaskUpdateManyParams{InstanceID: inst.ID, IDs: []string{ts[1].ID, ts[2].ID},
		Fn: func(t *task.Task) error { return t.Change(task.Change{Priority: ptr(9 - t.Priority)}, T0) }}); err != nil || errs[0] != nil || errs[1] != nil {
		t.Fatalf("TaskUpdateMany = %v, %v", errs, err)
	}
	if a, b := e.get(inst.ID, ts[1].ID).Priority, e.get(inst.ID, ts[2].ID).Priority; a != 9 || b != 2 {
		t.Fatalf("priorities after TaskUpdateMany: %d and %d, want 9 and 2", a, b)
	}
	if _, err := e.s.TaskUpdate(e.ctx, store.TaskRef{InstanceID: inst.ID, ID: ts[2].ID}, set(0)); err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, c := range e.claim(q, T0+10, 3, 60_000) {
		order = append(order, c.ID)
	}
	if want := []string{ts[1].ID, ts[0].ID, ts[2].ID}; !slices.Equal(order, want) {
		t.Fatalf("claim order %v, want %v (the raised task, then runAt order)", order, want)
	}
}

func testGetForeign(t *testing.T, e *env) {
	a := e.instance("acme", "jobs")
	b := e.instance("globex", "jobs")
	qa := e.queue(a, "work", task.ModePull)
	tk := e.addN(qa, 1, T0, nil)[0]
	_, err := e.s.TaskGet(e.ctx, store.TaskRef{InstanceID: b.ID, ID: tk.ID})
	wantCode(t, err, task.CodeNotFound, "TaskGet(other instance's id)")
	_, err = e.s.TaskGet(e.ctx, store.TaskRef{InstanceID: a.ID, ID: "no-such-task"})
	wantCode(t, err, task.CodeNotFound, "TaskGet(missing)")
	_, err = e.s.TaskUpdate(e.ctx, store.TaskRef{InstanceID: b.ID, ID: tk.ID}, func(*task.Task) error {
		t.Error("fn called for a foreign task")
		return nil
	})
	wantCode(t, err, task.CodeNotFound, "TaskUpdate(other instance's id)")
	e.get(a.ID, tk.ID)
}

func testUpdateCancel(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	q := e.queue(inst, "work", task.ModePull)
	tk := e.addN(q, 1, T0, func(_ int, in *task.AddInput) { in.Name = "c1" })[0]
	got, err := e.s.TaskUpdate(e.ctx, store.TaskRef{InstanceID: inst.ID, ID: tk.ID}, func(t *task.Task) error { return t.Cancel(T0 + 10) })
	if err != nil {
		t.Fatal(err)
	}
	want := *tk
	want.State, want.FinishedAt = task.Cancelled, T0+10
	sameTask(t, "TaskUpdate result", got, &want)
	sameTask(t, "stored", e.get(inst.ID, tk.ID), &want)
	_, err = e.s.TaskUpdate(e.ctx, store.TaskRef{InstanceID: inst.ID, ID: tk.ID}, func(t *task.Task) error { return t.Cancel(T0 + 11) })
	wantCode(t, err, task.CodeNotCancellable, "second Cancel")
	if got := e.get(inst.ID, tk.ID); got.FinishedAt != T0+10 {
		t.Fatalf("refused cancel wrote FinishedAt %d", got.FinishedAt)
	}
	if n := e.claim(q, T0+20, 10, 1000); len(n) != 0 {
		t.Fatalf("claimed a cancelled task: %v", ids(n))
	}
}

func testUpdateCancelRunning(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	q := e.queue(inst, "work", task.ModePush)
	e.addN(q, 1, T0, nil)
	c := e.claim(q, T0, 1, 60_000)[0]
	before := e.get(inst.ID, c.ID)
	_, err := e.s.TaskUpdate(e.ctx, store.TaskRef{InstanceID: inst.ID, ID: c.ID}, func(t *task.Task) error { return t.Cancel(T0 + 5) })
	wantCode(t, err, task.CodeRunningNotCancellable, "Cancel(RUNNING)")
	after := e.get(inst.ID, c.ID)
	sameTask(t, "after refused cancel", after, before)
	if after.State != task.Running || after.LeaseID != c.LeaseID {
		t.Fatalf("running task changed: %+v", after)
	}
}

func testUpdateFnError(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	q := e.queue(inst, "work", task.ModePull)
	tk := e.addN(q, 1, T0, nil)[0]
	boom := errors.New("boom")
	_, err := e.s.TaskUpdate(e.ctx, store.TaskRef{InstanceID: inst.ID, ID: tk.ID}, func(t *task.Task) error {
		t.RunAt = 999
		t.State = task.Succeeded
		t.LastError = "changed"
		return boom
	})
	if err != boom {
		t.Fatalf("TaskUpdate error = %v, want fn's error unchanged", err)
	}
	sameTask(t, "after fn error", e.get(inst.ID, tk.ID), tk)
	_, err = e.s.TaskUpdate(e.ctx, store.TaskRef{InstanceID: inst.ID, ID: "no-such-task"}, func(*task.Task) error {
		t.Error("fn called for a missing task")
		return nil
	})
	wantCode(t, err, task.CodeNotFound, "TaskUpdate(missing)")
}

func testUpdateRetryRunNow(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	q := e.queue(inst, "work", task.ModePull, func(q *task.Queue) { q.MaxAttempts = 2 })
	tk := e.addN(q, 1, T0, nil)[0]
	c := e.claim(q, T0, 1, 60_000)[0]
	_, waiting := e.finish(q, c, T0+100, fail("first"))
	if waiting.State != task.RetryWait || waiting.RunAt != T0+100+10_000 {
		t.Fatalf("after a failed attempt: %+v", waiting)
	}
	_, err := e.s.TaskUpdate(e.ctx, store.TaskRef{InstanceID: inst.ID, ID: tk.ID}, func(t *task.Task) error { return t.Retry(T0 + 200) })
	wantCode(t, err, task.CodeNotRetryable, "Retry(RETRY_WAIT)")
	got, err := e.s.TaskUpdate(e.ctx, store.TaskRef{InstanceID: inst.ID, ID: tk.ID}, func(t *task.Task) error { return t.RunNow(T0 + 200) })
	if err != nil || got.State != task.Pending || got.RunAt != T0+200 {
		t.Fatalf("RunNow = %+v, %v", got, err)
	}
	c = e.claim(q, T0+200, 1, 60_000)[0]
	if c.Attempt != 2 || len(c.Attempts) != 1 {
		t.Fatalf("second claim = attempt %d, %d attempts", c.Attempt, len(c.Attempts))
	}
	failed, dead := e.finish(q, c, T0+300, fail("second"))
	if !failed || dead.State != task.Failed || len(dead.Attempts) != 2 || dead.LastError != "second" {
		t.Fatalf("after the last attempt: failed=%v %+v", failed, dead)
	}
	got, err = e.s.TaskUpdate(e.ctx, store.TaskRef{InstanceID: inst.ID, ID: tk.ID}, func(t *task.Task) error { return t.Retry(T0 + 400) })
	if err != nil {
		t.Fatal(err)
	}
	stored := e.get(inst.ID, tk.ID)
	sameTask(t, "stored after retry", stored, got)
	if stored.State != task.Pending || stored.Attempt != 0 || stored.RunAt != T0+400 || stored.FinishedAt != 0 || len(stored.Attempts) != 2 {
		t.Fatalf("after Retry: %+v", stored)
	}
	if string(stored.Payload) != `{"n":1}` {
		t.Fatalf("payload lost through updates: %q", stored.Payload)
	}
	_, err = e.s.TaskUpdate(e.ctx, store.TaskRef{InstanceID: inst.ID, ID: tk.ID}, func(t *task.Task) error { return t.Retry(T0 + 500) })
	wantCode(t, err, task.CodeNotRetryable, "Retry(PENDING)")
}

func testUpdateExtend(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	q := e.queue(inst, "work", task.ModePull)
	e.addN(q, 1, T0, nil)
	c := e.claim(q, T0, 1, 30_000)[0]
	got, err := e.s.TaskUpdate(e.ctx, store.TaskRef{InstanceID: inst.ID, ID: c.ID}, func(t *task.Task) error { return t.Extend(c.LeaseID, T0+10_000, 60) })
	if err != nil || got.LeaseExpiresAt != T0+70_000 {
		t.Fatalf("Extend = %+v, %v", got, err)
	}
	if s := e.get(inst.ID, c.ID); s.LeaseExpiresAt != T0+70_000 || s.LeaseID != c.LeaseID || s.State != task.Running {
		t.Fatalf("stored after Extend: %+v", s)
	}
	_, err = e.s.TaskUpdate(e.ctx, store.TaskRef{InstanceID: inst.ID, ID: c.ID}, func(t *task.Task) error { return t.Extend("other", T0+10_000, 60) })
	wantCode(t, err, task.CodeLeaseLost, "Extend(wrong lease)")
}

func testGetMany(t *testing.T, e *env) {
	a := e.instance("acme", "jobs")
	b := e.instance("globex", "jobs")
	qa := e.queue(a, "work", task.ModePull)
	qb := e.queue(b, "work", task.ModePull)
	mine := e.addN(qa, 3, T0, nil)
	foreign := e.addN(qb, 1, T0, nil)[0]
	claimed := e.claim(qa, T0+1, 1, 1000)[0]
	got, err := e.s.TaskGetMany(e.ctx, a.ID, []string{mine[0].ID, mine[1].ID, mine[2].ID, foreign.ID, "no-such-task", mine[1].ID})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("TaskGetMany: got %d tasks, want 3 (the foreign and missing ids absent): %v", len(got), show(got))
	}
	for _, tk := range mine {
		want := e.get(a.ID, tk.ID)
		sameTask(t, "TaskGetMany["+tk.ID+"]", got[tk.ID], want)
	}
	if g := got[claimed.ID]; g.State != task.Running || g.LeaseID != claimed.LeaseID {
		t.Fatalf("TaskGetMany: claimed task read as %s lease %q, want RUNNING %q", g.State, g.LeaseID, claimed.LeaseID)
	}
	none, err := e.s.TaskGetMany(e.ctx, a.ID, nil)
	if err != nil || len(none) != 0 {
		t.Fatalf("TaskGetMany(no ids) = %v, %v; want empty", none, err)
	}
}
