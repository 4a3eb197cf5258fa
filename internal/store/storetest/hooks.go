package storetest

import (
	"testing"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// testTriggerHookAdd: a hook call's task is added and counted on its rule
// in one transaction; a retry under the same name adds and counts nothing
// and answers the first task; a queue that is gone is recorded on the rule.
func testTriggerHookAdd(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	q := e.queue(inst, "out", task.ModePull)
	tr := e.rule(inst, task.TriggerHook, "out")
	ref := store.TriggerRef{InstanceID: inst.ID, ID: tr.ID}
	add := func(name string) *store.TriggerFireResult {
		t.Helper()
		tk := e.newTask(q, T0, func(in *task.AddInput) { in.Name = name; in.Source = task.SourceHook })
		res, err := e.s.TriggerHookAdd(e.ctx, &store.TriggerHookAddParams{Ref: ref, Task: tk, Now: T0})
		if err != nil {
			t.Fatalf("TriggerHookAdd: %v", err)
		}
		if !res.Applied || !res.Added || res.Err != "" {
			t.Fatalf("hook add: %+v", res)
		}
		if name == "" && res.TaskID != tk.ID {
			t.Fatalf("hook add answered %s, want %s", res.TaskID, tk.ID)
		}
		return res
	}
	add("")
	first := add("delivery-1").TaskID
	if again := add("delivery-1"); again.TaskID != first {
		t.Fatalf("a retry answered %s, want the first task %s", again.TaskID, first)
	}
	got, _ := e.s.TriggerGet(e.ctx, ref)
	if got.Fired != 2 || got.ErrorCount != 0 {
		t.Fatalf("rule after 3 calls, one a retry: fired %d, errors %d", got.Fired, got.ErrorCount)
	}
	page, _ := e.s.TaskList(e.ctx, &store.ListParams{InstanceID: inst.ID, Queue: "out", Limit: 10})
	if len(page.Tasks) != 2 {
		t.Fatalf("tasks: %s", show(page.Tasks))
	}

	tk := e.newTask(q, T0)
	tk.Queue = "gone"
	res, err := e.s.TriggerHookAdd(e.ctx, &store.TriggerHookAddParams{Ref: ref, Task: tk, Now: T0 + 5})
	if err != nil || res.Added || res.Err == "" {
		t.Fatalf("hook add into a missing queue: %+v %v", res, err)
	}
	got, _ = e.s.TriggerGet(e.ctx, ref)
	if got.Fired != 2 || got.ErrorCount != 1 || got.LastErrorAt != T0+5 {
		t.Fatalf("rule after a refused add: %+v", got)
	}
}
