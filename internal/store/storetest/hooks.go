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
		rs, err := e.s.TriggerHookAdd(e.ctx, []*store.TriggerHookAddParams{{Ref: ref, Task: tk, Now: T0}})
		if err != nil || len(rs) != 1 {
			t.Fatalf("TriggerHookAdd: %v %+v", err, rs)
		}
		res := &rs[0]
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
	rs, err := e.s.TriggerHookAdd(e.ctx, []*store.TriggerHookAddParams{{Ref: ref, Task: tk, Now: T0 + 5}})
	if err != nil || len(rs) != 1 || rs[0].Added || rs[0].Err == "" {
		t.Fatalf("hook add into a missing queue: %+v %v", rs, err)
	}
	got, _ = e.s.TriggerGet(e.ctx, ref)
	if got.Fired != 2 || got.ErrorCount != 1 || got.LastErrorAt != T0+5 {
		t.Fatalf("rule after a refused add: %+v", got)
	}
}

// testTriggerHookAddMany: the calls of one TriggerHookAdd, of two rules,
// are each answered in order and counted on their own rule; a name taken
// by an earlier call of the same batch answers that call's task and is not
// counted; a call into a queue that is gone is recorded on its rule and
// adds nothing, while the others are added.
func testTriggerHookAddMany(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	q := e.queue(inst, "out", task.ModePull)
	one, two := e.rule(inst, task.TriggerHook, "out"), e.rule(inst, task.TriggerHook, "out")
	refOne, refTwo := store.TriggerRef{InstanceID: inst.ID, ID: one.ID}, store.TriggerRef{InstanceID: inst.ID, ID: two.ID}
	named := func(name string) *task.Task {
		return e.newTask(q, T0, func(in *task.AddInput) { in.Name = name; in.Source = task.SourceHook })
	}
	gone := e.newTask(q, T0)
	gone.Queue = "gone"
	ps := []*store.TriggerHookAddParams{
		{Ref: refOne, Task: named("a"), Now: T0},
		{Ref: refTwo, Task: named(""), Now: T0},
		{Ref: refOne, Task: named("a"), Now: T0}, // the first call's retry, in the same batch
		{Ref: refTwo, Task: gone, Now: T0 + 7},
		{Ref: refOne, Task: named("b"), Now: T0},
	}
	rs, err := e.s.TriggerHookAdd(e.ctx, ps)
	if err != nil || len(rs) != len(ps) {
		t.Fatalf("TriggerHookAdd: %v %+v", err, rs)
	}
	for i, want := range []string{ps[0].Task.ID, ps[1].Task.ID, ps[0].Task.ID, "", ps[4].Task.ID} {
		if rs[i].TaskID != want || rs[i].Added != (want != "") || (rs[i].Err != "") != (want == "") {
			t.Fatalf("call %d answered %+v, want task %q", i, rs[i], want)
		}
	}
	if got, _ := e.s.TriggerGet(e.ctx, refOne); got.Fired != 2 || got.ErrorCount != 0 {
		t.Fatalf("rule one after 3 calls, one a retry: fired %d, errors %d", got.Fired, got.ErrorCount)
	}
	if got, _ := e.s.TriggerGet(e.ctx, refTwo); got.Fired != 1 || got.ErrorCount != 1 || got.LastErrorAt != T0+7 {
		t.Fatalf("rule two after an add and a refused one: %+v", got)
	}
	page, _ := e.s.TaskList(e.ctx, &store.ListParams{InstanceID: inst.ID, Queue: "out", Limit: 10})
	if len(page.Tasks) != 3 {
		t.Fatalf("tasks: %s", show(page.Tasks))
	}
}
