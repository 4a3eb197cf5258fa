package storetest

import (
	"math"
	"testing"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// testClaimRouted: under ClaimParams.Functions a function's tasks are
// claimed only up to its free slots, a function with none (or unlisted)
// is left waiting with no attempt used, tasks of other targets are claimed
// as usual, and a task past maxAgeSeconds is claimed whatever its function.
func testClaimRouted(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	fnA := &task.Target{Function: "app/a"}
	q := e.queue(inst, "fn", task.ModePush, func(q *task.Queue) { q.Target = fnA; q.MaxAgeSeconds = 3600 })
	// 3 tasks of the queue's function, 2 of app/b by their own target, 1
	// webhook of its own.
	ownA := e.addN(q, 3, T0, nil)
	ownB := e.addN(q, 2, T0+1, func(_ int, in *task.AddInput) { in.Target = &task.Target{Function: "app/b"} })
	hooked := e.addN(q, 1, T0+2, func(_ int, in *task.AddInput) { in.Target = hook })
	route := func(fns map[string]int) func(*store.ClaimParams) {
		return func(p *store.ClaimParams) { p.Functions = fns }
	}

	// No worker anywhere: only the webhook task goes.
	got := e.claimWith(q, T0+10, 100, route(map[string]int{}))
	sameIDs(t, "claim with no function served", got, hooked[0].ID)
	for _, tk := range append(ownA, ownB...) {
		if g := e.get(inst.ID, tk.ID); g.State != task.Pending || g.Attempt != 0 {
			t.Fatalf("unserved task %s: state %s attempt %d; want PENDING, 0", tk.ID, g.State, g.Attempt)
		}
	}
	// Two slots for app/a, none for app/b: the first two of app/a.
	got = e.claimWith(q, T0+10, 100, route(map[string]int{"app/a": 2, "app/b": 0}))
	sameIDs(t, "claim with 2 slots of app/a", got, ownA[0].ID, ownA[1].ID)
	// One slot of app/b.
	got = e.claimWith(q, T0+10, 100, route(map[string]int{"app/b": 1}))
	sameIDs(t, "claim with 1 slot of app/b", got, ownB[0].ID)
	// Past maxAgeSeconds every task goes, to be ended by its attempt.
	late := T0 + 3600*1000 + 10
	got = e.claimWith(q, late, 100, route(map[string]int{}))
	sameIDs(t, "claim past maxAgeSeconds", got, ownA[2].ID, ownB[1].ID)
}

// testClaimRoutedQueueTarget: a queue whose target is a webhook is not
// narrowed by the route, and a nil Functions claims everything.
func testClaimRoutedQueueTarget(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	q := e.queue(inst, "hooks", task.ModePush)
	e.addN(q, 2, T0, nil)
	fq := e.queue(inst, "fn", task.ModePush, func(q *task.Queue) { q.Target = &task.Target{Function: "app/a"} })
	e.addN(fq, 2, T0, nil)
	if got := e.claimWith(q, T0, 10, func(p *store.ClaimParams) { p.Functions = map[string]int{} }); len(got) != 2 {
		t.Fatalf("a webhook queue under a route claimed %d of 2", len(got))
	}
	if got := e.claimWith(fq, T0, 10, func(p *store.ClaimParams) {}); len(got) != 2 {
		t.Fatalf("a function queue without a route claimed %d of 2", len(got))
	}
}

// testNextDueAfter: the earliest waiting push task strictly after a time,
// across queues, leaving out pull and paused queues.
func testNextDueAfter(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	a := e.queue(inst, "a", task.ModePush)
	b := e.queue(inst, "b", task.ModePush)
	p := e.queue(inst, "p", task.ModePull)
	paused := e.queue(inst, "paused", task.ModePush, func(q *task.Queue) { q.Paused = true })
	at := func(ms int64) func(int, *task.AddInput) {
		return func(_ int, in *task.AddInput) { in.RunAt = ptr(T0 + ms) }
	}
	e.addN(a, 1, T0, at(0))
	e.addN(a, 1, T0, at(500))
	e.addN(b, 1, T0, at(300))
	e.addN(p, 1, T0, at(100))
	e.addN(paused, 1, T0, at(50))
	// math.MinInt64: the earliest of all (the dispatcher's next wake-up).
	for _, c := range []struct{ after, want int64 }{{math.MinInt64, T0}, {T0 - 1, T0}, {T0, T0 + 300}, {T0 + 300, T0 + 500}, {T0 + 500, 0}} {
		got, err := e.s.TaskNextDueAfter(e.ctx, c.after)
		if err != nil || got != c.want {
			t.Fatalf("TaskNextDueAfter(T0%+d) = %d, %v; want %d", c.after-T0, got-T0, err, c.want-T0)
		}
	}
}

// testQueueNextRunAt: the earliest runAt after a time of one queue's
// waiting tasks, pull queues included; not a running or finished task's,
// nor another queue's, nor one at or before the time; 0 for none.
func testQueueNextRunAt(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	p := e.queue(inst, "p", task.ModePull)
	other := e.queue(inst, "other", task.ModePull)
	at := func(ms int64) func(int, *task.AddInput) {
		return func(_ int, in *task.AddInput) { in.RunAt = ptr(T0 + ms) }
	}
	next := func(after, want int64) {
		t.Helper()
		if got, err := e.s.TaskQueueNextRunAt(e.ctx, store.QueueRef{InstanceID: inst.ID, Name: p.Name}, after); err != nil || got != want {
			t.Fatalf("TaskQueueNextRunAt(after %d) = %d, %v; want %d", after, got, err, want)
		}
	}
	next(0, 0)
	e.addN(other, 1, T0, at(10))
	e.addN(p, 1, T0, at(500))
	e.addN(p, 1, T0, at(300))
	next(0, T0+300)
	next(T0+299, T0+300)
	next(T0+300, T0+500) // after, not at
	next(T0+500, 0)
	if got := e.claimWith(p, T0+400, 10, func(*store.ClaimParams) {}); len(got) != 1 {
		t.Fatalf("claimed %d, want the one due", len(got))
	}
	next(0, T0+500) // the running one is not waiting
}

// testWorkers: WorkersPut replaces a node's rows; WorkersServed sums the
// live nodes' slots for an instance and the in-process '*' rows, leaving
// out quiet nodes and other instances; Forget removes dead nodes.
func testWorkers(t *testing.T, e *env) {
	a := e.instance("acme", "jobs")
	b := e.instance("acme", "other")
	put := func(node string, now int64, served map[string]map[string]int) {
		t.Helper()
		if err := e.s.WorkersPut(e.ctx, &store.WorkersPutParams{Node: node, Served: served, Now: now, Forget: now - 3_600_000}); err != nil {
			t.Fatalf("WorkersPut(%s): %v", node, err)
		}
	}
	served := func(inst string, after int64) string {
		t.Helper()
		m, err := e.s.WorkersServed(e.ctx, &store.WorkersServedParams{InstanceID: inst, SeenAfter: after})
		if err != nil {
			t.Fatal(err)
		}
		return show(m)
	}
	put("n1", T0, map[string]map[string]int{a.ID: {"app/x": 4, "app/y": 1}, b.ID: {"app/z": 2}})
	put("n2", T0, map[string]map[string]int{a.ID: {"app/x": 3}})
	put("emb", T0, map[string]map[string]int{store.AllInstances: {"lib/f": 1 << 20}})
	if got, want := served(a.ID, T0-1), show(map[string]int{"app/x": 7, "app/y": 1, "lib/f": 1 << 20}); got != want {
		t.Fatalf("served %s; want %s", got, want)
	}
	put("n1", T0+10, map[string]map[string]int{a.ID: {"app/y": 2}}) // n1 now serves only app/y
	if got, want := served(a.ID, T0), show(map[string]int{"app/y": 2}); got != want {
		t.Fatalf("served after n1 changed, n2 and emb quiet: %s; want %s", got, want)
	}
	put("n1", T0+3_600_000+100, nil) // n1 leaves; n2 and emb are forgotten
	if got := served(a.ID, 0); got != show(map[string]int{}) {
		t.Fatalf("served after every node left or was forgotten: %s", got)
	}
}
