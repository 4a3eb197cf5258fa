package storetest

import (
	"cmp"
	"slices"
	"testing"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

var maintenanceCases = []testCase{
	{"Expired", testExpired},
	{"NextDue", testNextDue},
	{"NextDueAfter", testNextDueAfter},
	{"QueueNextRunAt", testQueueNextRunAt},
	{"DueQueues", testDueQueues},
	{"Backlog", testBacklog},
	{"Workers", testWorkers},
	{"Heartbeat", testHeartbeat},
	{"DeleteFinished", testDeleteFinished},
	{"DeleteFinishedBatches", testDeleteFinishedBatches},
}

// testExpired checks that TaskExpired returns RUNNING tasks whose lease
// ended at or before now, of every instance, with payloads, up to limit.
func testExpired(t *testing.T, e *env) {
	a := e.instance("acme", "jobs")
	b := e.instance("globex", "jobs")
	qa := e.queue(a, "work", task.ModePull)
	qb := e.queue(b, "work", task.ModePull)
	e.addN(qa, 3, T0, nil)
	e.addN(qb, 2, T0, nil)
	if got, err := e.s.TaskExpired(e.ctx, T0+1_000_000, 10); err != nil || len(got) != 0 {
		t.Fatalf("TaskExpired with nothing running = %d, %v", len(got), err)
	}
	ca := e.claim(qa, T0, 2, 1_000) // leases end at T0+1000
	cb := e.claim(qb, T0, 2, 5_000) // leases end at T0+5000
	if len(ca) != 2 || len(cb) != 2 {
		t.Fatalf("claimed %d and %d", len(ca), len(cb))
	}
	if got, _ := e.s.TaskExpired(e.ctx, T0+999, 10); len(got) != 0 {
		t.Fatalf("TaskExpired before expiry = %d tasks", len(got))
	}
	got, err := e.s.TaskExpired(e.ctx, T0+1_000, 10)
	if err != nil || len(got) != 2 {
		t.Fatalf("TaskExpired at expiry = %d, %v; want the 2 of acme", len(got), err)
	}
	for _, tk := range got {
		if tk.InstanceID != a.ID || tk.State != task.Running || string(tk.Payload) != `{"n":1}` || tk.LeaseID == "" {
			t.Fatalf("expired task %+v", tk)
		}
	}
	if got, _ := e.s.TaskExpired(e.ctx, T0+5_000, 3); len(got) != 3 {
		t.Fatalf("TaskExpired limit 3 = %d", len(got))
	}
	// A finished attempt is no longer expired.
	e.finish(qa, ca[0], T0+10, task.Outcome{Status: task.AttemptSucceeded})
	if got, _ := e.s.TaskExpired(e.ctx, T0+5_000, 10); len(got) != 3 {
		t.Fatalf("TaskExpired after a finish = %d, want 3", len(got))
	}
}

func testNextDue(t *testing.T, e *env) {
	runAt, lease, err := e.s.TaskNextDue(e.ctx)
	if err != nil || runAt != 0 || lease != 0 {
		t.Fatalf("TaskNextDue(empty) = %d, %d, %v", runAt, lease, err)
	}
	a := e.instance("acme", "jobs")
	b := e.instance("globex", "jobs")
	qa := e.queue(a, "work", task.ModePull)
	qb := e.queue(b, "work", task.ModePush)
	qa2 := e.queue(a, "other", task.ModePush, func(q *task.Queue) { q.MinBackoffSeconds = 1 })
	qp := e.queue(a, "paused", task.ModePush, func(q *task.Queue) { q.Paused = true })

	cancelled := e.withID(qb, "c", T0, T0+100)
	if _, err := e.s.TaskUpdate(e.ctx, store.TaskRef{InstanceID: b.ID, ID: cancelled.ID}, func(t *task.Task) error { return t.Cancel(T0) }); err != nil {
		t.Fatal(err)
	}
	// Pull tasks wait for workers and paused queues for a resume: neither
	// is the dispatcher's next wake-up.
	e.withID(qa, "p1", T0, T0+100)
	e.withID(qp, "p0", T0, T0+50)
	e.withID(qb, "p2", T0, T0+300)
	runAt, lease, err = e.s.TaskNextDue(e.ctx)
	if err != nil || runAt != T0+300 || lease != 0 {
		t.Fatalf("TaskNextDue = %d, %d, %v; want T0+300, 0", runAt-T0, lease, err)
	}

	e.withID(qa2, "r1", T0, T0)
	e.withID(qa2, "r2", T0, T0)
	c := e.claim(qa2, T0+10, 2, 5_000) // leases end at T0+5010
	runAt, lease, err = e.s.TaskNextDue(e.ctx)
	if err != nil || runAt != T0+300 || lease != T0+5_010 {
		t.Fatalf("TaskNextDue = %d, %d, %v; want T0+300, T0+5010", runAt-T0, lease-T0, err)
	}
	// A RETRY_WAIT task counts as due at its runAt.
	e.finish(qa2, c[0], T0+20, fail("x")) // runAt T0+1020
	e.finish(qa2, c[1], T0+20, fail("x"))
	runAt, lease, err = e.s.TaskNextDue(e.ctx)
	if err != nil || runAt != T0+300 || lease != 0 {
		t.Fatalf("TaskNextDue = %d, %d, %v; want T0+300, 0", runAt-T0, lease, err)
	}
	e.claim(qb, T0+300, 1, 60_000)
	e.claim(qa, T0+500, 1, 9_000)
	runAt, lease, err = e.s.TaskNextDue(e.ctx)
	if err != nil || runAt != T0+1_020 || lease != T0+9_500 {
		t.Fatalf("TaskNextDue = %d, %d, %v; want T0+1020, T0+9500", runAt-T0, lease-T0, err)
	}
}

// testDeleteFinished checks that retention follows each instance's
// retentionDays against the now passed in, and never touches an unfinished
// task.
func testDeleteFinished(t *testing.T, e *env) {
	a := e.instance("acme", "short") // 1 day
	if _, err := e.s.InstanceUpdate(e.ctx, store.InstanceRef{Org: "acme", Name: "short"}, func(i *task.Instance) error { i.Settings.RetentionDays = 1; return nil }); err != nil {
		t.Fatal(err)
	}
	b := e.instance("acme", "long") // 3 days
	if _, err := e.s.InstanceUpdate(e.ctx, store.InstanceRef{Org: "acme", Name: "long"}, func(i *task.Instance) error { i.Settings.RetentionDays = 3; return nil }); err != nil {
		t.Fatal(err)
	}
	qa := e.queue(a, "work", task.ModePull, func(q *task.Queue) { q.MaxAttempts = 1 })
	qr := e.queue(a, "retry", task.ModePull, func(q *task.Queue) { q.MaxAttempts = 5; q.MaxBackoffSeconds = 86400 * 10; q.MinBackoffSeconds = 86400 })
	qb := e.queue(b, "work", task.ModePull)

	// In a: one of each finished state at T0+10, one succeeded a day later,
	// and old unfinished ones.
	e.withID(qa, "a-ok", T0, T0)
	e.withID(qa, "a-fail", T0, T0)
	e.withID(qa, "a-run", T0, T0)
	e.withID(qa, "a-late", T0, T0)
	e.withID(qa, "a-cancel", T0, T0+50)
	e.withID(qa, "a-pending", T0, T0+3*Day)
	e.withID(qr, "a-retry", T0, T0)
	c := e.claim(qa, T0, 4, 10*Day)
	byID := map[string]*task.Task{}
	for _, tk := range c {
		byID[tk.ID] = tk
	}
	e.finish(qa, byID["a-ok"], T0+10, succeed(`1`))
	e.finish(qa, byID["a-fail"], T0+10, fail("x"))
	e.finish(qa, byID["a-late"], T0+10+Day, succeed(`1`))
	if _, err := e.s.TaskUpdate(e.ctx, store.TaskRef{InstanceID: a.ID, ID: "a-cancel"}, func(t *task.Task) error { return t.Cancel(T0 + 10) }); err != nil {
		t.Fatal(err)
	}
	rc := e.claim(qr, T0, 1, 10*Day)
	e.finish(qr, rc[0], T0+10, fail("wait")) // RETRY_WAIT for a day
	// In b: succeeded at T0+10.
	e.withID(qb, "b-ok", T0, T0)
	bc := e.claim(qb, T0, 1, 1000)
	e.finish(qb, bc[0], T0+10, succeed(`1`))

	exists := func(inst *task.Instance, id string) bool {
		_, err := e.s.TaskGet(e.ctx, store.TaskRef{InstanceID: inst.ID, ID: id})
		if err != nil && !task.IsCode(err, task.CodeNotFound) {
			t.Fatal(err)
		}
		return err == nil
	}
	del := func(now int64) int {
		n, err := e.s.TaskDeleteFinished(e.ctx, now, 100)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	// Exactly one retention period old is still kept.
	if n := del(T0 + 10 + Day); n != 0 {
		t.Fatalf("deleted %d at exactly the retention period", n)
	}
	if n := del(T0 + 11 + Day); n != 3 {
		t.Fatalf("deleted %d, want 3 (a-ok, a-fail, a-cancel)", n)
	}
	for _, id := range []string{"a-ok", "a-fail", "a-cancel"} {
		if exists(a, id) {
			t.Fatalf("%s kept past retention", id)
		}
	}
	for _, id := range []string{"a-run", "a-late", "a-pending", "a-retry"} {
		if !exists(a, id) {
			t.Fatalf("%s deleted", id)
		}
	}
	if !exists(b, "b-ok") {
		t.Fatal("b-ok deleted under a's retention")
	}
	if n := del(T0 + 11 + 3*Day); n != 2 {
		t.Fatalf("deleted %d, want 2 (a-late, b-ok)", n)
	}
	if exists(b, "b-ok") || exists(a, "a-late") {
		t.Fatal("b-ok or a-late kept past retention")
	}
	// Unfinished tasks stay however old they are.
	if n := del(T0 + 1000*Day); n != 0 {
		t.Fatalf("deleted %d unfinished tasks", n)
	}
	for _, id := range []string{"a-run", "a-pending", "a-retry"} {
		if !exists(a, id) {
			t.Fatalf("%s deleted", id)
		}
	}
}

func testDeleteFinishedBatches(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	q := e.queue(inst, "work", task.ModePull)
	e.addN(q, 7, T0, nil)
	for _, tk := range e.claim(q, T0, 5, 1000) {
		e.finish(q, tk, T0+1, succeed(`1`))
	}
	now := T0 + 2 + int64(task.DefaultRetentionDays)*Day
	for _, want := range []int{2, 2, 1, 0} {
		n, err := e.s.TaskDeleteFinished(e.ctx, now, 2)
		if err != nil || n != want {
			t.Fatalf("TaskDeleteFinished = %d, %v; want %d", n, err, want)
		}
	}
	counts, err := e.s.QueueCounts(e.ctx, store.QueueRef{InstanceID: inst.ID, Name: "work"}, 100)
	if err != nil {
		t.Fatal(err)
	}
	checkCounts(t, counts, map[task.State]int{task.Pending: 2})
}

// testHeartbeat checks that TaskHeartbeat extends only leases still held,
// and that an extended lease is no longer expired.
func testHeartbeat(t *testing.T, e *env) {
	a := e.instance("acme", "jobs")
	b := e.instance("globex", "jobs")
	qa := e.queue(a, "work", task.ModePush)
	qb := e.queue(b, "work", task.ModePush)
	e.addN(qa, 3, T0, nil)
	e.addN(qb, 1, T0, nil)
	ca := e.claim(qa, T0, 3, 1_000)
	cb := e.claim(qb, T0, 1, 1_000)
	e.finish(qa, ca[2], T0+10, task.Outcome{Status: task.AttemptSucceeded})
	refs := []store.LeaseRef{
		{InstanceID: a.ID, ID: ca[0].ID, LeaseID: ca[0].LeaseID},
		{InstanceID: a.ID, ID: ca[1].ID, LeaseID: "stale"},        // wrong lease
		{InstanceID: a.ID, ID: ca[2].ID, LeaseID: ca[2].LeaseID},  // finished
		{InstanceID: a.ID, ID: cb[0].ID, LeaseID: cb[0].LeaseID},  // wrong instance
		{InstanceID: b.ID, ID: "missing", LeaseID: cb[0].LeaseID}, // no such task
	}
	n, err := e.s.TaskHeartbeat(e.ctx, refs, T0+60_000)
	if err != nil || n != 1 {
		t.Fatalf("TaskHeartbeat = %d, %v; want 1", n, err)
	}
	if got := e.get(a.ID, ca[0].ID); got.LeaseExpiresAt != T0+60_000 || got.State != task.Running {
		t.Fatalf("extended task %+v", got)
	}
	if got := e.get(a.ID, ca[1].ID); got.LeaseExpiresAt != T0+1_000 {
		t.Fatalf("a stale lease was extended: %d", got.LeaseExpiresAt)
	}
	exp, err := e.s.TaskExpired(e.ctx, T0+1_000, 10)
	if err != nil || len(exp) != 2 {
		t.Fatalf("TaskExpired = %d, %v; want the two not extended", len(exp), err)
	}
	for _, tk := range exp {
		if tk.ID == ca[0].ID {
			t.Fatal("an extended lease shows as expired")
		}
	}
	if n, err := e.s.TaskHeartbeat(e.ctx, nil, T0); err != nil || n != 0 {
		t.Fatalf("empty heartbeat = %d, %v", n, err)
	}
}

// testDueQueues checks that TaskDueQueues returns the unpaused push queues
// of every instance whose earliest waiting task is due at now, RETRY_WAIT
// included, and neither a pull queue, nor a paused one, nor one whose
// tasks are all later, running or finished.
func testDueQueues(t *testing.T, e *env) {
	due := func(now int64) []store.QueueRef {
		t.Helper()
		refs, err := e.s.TaskDueQueues(e.ctx, now)
		if err != nil {
			t.Fatalf("TaskDueQueues: %v", err)
		}
		slices.SortFunc(refs, func(x, y store.QueueRef) int {
			return cmp.Or(cmp.Compare(x.InstanceID, y.InstanceID), cmp.Compare(x.Name, y.Name))
		})
		return refs
	}
	if got := due(T0); len(got) != 0 {
		t.Fatalf("TaskDueQueues(empty) = %v", got)
	}
	a := e.instance("acme", "jobs")
	b := e.instance("globex", "jobs")
	pull := e.queue(a, "pull", task.ModePull)
	paused := e.queue(a, "paused", task.ModePush, func(q *task.Queue) { q.Paused = true })
	soon := e.queue(a, "soon", task.ModePush, func(q *task.Queue) { q.MinBackoffSeconds = 1 })
	later := e.queue(b, "later", task.ModePush)
	e.withID(pull, "p1", T0, T0)
	e.withID(paused, "p2", T0, T0)
	e.withID(soon, "s1", T0, T0+100)
	e.withID(later, "l1", T0, T0+5_000)
	if got := due(T0 + 99); len(got) != 0 {
		t.Fatalf("TaskDueQueues before anything is due = %v", got)
	}
	want := []store.QueueRef{{InstanceID: a.ID, Name: "soon"}}
	if got := due(T0 + 100); !slices.Equal(got, want) {
		t.Fatalf("TaskDueQueues at T0+100 = %v, want %v", got, want)
	}
	want = []store.QueueRef{{InstanceID: a.ID, Name: "soon"}, {InstanceID: b.ID, Name: "later"}}
	if a.ID > b.ID {
		want[0], want[1] = want[1], want[0]
	}
	if got := due(T0 + 5_000); !slices.Equal(got, want) {
		t.Fatalf("TaskDueQueues at T0+5000 = %v, want %v", got, want)
	}
	// Running: not due; failed into RETRY_WAIT: due again at its runAt.
	c := e.claim(soon, T0+100, 1, 60_000)
	if got := due(T0 + 200); len(got) != 0 {
		t.Fatalf("TaskDueQueues with the task running = %v", got)
	}
	e.finish(soon, c[0], T0+200, fail("x")) // runAt T0+1200
	if got := due(T0 + 1_199); len(got) != 0 {
		t.Fatalf("TaskDueQueues during the backoff = %v", got)
	}
	if got := due(T0 + 1_200); len(got) != 1 || got[0].Name != "soon" {
		t.Fatalf("TaskDueQueues after the backoff = %v", got)
	}
}

// testBacklog checks that TaskBacklog counts, per mode, the due PENDING and
// RETRY_WAIT tasks of every instance's unpaused queues (each queue up to
// the limit) with the earliest runAt among them, and leaves out paused
// queues, later tasks, running and finished ones.
func testBacklog(t *testing.T, e *env) {
	backlog := func(now int64, limit int) []store.Backlog {
		t.Helper()
		got, err := e.s.TaskBacklog(e.ctx, now, limit)
		if err != nil {
			t.Fatalf("TaskBacklog: %v", err)
		}
		slices.SortFunc(got, func(x, y store.Backlog) int { return cmp.Compare(x.Mode, y.Mode) })
		return got
	}
	check := func(now int64, limit int, want ...store.Backlog) {
		t.Helper()
		if got := backlog(now, limit); !slices.Equal(got, want) {
			t.Fatalf("TaskBacklog(T0%+d, %d) = %+v, want %+v", now-T0, limit, got, want)
		}
	}
	check(T0, 10)
	a := e.instance("acme", "jobs")
	b := e.instance("globex", "jobs")
	pull := e.queue(a, "pull", task.ModePull)
	paused := e.queue(a, "paused", task.ModePush, func(q *task.Queue) { q.Paused = true })
	soon := e.queue(a, "soon", task.ModePush, func(q *task.Queue) { q.MinBackoffSeconds = 1 })
	later := e.queue(b, "later", task.ModePush)
	e.withID(pull, "p1", T0, T0)
	e.withID(pull, "p2", T0, T0+50)
	e.withID(paused, "x1", T0, T0)
	e.withID(soon, "s1", T0, T0+100)
	e.withID(soon, "s2", T0, T0+200)
	e.withID(later, "l1", T0, T0+5_000)
	check(T0-1, 10)
	check(T0+150, 10, store.Backlog{Mode: task.ModePull, Due: 2, OldestRunAt: T0},
		store.Backlog{Mode: task.ModePush, Due: 1, OldestRunAt: T0 + 100})
	// Each queue counted up to the limit; the earliest is still its head.
	check(T0+5_000, 1, store.Backlog{Mode: task.ModePull, Due: 1, OldestRunAt: T0},
		store.Backlog{Mode: task.ModePush, Due: 2, OldestRunAt: T0 + 100})
	check(T0+5_000, 10, store.Backlog{Mode: task.ModePull, Due: 2, OldestRunAt: T0},
		store.Backlog{Mode: task.ModePush, Due: 3, OldestRunAt: T0 + 100})
	// Running tasks are not waiting; a failed one waits out its backoff,
	// then is due again from its new runAt; a finished one is gone.
	c := e.claim(soon, T0+5_000, 2, 60_000)
	e.claim(pull, T0+5_000, 2, 60_000)
	check(T0+5_000, 10, store.Backlog{Mode: task.ModePush, Due: 1, OldestRunAt: T0 + 5_000})
	e.finish(soon, c[0], T0+5_000, fail("x")) // runAt T0+6000
	e.finish(soon, c[1], T0+5_000, task.Outcome{Status: task.AttemptSucceeded, HTTPStatus: 200})
	check(T0+5_999, 10, store.Backlog{Mode: task.ModePush, Due: 1, OldestRunAt: T0 + 5_000})
	check(T0+6_000, 10, store.Backlog{Mode: task.ModePush, Due: 2, OldestRunAt: T0 + 5_000})
}
