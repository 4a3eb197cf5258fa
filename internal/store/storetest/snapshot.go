package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// testOpsSnapshot: InstanceSnapshot hands over the instance, its queues,
// its rules and every task (payload, result and attempts) in id order, as
// of one moment: a queue, a rule and a task added, a task removed and a
// task finished while it reads — before its first page and between pages —
// are not seen. Another instance's tasks never are.
func testOpsSnapshot(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	q := e.queue(inst, "work", task.ModePull)
	n := store.SnapshotPage + 5
	added := e.addN(q, n, T0, func(i int, in *task.AddInput) {
		in.Payload = json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))
	})
	e.rule(inst, task.TriggerSchedule, "work")
	// A task rule watching work: each finish there leaves a chain event
	// (no chainer runs here to take it).
	chain := e.rule(inst, task.TriggerTask, "work")
	done := e.claim(q, T0, 1, 60_000)[0]
	e.finish(q, done, T0+1, succeed(`{"ok":true}`))
	e.addN(e.queue(e.instance("acme", "other"), "work", task.ModePull), 3, T0, nil)

	running := e.claim(q, T0+2, 1, 60_000)[0]
	last := added[n-1]
	var (
		queues, rules int
		events        []*store.TriggerEvent
		seen          []*task.Task
	)
	err := e.s.InstanceSnapshot(e.ctx, &store.SnapshotParams{
		Ref: store.InstanceRef{Org: "acme", Name: "jobs"},
		Head: func(h *store.SnapshotHead) error {
			if got := h.Instance; got.ID != inst.ID || got.WebhookKey != inst.WebhookKey {
				t.Errorf("head: instance %s (key %q), want %s (%q)", got.ID, got.WebhookKey, inst.ID, inst.WebhookKey)
			}
			queues, rules, events = len(h.Queues), len(h.Rules), h.Events
			// Written after the snapshot began: not in it.
			e.queue(inst, "late", task.ModePull)
			e.rule(inst, task.TriggerHook, "work")
			e.addN(q, 1, T0+3, nil)
			return nil
		},
		Task: func(tk *task.Task) error {
			if len(seen) == 1 {
				// Between the first page and the second: the last task
				// removed, the running one finished.
				if k, err := e.s.TaskDelete(e.ctx, &store.TaskDeleteParams{InstanceID: inst.ID, IDs: []string{last.ID},
					States: []task.State{task.Pending}}); err != nil || k != 1 {
					t.Fatalf("TaskDelete of %s while the snapshot reads: %d, %v", last.ID, k, err)
				}
				e.finish(q, running, T0+4, succeed(`{"late":true}`))
			}
			seen = append(seen, tk)
			return nil
		},
	})
	if err != nil {
		t.Fatalf("InstanceSnapshot: %v", err)
	}
	if queues != 2 || rules != 2 {
		t.Errorf("head: %d queues and %d rules, want 2 (default, work) and 2, as they were when it began", queues, rules)
	}
	// The chain event of the finish before the snapshot, not the one the
	// finish during it left.
	if len(events) != 1 || events[0].TaskID != done.ID || events[0].RuleID != chain.ID || events[0].State != task.Succeeded {
		t.Errorf("head: events %+v, want the one of %s's finish", events, done.ID)
	}
	if all, err := e.s.TriggerEventList(e.ctx, &store.TriggerEventListParams{Limit: 10}); err != nil || len(all) != 2 {
		t.Fatalf("after the snapshot: %d events (%v), want 2", len(all), err)
	}
	if len(seen) != n {
		t.Fatalf("%d tasks, want the %d there were when it began", len(seen), n)
	}
	if !slices.IsSortedFunc(seen, func(a, b *task.Task) int { return strings.Compare(a.ID, b.ID) }) {
		t.Error("tasks not in id order")
	}
	byID := store.ByID(seen)
	for _, a := range added {
		got := byID[a.ID]
		if got == nil {
			t.Fatalf("task %s missing", a.ID)
		}
		if string(got.Payload) != string(a.Payload) {
			t.Errorf("task %s: payload %s, want %s", a.ID, got.Payload, a.Payload)
		}
	}
	if got := byID[done.ID]; got.State != task.Succeeded || string(got.Result) != `{"ok":true}` || len(got.Attempts) != 1 {
		t.Errorf("finished task: %s, result %s, %d attempts; want SUCCEEDED, its result and one attempt", got.State, got.Result, len(got.Attempts))
	}
	if got := byID[running.ID]; got.State != task.Running || got.Result != nil {
		t.Errorf("task finished while the snapshot read: %s, result %s; want RUNNING as it was", got.State, got.Result)
	}

	boom := errors.New("boom")
	calls := 0
	err = e.s.InstanceSnapshot(e.ctx, &store.SnapshotParams{Ref: store.InstanceRef{Org: "acme", Name: "jobs"},
		Head: func(*store.SnapshotHead) error { return nil },
		Task: func(*task.Task) error { calls++; return boom }})
	if !errors.Is(err, boom) || calls != 1 {
		t.Errorf("a refusing Task: %v after %d calls, want its error after one", err, calls)
	}
	err = e.s.InstanceSnapshot(e.ctx, &store.SnapshotParams{Ref: store.InstanceRef{Org: "acme", Name: "jobs"},
		Head: func(*store.SnapshotHead) error { return boom },
		Task: func(*task.Task) error { t.Error("Task called after Head refused"); return nil }})
	if !errors.Is(err, boom) {
		t.Errorf("a refusing Head: %v, want its error", err)
	}
	err = e.s.InstanceSnapshot(e.ctx, &store.SnapshotParams{Ref: store.InstanceRef{Org: "acme", Name: "nosuch"},
		Head: func(*store.SnapshotHead) error { t.Error("Head called"); return nil },
		Task: func(*task.Task) error { return nil }})
	if !errors.Is(err, task.ErrNotFound) {
		t.Errorf("a missing instance: %v, want NOT_FOUND", err)
	}
}

// testTriggerEventAdd: TriggerEventAdd stores an instance's chain events
// (a restored archive's) so the chainer lists them; the same event again
// is stored once.
func testTriggerEventAdd(t *testing.T, e *env) {
	inst := e.instance("acme", "copy")
	e.queue(inst, "work", task.ModePull)
	rule := e.rule(inst, task.TriggerTask, "work")
	evs := []*store.TriggerEvent{
		{RuleID: rule.ID, TaskID: "task-a", State: task.Succeeded, FinishedAt: T0},
		{RuleID: rule.ID, TaskID: "task-b", State: task.Failed, FinishedAt: T0 + 1},
	}
	for range 2 {
		if err := e.s.TriggerEventAdd(e.ctx, &store.TriggerEventAddParams{InstanceID: inst.ID, Events: evs}); err != nil {
			t.Fatalf("TriggerEventAdd: %v", err)
		}
	}
	got, err := e.s.TriggerEventList(e.ctx, &store.TriggerEventListParams{Limit: 10})
	if err != nil || len(got) != 2 {
		t.Fatalf("%d events (%v), want the 2 added once", len(got), err)
	}
	for i, ev := range got {
		if ev.InstanceID != inst.ID || ev.RuleID != rule.ID || ev.TaskID != evs[i].TaskID || ev.State != evs[i].State || ev.FinishedAt != evs[i].FinishedAt {
			t.Errorf("event %d: %+v, want %+v", i, ev, evs[i])
		}
	}
}
