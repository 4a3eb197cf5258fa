package engine_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/task"
)

// TestTaskDelete: a scheduled or finished task's record is removed and its
// name freed, answered as it was; a leased one is refused
// RUNNING_NOT_CANCELLABLE and left leased; a task that is not there is
// NOT_FOUND; a wait on a task that is deleted ends NOT_FOUND at once.
func TestTaskDelete(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.queue("work", &task.QueuePatch{Mode: ptr(task.ModePull)})
	ref := func(id string) engine.TaskRef { return engine.TaskRef{Org: "dev", Instance: "jobs", ID: id} }

	// Scheduled, named: removed, and the name is free again.
	id := b.add("work", task.AddInput{Name: "report-1"})
	got, err := b.eng.TaskDelete(b.ctx, ref(id))
	if err != nil || got.ID != id || got.State != task.Pending || got.Name != "report-1" {
		t.Fatalf("delete: %+v %v", got, err)
	}
	if _, err := b.eng.TaskGet(b.ctx, ref(id)); !task.IsCode(err, task.CodeNotFound) {
		t.Fatalf("a deleted task: %v", err)
	}
	if _, err := b.eng.TaskDelete(b.ctx, ref(id)); !task.IsCode(err, task.CodeNotFound) {
		t.Fatalf("deleted twice: %v", err)
	}
	again := b.add("work", task.AddInput{Name: "report-1"})
	if again == id {
		t.Fatal("the name's new task has the deleted one's id")
	}

	// Leased: refused, left as it is. Then acked (finished): removed.
	ts, err := b.eng.Lease(b.ctx, engine.QueueRef{Org: "dev", Instance: "jobs", Queue: "work"}, engine.LeaseParams{Count: 1, LeaseSeconds: 30})
	if err != nil || len(ts) != 1 || ts[0].ID != again {
		t.Fatalf("lease: %v %v", ts, err)
	}
	if _, err := b.eng.TaskDelete(b.ctx, ref(again)); !task.IsCode(err, task.CodeRunningNotCancellable) {
		t.Fatalf("delete of a leased task: %v", err)
	}
	if tk, err := b.eng.TaskGet(b.ctx, ref(again)); err != nil || tk.State != task.Running || tk.LeaseID != ts[0].LeaseID {
		t.Fatalf("the leased task after the refusal: %+v %v", tk, err)
	}
	if _, err := b.eng.Ack(b.ctx, ref(again), engine.AckParams{LeaseID: ts[0].LeaseID, Result: json.RawMessage(`1`)}); err != nil {
		t.Fatal(err)
	}
	if got, err := b.eng.TaskDelete(b.ctx, ref(again)); err != nil || got.State != task.Succeeded || string(got.Result) != `1` {
		t.Fatalf("delete of a finished task: %+v %v", got, err)
	}

	// A wait on a task that is deleted ends at once (the clock never
	// moves), NOT_FOUND.
	id = b.add("work", task.AddInput{})
	waiting := b.waitFor(id, 30)
	if _, err := b.eng.TaskDelete(b.ctx, ref(id)); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-waiting:
		if !task.IsCode(r.err, task.CodeNotFound) {
			t.Fatalf("the wait on a deleted task: %+v %v", r.t, r.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the wait on a deleted task did not end")
	}
}
