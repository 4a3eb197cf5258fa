package storetest

import (
	"reflect"
	"testing"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// testQueueActivity: a queue's adds (by createdAt), successes and
// failures (by finishedAt) per minute of a window, other queues and
// retried attempts left out, each kind capped at the limit.
func testQueueActivity(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	q := e.queue(inst, "work", task.ModePull, func(q *task.Queue) { q.MaxAttempts = 1 })
	r := e.queue(inst, "retry", task.ModePull)
	other := e.queue(inst, "other", task.ModePull)
	m0 := T0 / 60_000 * 60_000
	m1, m2 := m0+60_000, m0+120_000

	e.addN(q, 3, T0, nil)
	e.addN(q, 2, T0+60_000, nil)
	e.addN(other, 4, T0, nil)
	c := e.claim(q, T0+60_000, 3, 600_000)
	e.finish(q, c[0], T0+60_001, succeed(`1`))
	e.finish(q, c[1], T0+120_000, fail("x")) // maxAttempts 1: FAILED
	e.finish(q, c[2], T0+120_000, succeed(`2`))
	e.addN(r, 1, T0, nil)
	e.finish(r, e.claim(r, T0, 1, 600_000)[0], T0+1, fail("again")) // retried: not a failure

	get := func(queue string, since, until int64, limit int) *store.Activity {
		t.Helper()
		a, err := e.s.QueueActivity(e.ctx, &store.ActivityParams{InstanceID: inst.ID, Queue: queue, Since: since, Until: until, Limit: limit})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	check := func(what string, got, want map[int64]int) {
		t.Helper()
		if len(got) != len(want) || len(want) > 0 && !reflect.DeepEqual(got, want) {
			t.Fatalf("%s = %v, want %v", what, got, want)
		}
	}
	a := get("work", m0, m2+60_000, 100)
	check("added", a.Added, map[int64]int{m0: 3, m1: 2})
	check("succeeded", a.Succeeded, map[int64]int{m1: 1, m2: 1})
	check("failed", a.Failed, map[int64]int{m2: 1})
	if len(a.Capped) != 0 {
		t.Fatalf("capped %v under the limit", a.Capped)
	}

	// The window is half-open: [m1, m2) holds the second minute only.
	a = get("work", m1, m2, 100)
	check("added in [m1, m2)", a.Added, map[int64]int{m1: 2})
	check("succeeded in [m1, m2)", a.Succeeded, map[int64]int{m1: 1})
	check("failed in [m1, m2)", a.Failed, nil)

	// Each kind stops at the limit and says so.
	a = get("work", m0, m2+60_000, 2)
	if sum(a.Added) != 2 || sum(a.Succeeded) != 2 || sum(a.Failed) != 1 {
		t.Fatalf("limited to 2: added %v succeeded %v failed %v", a.Added, a.Succeeded, a.Failed)
	}
	if !reflect.DeepEqual(a.Capped, []string{"added", "succeeded"}) {
		t.Fatalf("capped %v, want [added succeeded]", a.Capped)
	}

	a = get("retry", m0, m2+60_000, 100)
	check("retry added", a.Added, map[int64]int{m0: 1})
	check("retry failed", a.Failed, nil)
	// RUNNING tasks are adds too, and count towards the limit.
	e.claim(other, T0, 2, 600_000)
	a = get("other", m0, m2+60_000, 100)
	check("other added, two running", a.Added, map[int64]int{m0: 4})
	a = get("other", m0, m2+60_000, 3)
	if sum(a.Added) != 3 || !reflect.DeepEqual(a.Capped, []string{"added"}) {
		t.Fatalf("other limited to 3: added %v capped %v", a.Added, a.Capped)
	}
	a = get("missing", m0, m2+60_000, 100)
	check("missing queue added", a.Added, nil)
}

func sum(m map[int64]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
