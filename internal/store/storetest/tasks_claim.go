package storetest

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

var claimCases = []testCase{
	{"OnlyDue", testClaimOnlyDue},
	{"OnlyClaimableStates", testClaimOnlyClaimableStates},
	{"OrderAndLimit", testClaimOrderAndLimit},
	{"Priority", testClaimPriority},
	{"Fields", testClaimFields},
	{"FieldsAlike", testClaimFieldsAlike},
	{"Scope", testClaimScope},
	{"Concurrent", testClaimConcurrent},
	{"MaxRunning", testClaimMaxRunning},
	{"InstanceMaxRunning", testClaimInstanceMaxRunning},
	{"RateBucket", testClaimRateBucket},
	{"Routed", testClaimRouted},
	{"RoutedQueueTarget", testClaimRoutedQueueTarget},
	{"PausedRow", testClaimPausedRow},
	{"MaxBytes", testClaimMaxBytes},
}

// testClaimPausedRow: a queue whose row says paused claims nothing, by
// TaskClaim or by an add's claim, though the caller's copy of the queue
// (a node's cache, stale) says it is not; once resumed it claims again.
func testClaimPausedRow(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	q := e.queue(inst, "work", task.ModePush)
	stale := *q
	e.add(e.newTask(q, T0))
	pause := func(p bool) {
		t.Helper()
		if _, err := e.s.QueueUpdate(e.ctx, store.QueueRef{InstanceID: inst.ID, Name: q.Name}, func(q *task.Queue) error {
			q.Paused = p
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	pause(true)
	if got := e.claim(&stale, T0+1, 10, 60_000); len(got) != 0 {
		t.Fatalf("claimed %d from a queue paused in the store", len(got))
	}
	if _, ok := e.s.(store.AddClaimer); ok {
		if res, claimed := e.addClaim(&stale, T0+1, 10, nil, e.newTask(q, T0+1)); len(claimed) != 0 || res[0].Task.State != task.Pending {
			t.Fatalf("an add's claim on a paused queue took %d, answered %s", len(claimed), res[0].Task.State)
		}
	}
	pause(false)
	if got := e.claim(&stale, T0+2, 10, 60_000); len(got) != 2 {
		t.Fatalf("claimed %d after the resume, want 2", len(got))
	}
}

// claimWith claims with the limits set by mod.
func (e *env) claimWith(q *task.Queue, now int64, limit int, mod func(p *store.ClaimParams)) []*task.Task {
	e.t.Helper()
	p := &store.ClaimParams{Queue: q, Now: now, Limit: limit, LeaseMs: 60_000, NewLeaseID: e.leases()}
	mod(p)
	got, err := e.s.TaskClaim(e.ctx, p)
	if err != nil {
		e.t.Fatalf("TaskClaim: %v", err)
	}
	return got
}

// testClaimMaxBytes: a claim with MaxBytes keeps tasks in order while
// their payloads and params fit, the first whatever its size; the rest
// stay due and are claimed next.
func testClaimMaxBytes(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	q := e.queue(inst, "work", task.ModePull)
	e.addN(q, 5, T0, func(i int, in *task.AddInput) {
		in.Payload = json.RawMessage(`"` + strings.Repeat("p", 998) + `"`) // 1,000 bytes
		if i == 0 {
			in.Params = json.RawMessage(`{"k":"` + strings.Repeat("q", 492) + `"}`) // 500 bytes
		}
	})
	budget := func(n int) func(p *store.ClaimParams) { return func(p *store.ClaimParams) { p.MaxBytes = n } }
	if got := e.claimWith(q, T0, 5, budget(10)); len(got) != 1 {
		t.Fatalf("claimed %d within 10 bytes; want the first alone", len(got))
	}
	if got := e.claimWith(q, T0, 5, budget(2_999)); len(got) != 2 {
		t.Fatalf("claimed %d within 2,999 bytes of 1,000 each; want 2", len(got))
	}
	if got := e.claimWith(q, T0, 5, budget(0)); len(got) != 2 {
		t.Fatalf("claimed %d of the 2 left without a budget", len(got))
	}
}

// testClaimMaxRunning: the queue's cap counts the tasks already running,
// and a finished one frees its slot.
func testClaimMaxRunning(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	q := e.queue(inst, "work", task.ModePush)
	e.addN(q, 10, T0, nil)
	capped := func(p *store.ClaimParams) { p.MaxRunning = 3 }
	first := e.claimWith(q, T0, 2, capped)
	if got := e.claimWith(q, T0, 5, capped); len(first) != 2 || len(got) != 1 {
		t.Fatalf("claimed %d then %d under a cap of 3; want 2 then 1", len(first), len(got))
	}
	if got := e.claimWith(q, T0, 5, capped); len(got) != 0 {
		t.Fatalf("claimed %d at the cap", len(got))
	}
	e.finish(q, first[0], T0+1, task.Outcome{Status: task.AttemptSucceeded})
	if got := e.claimWith(q, T0+1, 5, capped); len(got) != 1 {
		t.Fatalf("claimed %d after one finished; want 1", len(got))
	}
}

// testClaimInstanceMaxRunning: the instance's cap spans its push queues and
// leaves out leased pull tasks and other instances.
func testClaimInstanceMaxRunning(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	other := e.instance("globex", "jobs")
	a := e.queue(inst, "a", task.ModePush)
	b := e.queue(inst, "b", task.ModePush)
	pq := e.queue(inst, "p", task.ModePull)
	oq := e.queue(other, "a", task.ModePush)
	for _, q := range []*task.Queue{a, b, pq, oq} {
		e.addN(q, 5, T0, nil)
	}
	e.claim(pq, T0, 5, 60_000)
	e.claim(oq, T0, 5, 60_000)
	capped := func(p *store.ClaimParams) { p.InstanceMaxRunning = 4 }
	got := len(e.claimWith(a, T0, 3, capped))
	got2 := len(e.claimWith(b, T0, 3, capped))
	if got != 3 || got2 != 1 {
		t.Fatalf("claimed %d from a and %d from b under an instance cap of 4; want 3 and 1", got, got2)
	}
}

// testClaimRateBucket: a bucket starts full, pays a token per task, and
// refills at the rate of the clock passed in.
func testClaimRateBucket(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	q := e.queue(inst, "work", task.ModePush)
	e.addN(q, 20, T0, nil)
	rated := func(p *store.ClaimParams) { p.Rate, p.Burst = 2, 3 }
	if got := e.claimWith(q, T0, 10, rated); len(got) != 3 {
		t.Fatalf("first claim %d; want the full burst of 3", len(got))
	}
	if got := e.claimWith(q, T0+100, 10, rated); len(got) != 0 {
		t.Fatalf("claimed %d with an empty bucket", len(got))
	}
	if got := e.claimWith(q, T0+600, 10, rated); len(got) != 1 {
		t.Fatalf("claimed %d after 0.6 s at 2/s; want 1", len(got))
	}
	if got := e.claimWith(q, T0+1_100, 10, rated); len(got) != 1 {
		t.Fatalf("claimed %d 0.5 s later (0.2 carried over); want 1", len(got))
	}
	if got := e.claimWith(q, T0+60_000, 10, rated); len(got) != 3 {
		t.Fatalf("claimed %d after a long pause; want the burst of 3", len(got))
	}
}

func testClaimOnlyDue(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	q := e.queue(inst, "work", task.ModePull)
	e.withID(q, "past", T0, T0+10)
	e.withID(q, "now", T0, T0+50)
	e.withID(q, "later", T0, T0+51)
	got := e.claim(q, T0+50, 10, 1000)
	sameIDs(t, "claim at T0+50", got, "past", "now")
	got = e.claim(q, T0+50, 10, 1000)
	sameIDs(t, "second claim at T0+50", got)
	got = e.claim(q, T0+51, 10, 1000)
	sameIDs(t, "claim at T0+51", got, "later")
}

func testClaimOnlyClaimableStates(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	q := e.queue(inst, "work", task.ModePull, func(q *task.Queue) { q.MinBackoffSeconds = 0.001; q.MaxAttempts = 3 })
	e.withID(q, "cancelled", T0, T0)
	e.withID(q, "running", T0, T0)
	e.withID(q, "done", T0, T0)
	e.withID(q, "retry", T0, T0)
	if _, err := e.s.TaskUpdate(e.ctx, store.TaskRef{InstanceID: inst.ID, ID: "cancelled"}, func(t *task.Task) error { return t.Cancel(T0) }); err != nil {
		t.Fatal(err)
	}
	c := e.claim(q, T0, 3, 60_000)
	sameIDs(t, "first claim", c, "done", "retry", "running")
	e.finish(q, c[0], T0+1, succeed(`1`))
	e.finish(q, c[1], T0+1, fail("x")) // RETRY_WAIT, due at T0+2
	// RUNNING (even with an old runAt), SUCCEEDED and CANCELLED are never
	// claimed; RETRY_WAIT is, once due.
	got := e.claim(q, T0+1, 10, 60_000)
	sameIDs(t, "claim before the backoff", got)
	got = e.claim(q, T0+100_000, 10, 60_000)
	sameIDs(t, "claim after the backoff", got, "retry")
	if got[0].Attempt != 2 || len(got[0].Attempts) != 1 {
		t.Fatalf("retried claim: attempt %d, history %v", got[0].Attempt, got[0].Attempts)
	}
}

func testClaimOrderAndLimit(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	q := e.queue(inst, "work", task.ModePull)
	e.withID(q, "t5", T0, T0+5)
	e.withID(q, "t1", T0, T0+1)
	e.withID(q, "t3b", T0, T0+3)
	e.withID(q, "t3a", T0, T0+3)
	e.withID(q, "t2", T0, T0+2)
	e.withID(q, "t4", T0, T0+4)
	got := e.claim(q, T0+10, 2, 1000)
	sameIDs(t, "claim 2", got, "t1", "t2")
	got = e.claim(q, T0+10, 3, 1000)
	sameIDs(t, "claim 3", got, "t3a", "t3b", "t4")
	got = e.claim(q, T0+10, 3, 1000)
	sameIDs(t, "claim rest", got, "t5")
}

// testClaimPriority: a queue's due tasks are claimed from the highest
// priority down, each priority in runAt order, the default (0) last; a
// prioritized task not yet due waits; a prioritized task keeps its
// priority through a failed attempt and is claimed first again once its
// backoff is over; the priority is stored and read back, by a large add
// too.
func testClaimPriority(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	q := e.queue(inst, "work", task.ModePull, func(q *task.Queue) { q.MinBackoffSeconds = 1 })
	prio := func(n int) func(*task.AddInput) { return func(in *task.AddInput) { in.Priority = &n } }
	e.withID(q, "p0-first", T0, T0+1)
	e.withID(q, "p5-late", T0, T0+5, prio(5))
	e.withID(q, "p5-early", T0, T0+2, prio(5))
	e.withID(q, "p9", T0, T0+8, prio(9))
	e.withID(q, "p9-future", T0, T0+100, prio(9))
	e.withID(q, "p0-second", T0, T0+3)
	e.withID(q, "p1", T0, T0+9, prio(1))
	if got := e.get(inst.ID, "p5-late"); got.Priority != 5 {
		t.Fatalf("stored priority %d, want 5", got.Priority)
	}
	got := e.claim(q, T0+10, 2, 60_000)
	sameIDs(t, "claim 2", got, "p9", "p5-early")
	got = e.claim(q, T0+10, 3, 60_000)
	sameIDs(t, "claim 3", got, "p5-late", "p1", "p0-first")
	got = e.claim(q, T0+10, 10, 60_000)
	sameIDs(t, "claim the rest", got, "p0-second")
	if got[0].Priority != 0 {
		t.Fatalf("claimed priority %d", got[0].Priority)
	}
	got = e.claim(q, T0+100, 10, 60_000)
	sameIDs(t, "claim at T0+100", got, "p9-future")
	e.finish(q, got[0], T0+101, fail("x")) // RETRY_WAIT, due at T0+1101
	e.withID(q, "p0-third", T0+101, T0+102)
	got = e.claim(q, T0+2000, 1, 60_000)
	sameIDs(t, "claim after the backoff", got, "p9-future")
	if got[0].Priority != 9 || got[0].Attempt != 2 {
		t.Fatalf("retried claim: priority %d, attempt %d", got[0].Priority, got[0].Attempt)
	}
	// A large add (PostgreSQL's COPY path) keeps each task's priority.
	batch := e.addN(q, 70, T0+3000, func(i int, in *task.AddInput) {
		if i == 69 {
			in.Priority = ptr(8)
		}
	})
	got = e.claim(q, T0+3000, 1, 60_000)
	sameIDs(t, "claim after a large add", got, batch[69].ID)
}

// testClaimFieldsAlike: a claim of tasks that task.Claim leaves alike but
// for their key, attempt and lease (one queue, one time, no deadline of
// their own: a backend may write the rest once) stores each as Claim made
// it, a retried task's attempt included.
func testClaimFieldsAlike(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	q := e.queue(inst, "push", task.ModePush, func(q *task.Queue) { q.DeadlineSeconds = 45; q.MaxAttempts = 4 })
	ts := e.addN(q, 3, T0, nil)
	first := e.claim(q, T0, 1, 60_000)[0]
	e.finish(q, first, T0+10, task.Outcome{Status: task.AttemptFailed, NoBackoff: true, Error: "again"})
	before := make([]*task.Task, len(ts))
	for i, tk := range ts {
		before[i] = e.get(inst.ID, tk.ID)
	}
	now := T0 + 1000
	got := e.claim(q, now, 5, 50_000)
	if len(got) != 3 {
		t.Fatalf("claimed %d tasks, want 3", len(got))
	}
	for _, c := range got {
		var want *task.Task
		for _, b := range before {
			if b.ID == c.ID {
				want = b
			}
		}
		if err := want.Claim(q, now, c.LeaseID, 50_000); err != nil {
			t.Fatal(err)
		}
		sameTask(t, "claimed", c, want)
		sameTask(t, "stored", e.get(inst.ID, c.ID), want)
		if c.ID == first.ID && c.Attempt != 2 {
			t.Fatalf("the retried task claimed as attempt %d, want 2", c.Attempt)
		}
	}
}

func testClaimFields(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	q := e.queue(inst, "push", task.ModePush, func(q *task.Queue) { q.DeadlineSeconds = 45; q.MaxAttempts = 4 })
	a := e.newTask(q, T0, func(in *task.AddInput) { in.Payload = json.RawMessage(`{"to": "a@b.c"}`) })
	b := e.newTask(q, T0, func(in *task.AddInput) { in.DeadlineSeconds = ptr(5) })
	e.add(a, b)
	// The engine's view of the queue may have changed since the tasks were
	// added: Claim takes maxAttempts from it.
	q.MaxAttempts = 6
	now := T0 + 1000
	var leases []string
	got, err := e.s.TaskClaim(e.ctx, &store.ClaimParams{Queue: q, Now: now, Limit: 5, LeaseMs: 50_000, NewLeaseID: func() string {
		l := e.id("L")
		leases = append(leases, l)
		return l
	}})
	if err != nil {
		t.Fatal(err)
	}
	sameIDs(t, "claim", got, a.ID, b.ID)
	if len(leases) != 2 || got[0].LeaseID == got[1].LeaseID {
		t.Fatalf("leases %v; claimed leases %q %q", leases, got[0].LeaseID, got[1].LeaseID)
	}
	for i, orig := range []*task.Task{a, b} {
		want := *orig
		if err := want.Claim(q, now, got[i].LeaseID, 50_000); err != nil {
			t.Fatal(err)
		}
		sameTask(t, "claimed", got[i], &want)
		sameTask(t, "stored", e.get(inst.ID, orig.ID), &want)
	}
	if got[0].State != task.Running || got[0].Attempt != 1 || got[0].StartedAt != now || got[0].LeaseExpiresAt != now+50_000 ||
		got[0].DeadlineAt != now+45_000 || got[1].DeadlineAt != now+5_000 || got[0].MaxAttempts != 6 {
		t.Fatalf("claimed = %+v", got[0])
	}
	if string(got[0].Payload) != `{"to": "a@b.c"}` {
		t.Fatalf("claimed payload %q", got[0].Payload)
	}

	p := e.queue(inst, "pull", task.ModePull)
	e.addN(p, 1, T0, nil)
	pc := e.claim(p, now, 1, 30_000)
	if len(pc) != 1 || pc[0].DeadlineAt != 0 || pc[0].LeaseExpiresAt != now+30_000 || !pc[0].Pull {
		t.Fatalf("pull claim = %+v", pc)
	}
}

func testClaimScope(t *testing.T, e *env) {
	a := e.instance("acme", "jobs")
	b := e.instance("globex", "jobs")
	qa := e.queue(a, "work", task.ModePull)
	qa2 := e.queue(a, "other", task.ModePull)
	qb := e.queue(b, "work", task.ModePull)
	mine := e.addN(qa, 2, T0, nil)
	e.addN(qa2, 2, T0, nil)
	e.addN(qb, 2, T0, nil)
	got := e.claim(qa, T0, 10, 1000)
	sameIDs(t, "claim", got, ids(mine)...)
}

// testClaimConcurrent runs two claimers over the same queue at once: every
// task is claimed exactly once.
func testClaimConcurrent(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	q := e.queue(inst, "work", task.ModePull)
	const n = 500
	tasks := e.addN(q, n, T0, func(i int, in *task.AddInput) { in.RunAt = ptr(T0 + int64(i%10)) })
	var mu sync.Mutex
	owner := map[string]int{}
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Go(func() {
			for {
				got, err := e.s.TaskClaim(e.ctx, &store.ClaimParams{Queue: q, Now: T0 + 100, Limit: 7, LeaseMs: 60_000, NewLeaseID: e.leases()})
				if err != nil {
					t.Errorf("claimer %d: %v", w, err)
					return
				}
				if len(got) == 0 {
					return
				}
				mu.Lock()
				for _, tk := range got {
					if prev, ok := owner[tk.ID]; ok {
						t.Errorf("%s claimed by %d and %d", tk.ID, prev, w)
					}
					owner[tk.ID] = w
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(owner) != n {
		t.Fatalf("claimed %d distinct tasks, want %d", len(owner), n)
	}
	for _, tk := range tasks {
		if _, ok := owner[tk.ID]; !ok {
			t.Fatalf("%s never claimed", tk.ID)
		}
	}
	counts, err := e.s.QueueCounts(e.ctx, store.QueueRef{InstanceID: inst.ID, Name: "work"}, 10_000)
	if err != nil {
		t.Fatal(err)
	}
	checkCounts(t, counts, map[task.State]int{task.Running: n})
}
