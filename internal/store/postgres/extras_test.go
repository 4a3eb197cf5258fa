package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/store/postgres"
	"github.com/errandhq/errand/internal/task"
)

// These cover what this backend does where store.go is silent, and what
// only several nodes on one database can show; the contract itself is
// storetest's.

func newFixture(t *testing.T) *postgres.Store {
	t.Helper()
	s := postgres.OpenTest(t)
	t.Cleanup(func() { s.Close() })
	inst := &task.Instance{ID: "i1", Org: "acme", Name: "jobs", CreatedAt: 1, Settings: task.DefaultSettings()}
	if err := s.InstanceCreate(t.Context(), inst); err != nil {
		t.Fatal(err)
	}
	return s
}

func newQueue(t *testing.T, s store.Store, name string, mod ...func(*task.Queue)) *task.Queue {
	t.Helper()
	q := task.NewQueue("i1", name, task.ModePull)
	for _, m := range mod {
		m(q)
	}
	if err := s.QueueCreate(t.Context(), q); err != nil {
		t.Fatal(err)
	}
	return q
}

func pullTask(t testing.TB, q *task.Queue, id string, mod ...func(*task.AddInput)) *task.Task {
	t.Helper()
	in := task.AddInput{}
	for _, m := range mod {
		m(&in)
	}
	tk, err := task.NewTask(q, in, 1, task.URLRules{})
	if err != nil {
		t.Fatal(err)
	}
	tk.ID = id
	return tk
}

// TestHistoryMustFollow: a finish whose task does not carry the stored
// attempt history plus at most one attempt is refused whole, with INTERNAL,
// rather than stored.
func TestHistoryMustFollow(t *testing.T) {
	s := newFixture(t)
	ctx := t.Context()
	q := newQueue(t, s, "work")
	if _, err := s.TaskAdd(ctx, []*task.Task{pullTask(t, q, "a")}); err != nil {
		t.Fatal(err)
	}
	c, err := s.TaskClaim(ctx, &store.ClaimParams{Queue: q, Now: 1, Limit: 1, LeaseMs: 1000, NewLeaseID: func() string { return "L" }})
	if err != nil || len(c) != 1 {
		t.Fatalf("claim = %v, %v", c, err)
	}
	tk := c[0]
	if _, err := tk.Finish(q, 2, task.Outcome{Status: task.AttemptSucceeded}); err != nil {
		t.Fatal(err)
	}
	tk.Attempts = append(tk.Attempts, tk.Attempts[0]) // two new attempts
	_, err = s.TaskFinish(ctx, []*store.FinishParams{{Task: tk, LeaseID: "L"}})
	if !task.IsCode(err, task.CodeInternal) {
		t.Fatalf("TaskFinish with a history that does not follow: %v, want INTERNAL", err)
	}
	if got, err := s.TaskGet(ctx, store.TaskRef{InstanceID: "i1", ID: "a"}); err != nil || got.State != task.Running || len(got.Attempts) != 0 {
		t.Fatalf("task after a refused finish: %+v, %v", got, err)
	}
}

// TestTwoNodes runs two stores (two nodes) on one schema and claims and
// finishes from both at once: every task is claimed once and finished once.
func TestTwoNodes(t *testing.T) {
	schema := postgres.FreshSchema(t)
	a := postgres.OpenTestSchema(t, schema)
	defer a.Close()
	b := postgres.OpenTestSchema(t, schema)
	defer b.Close()
	ctx := t.Context()
	inst := &task.Instance{ID: "i1", Org: "acme", Name: "jobs", CreatedAt: 1, Settings: task.DefaultSettings()}
	if err := a.InstanceCreate(ctx, inst); err != nil {
		t.Fatal(err)
	}
	q := newQueue(t, b, "work")
	const n = 600
	addTasks(t, a, q, n, 0)
	var leases atomic.Int64
	newLease := func() string { return fmt.Sprint("l", leases.Add(1)) }
	var mu sync.Mutex
	seen := map[string]bool{}
	var wg sync.WaitGroup
	for w := range 4 {
		s := []*postgres.Store{a, b}[w%2]
		wg.Go(func() {
			for {
				got, err := s.TaskClaim(ctx, &store.ClaimParams{Queue: q, Now: 10, Limit: 9, LeaseMs: 60_000, NewLeaseID: newLease})
				if err != nil {
					t.Errorf("claim: %v", err)
					return
				}
				if len(got) == 0 {
					return
				}
				mu.Lock()
				for _, tk := range got {
					if seen[tk.ID] {
						t.Errorf("%s claimed twice", tk.ID)
					}
					seen[tk.ID] = true
				}
				mu.Unlock()
				ps := make([]*store.FinishParams, len(got))
				for i, tk := range got {
					lease := tk.LeaseID
					if _, err := tk.Finish(q, 20, task.Outcome{Status: task.AttemptSucceeded, Result: json.RawMessage(`1`)}); err != nil {
						t.Error(err)
						return
					}
					ps[i] = &store.FinishParams{Task: tk, LeaseID: lease}
				}
				res, err := s.TaskFinish(ctx, ps)
				if err != nil {
					t.Errorf("finish: %v", err)
					return
				}
				for _, e := range res {
					if e != nil {
						t.Errorf("finish: %v", e)
					}
				}
			}
		})
	}
	wg.Wait()
	if len(seen) != n {
		t.Fatalf("claimed %d, want %d", len(seen), n)
	}
	counts, err := a.QueueCounts(ctx, store.QueueRef{InstanceID: "i1", Name: "work"}, 10_000)
	if err != nil || counts[task.Succeeded] != n {
		t.Fatalf("counts = %v, %v; want %d succeeded", counts, err, n)
	}
}

// TestConcurrentSameName adds one name from many callers at once: one is
// stored and every other answer is TASK_EXISTS carrying its id, even for the
// adds whose statement began before the winner committed.
func TestConcurrentSameName(t *testing.T) {
	s := newFixture(t)
	ctx := t.Context()
	q := newQueue(t, s, "work")
	for round := range 5 {
		name := fmt.Sprint("n", round)
		const callers = 8
		res := make([]store.AddResult, callers)
		var wg sync.WaitGroup
		for i := range callers {
			wg.Go(func() {
				tk := pullTask(t, q, fmt.Sprintf("r%d-%d", round, i), func(in *task.AddInput) { in.Name = name })
				r, err := s.TaskAdd(ctx, []*task.Task{tk})
				if err != nil {
					t.Errorf("TaskAdd: %v", err)
					return
				}
				res[i] = r[0]
			})
		}
		wg.Wait()
		winner := ""
		for _, r := range res {
			if r.Err == nil && r.Task != nil {
				if winner != "" {
					t.Fatalf("round %d: two tasks named %s stored", round, name)
				}
				winner = r.Task.ID
			}
		}
		if winner == "" {
			t.Fatalf("round %d: none stored: %+v", round, res)
		}
		for i, r := range res {
			if r.Task == nil && (r.Err == nil || r.Err.Code != task.CodeTaskExists || r.Err.ID != winner) {
				t.Fatalf("round %d caller %d: %+v, want TASK_EXISTS with id %s", round, i, r.Err, winner)
			}
		}
	}
}

// TestQueueDeleteDuringAdds deletes a queue while tasks are being added to
// it: no add lands in the deleted queue, so a queue made again under the
// name starts empty.
func TestQueueDeleteDuringAdds(t *testing.T) {
	s := newFixture(t)
	ctx := t.Context()
	for round := range 5 {
		q := newQueue(t, s, "work")
		var wg sync.WaitGroup
		var added atomic.Int64
		stop := make(chan struct{})
		twenty := make(chan struct{}) // closed at the 20th add
		for w := range 3 {
			wg.Go(func() {
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					tk := pullTask(t, q, fmt.Sprintf("r%d-w%d-%d", round, w, i))
					if _, err := s.TaskAdd(ctx, []*task.Task{tk}); err != nil {
						t.Errorf("TaskAdd: %v", err)
						return
					}
					if added.Add(1) == 20 {
						close(twenty)
					}
				}
			})
		}
		writersDone := make(chan struct{})
		go func() { wg.Wait(); close(writersDone) }()
		select {
		case <-twenty:
		case <-writersDone: // every writer failed before 20 adds
			t.FailNow()
		}
		if _, err := s.QueueDelete(ctx, store.QueueRef{InstanceID: "i1", Name: "work"}); err != nil {
			t.Fatal(err)
		}
		close(stop)
		wg.Wait()
		newQueue(t, s, "work")
		page, err := s.TaskList(ctx, &store.ListParams{InstanceID: "i1", Queue: "work", Limit: 10})
		if err != nil || len(page.Tasks) != 0 {
			t.Fatalf("round %d: the queue made again lists %d tasks, %v", round, len(page.Tasks), err)
		}
		if _, err := s.QueueDelete(ctx, store.QueueRef{InstanceID: "i1", Name: "work"}); err != nil {
			t.Fatal(err)
		}
	}
}

var payload = json.RawMessage(`{"to":"someone@example.com","template":"receipt","order":123456,"lines":[{"sku":"A-1","qty":2},{"sku":"B-7","qty":1}]}`)

// addTasks adds n tasks to q in batches of 100, their ids starting at from.
func addTasks(tb testing.TB, s store.Store, q *task.Queue, n, from int) {
	tb.Helper()
	for start := 0; start < n; start += 100 {
		batch := make([]*task.Task, 0, 100)
		for i := start; i < min(n, start+100); i++ {
			tk, err := task.NewTask(q, task.AddInput{Payload: payload}, 1, task.URLRules{})
			if err != nil {
				tb.Fatal(err)
			}
			tk.ID = fmt.Sprintf("t%09d", from+i)
			batch = append(batch, tk)
		}
		res, err := s.TaskAdd(context.Background(), batch)
		if err != nil {
			tb.Fatal(err)
		}
		for _, r := range res {
			if r.Err != nil {
				tb.Fatal(r.Err)
			}
		}
	}
}

// TestLimitsAcrossNodes claims from two nodes at once under each limit the
// store keeps: the queue's cap, the instance's cap over two queues, and the
// rate bucket. With nothing finishing, exactly the limit is claimed, never
// more, however the claims interleave.
func TestLimitsAcrossNodes(t *testing.T) {
	schema := postgres.FreshSchema(t)
	a := postgres.OpenTestSchema(t, schema)
	defer a.Close()
	b := postgres.OpenTestSchema(t, schema)
	defer b.Close()
	ctx := t.Context()
	inst := &task.Instance{ID: "i1", Org: "acme", Name: "jobs", CreatedAt: 1, Settings: task.DefaultSettings()}
	if err := a.InstanceCreate(ctx, inst); err != nil {
		t.Fatal(err)
	}
	made := 0
	push := func(name string) *task.Queue {
		q := task.NewQueue("i1", name, task.ModePush)
		q.Target = &task.Target{Webhook: "https://example.com/h"}
		if err := a.QueueCreate(ctx, q); err != nil {
			t.Fatal(err)
		}
		addTasks(t, a, q, 200, made*1000)
		made++
		return q
	}
	var leases atomic.Int64
	claimAll := func(qs []*task.Queue, set func(*store.ClaimParams)) int {
		var total atomic.Int64
		var wg sync.WaitGroup
		for w := range 6 {
			s, q := []*postgres.Store{a, b}[w%2], qs[w%len(qs)]
			wg.Go(func() {
				for range 20 {
					p := &store.ClaimParams{Queue: q, Now: 10, Limit: 3, LeaseMs: 60_000,
						NewLeaseID: func() string { return fmt.Sprint("l", leases.Add(1)) }}
					set(p)
					got, err := s.TaskClaim(ctx, p)
					if err != nil {
						t.Errorf("claim: %v", err)
						return
					}
					total.Add(int64(len(got)))
				}
			})
		}
		wg.Wait()
		return int(total.Load())
	}
	if n := claimAll([]*task.Queue{push("capped")}, func(p *store.ClaimParams) { p.MaxRunning = 7 }); n != 7 {
		t.Fatalf("claimed %d under a queue cap of 7", n)
	}
	if n := claimAll([]*task.Queue{push("one"), push("two")}, func(p *store.ClaimParams) { p.InstanceMaxRunning = 7 + 11 }); n != 11 {
		t.Fatalf("claimed %d under an instance cap of 18 with 7 running", n)
	}
	if n := claimAll([]*task.Queue{push("rated")}, func(p *store.ClaimParams) { p.Rate, p.Burst = 1, 5 }); n != 5 {
		t.Fatalf("claimed %d from a bucket of 5 at a fixed time", n)
	}
}

// TestClaimAbortedMidway cancels a claim between its two round trips (its
// lease ids are being made): the claim answers the context's error, the
// rows it had locked are left as they were, and the store goes on.
func TestClaimAbortedMidway(t *testing.T) {
	s := newFixture(t)
	q := newQueue(t, s, "work")
	addTasks(t, s, q, 5, 0)
	for range 3 { // more than once: the connection must come back clean
		ctx, cancel := context.WithCancel(t.Context())
		_, err := s.TaskClaim(ctx, &store.ClaimParams{Queue: q, Now: 10, Limit: 5, LeaseMs: 1000, MaxRunning: 10,
			NewLeaseID: func() string { cancel(); return "L" }})
		cancel()
		if err != context.Canceled {
			t.Fatalf("claim cancelled midway: %v, want context.Canceled", err)
		}
		counts, err := s.QueueCounts(t.Context(), store.QueueRef{InstanceID: "i1", Name: "work"}, 100)
		if err != nil || counts[task.Pending] != 5 || counts[task.Running] != 0 {
			t.Fatalf("counts after an aborted claim: %v, %v", counts, err)
		}
	}
	got, err := s.TaskClaim(t.Context(), &store.ClaimParams{Queue: q, Now: 10, Limit: 5, LeaseMs: 1000, MaxRunning: 10,
		NewLeaseID: func() string { return fmt.Sprint("L", time.Now().UnixNano()) }})
	if err != nil || len(got) != 5 {
		t.Fatalf("claim after aborted ones: %d, %v", len(got), err)
	}
}

// storeAndSession opens a store on a fresh schema and another session on
// its database, its search path the schema, in which a test holds the
// claims' advisory locks (they are the database's, not a schema's) or the
// schema's rows; both are closed when the test ends.
func storeAndSession(t *testing.T) (*postgres.Store, *pgx.Conn) {
	t.Helper()
	schema := postgres.FreshSchema(t)
	s := postgres.OpenTestSchema(t, schema)
	t.Cleanup(func() { s.Close() })
	other, err := pgx.Connect(t.Context(), postgres.DatabaseURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close(context.Background()) })
	if _, err := other.Exec(t.Context(), `SELECT set_config('search_path', $1, false)`, schema); err != nil {
		t.Fatal(err)
	}
	return s, other
}

// awaitWaiting polls, on session other, the query asking whether what the
// test started (called what) waits for a lock, until it does; it fails the
// test when done receives first (it returned instead of waiting), or after
// 10 s: the deadline bounds a failure (a call that never waits), not the
// test's pace.
func awaitWaiting[T any](t *testing.T, other *pgx.Conn, what string, done <-chan T, query string, arg any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	for waiting := false; !waiting; {
		if err := other.QueryRow(ctx, query, arg).Scan(&waiting); err != nil {
			t.Fatalf("waiting for %s to wait for its lock: %v", what, err)
		}
		select {
		case r := <-done:
			t.Fatalf("%s returned while its lock was held elsewhere: %+v", what, r)
		default:
		}
	}
}

// TestAddClaimDoesNotWaitForALock: an add's claim whose instance or queue
// lock another claim holds (here another session) does not wait for it:
// it claims nothing and adds its tasks PENDING, at once. With the locks
// free, the next add claims what it adds.
func TestAddClaimDoesNotWaitForALock(t *testing.T) {
	s, other := storeAndSession(t)
	ctx := t.Context()
	inst := &task.Instance{ID: "i1", Org: "acme", Name: "jobs", CreatedAt: 1, Settings: task.DefaultSettings()}
	if err := s.InstanceCreate(ctx, inst); err != nil {
		t.Fatal(err)
	}
	q := newQueue(t, s, "work", func(q *task.Queue) {
		q.Mode, q.Target = task.ModePush, &task.Target{Webhook: "https://example.com/h"}
	})
	n := 0
	addClaim := func(set func(*store.ClaimParams)) ([]store.AddResult, []*task.Task) {
		t.Helper()
		n++
		tk := pullTask(t, q, fmt.Sprint("t", n))
		p := &store.ClaimParams{Queue: q, Now: 1, Limit: 10, LeaseMs: 60_000, Due: true,
			NewLeaseID: func() string { return fmt.Sprint("l", n) }}
		set(p)
		// A claim that waited for the lock held below would wait for ever:
		// the deadline bounds the test's failure, not its pace.
		actx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		res, claimed, err := s.TaskAddClaim(actx, []*task.Task{tk}, p)
		if err != nil || len(res) != 1 || res[0].Err != nil {
			t.Fatalf("TaskAddClaim: %v %+v", err, res)
		}
		return res, claimed
	}
	for _, c := range []struct {
		name string
		lock int64
		set  func(*store.ClaimParams)
	}{
		{"the instance's", postgres.ClaimLockKey("i1", ""), func(p *store.ClaimParams) { p.InstanceMaxRunning = 50 }},
		{"the queue's", postgres.ClaimLockKey("i1", "work"), func(p *store.ClaimParams) { p.MaxRunning = 5 }},
	} {
		tx, err := other.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, c.lock); err != nil {
			t.Fatal(err)
		}
		res, claimed := addClaim(c.set)
		if len(claimed) != 0 || res[0].Task.State != task.Pending {
			t.Errorf("%s lock held elsewhere: claimed %d, the task %s; want none claimed, the task PENDING", c.name, len(claimed), res[0].Task.State)
		}
		if err := tx.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		// Free again: this add claims the one before and its own.
		res, claimed = addClaim(c.set)
		if len(claimed) != 2 || res[0].Task.State != task.Running {
			t.Errorf("%s lock free: claimed %d, the task %s; want 2 claimed, the task RUNNING", c.name, len(claimed), res[0].Task.State)
		}
	}
}

// TestBatchAddClaimWaitsForItsLock: the add of a batch waits for the
// claim's lock another claim holds (here another session), then claims
// its tasks; it does not give them up to the dispatcher as a single task's
// add does (TestAddClaimDoesNotWaitForALock).
func TestBatchAddClaimWaitsForItsLock(t *testing.T) {
	s, other := storeAndSession(t)
	ctx := t.Context()
	// An instance of its own: its lock's key is no other test's.
	const inst = "i-batch-wait"
	if err := s.InstanceCreate(ctx, &task.Instance{ID: inst, Org: "acme", Name: "batchwait", CreatedAt: 1, Settings: task.DefaultSettings()}); err != nil {
		t.Fatal(err)
	}
	q := task.NewQueue(inst, "work", task.ModePush)
	q.Target = &task.Target{Webhook: "https://example.com/h"}
	if err := s.QueueCreate(ctx, q); err != nil {
		t.Fatal(err)
	}
	key := postgres.ClaimLockKey(inst, "")
	tx, err := other.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, key); err != nil {
		t.Fatal(err)
	}
	type result struct {
		res     []store.AddResult
		claimed []*task.Task
		err     error
	}
	batch := []*task.Task{pullTask(t, q, "b1"), pullTask(t, q, "b2")}
	done := make(chan result, 1)
	go func() {
		leases := 0
		p := &store.ClaimParams{Queue: q, Now: 1, Limit: 10, LeaseMs: 60_000, Due: true, InstanceMaxRunning: 50,
			NewLeaseID: func() string { leases++; return fmt.Sprint("l", leases) }}
		var r result
		r.res, r.claimed, r.err = s.TaskAddClaim(ctx, batch, p)
		done <- r
	}()
	// The add waits: its request for the lock is in pg_locks, not granted.
	awaitWaiting(t, other, "the batch's add", done, `SELECT EXISTS (SELECT FROM pg_locks
		WHERE locktype = 'advisory' AND NOT granted AND (classid::int8 << 32 | objid::int8) = $1)`, key)
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || len(r.res) != 2 || r.res[0].Err != nil || r.res[1].Err != nil {
		t.Fatalf("TaskAddClaim: %v %+v", r.err, r.res)
	}
	if len(r.claimed) != 2 || r.res[0].Task.State != task.Running || r.res[1].Task.State != task.Running {
		t.Errorf("lock freed: claimed %d, the tasks %s and %s; want both claimed, RUNNING", len(r.claimed), r.res[0].Task.State, r.res[1].Task.State)
	}
}

// TestAPIRateGrantRacesInstanceDelete: a node's first grant of an
// instance's API calls, asked while the instance is being deleted (another
// session holds the instance's row as InstanceDelete does), waits for the
// delete; it then answers NOT_FOUND and leaves no bucket behind.
func TestAPIRateGrantRacesInstanceDelete(t *testing.T) {
	s, other := storeAndSession(t)
	ctx := t.Context()
	const inst = "i-rate-race"
	if err := s.InstanceCreate(ctx, &task.Instance{ID: inst, Org: "acme", Name: "raterace", CreatedAt: 1, Settings: task.DefaultSettings()}); err != nil {
		t.Fatal(err)
	}
	tx, err := other.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	var xid string
	if err := tx.QueryRow(ctx, `SELECT id FROM instances WHERE id = $1 FOR UPDATE`, inst).Scan(new(string)); err != nil {
		t.Fatal(err)
	}
	if err := tx.QueryRow(ctx, `SELECT pg_current_xact_id()::text`).Scan(&xid); err != nil {
		t.Fatal(err)
	}
	type result struct {
		g   store.APIRateTaken
		err error
	}
	done := make(chan result, 1)
	go func() {
		g, err := s.APIRateTake(ctx, &store.APIRateParams{InstanceID: inst, Want: 1, Rate: 2, Burst: 5, Now: 1})
		done <- result{g, err}
	}()
	// The grant waits for the delete's transaction.
	awaitWaiting(t, other, "the grant", done, `SELECT EXISTS (SELECT FROM pg_locks
		WHERE locktype = 'transactionid' AND NOT granted AND transactionid::text = $1)`, xid)
	for _, stmt := range []string{`DELETE FROM api_rate WHERE instance_id = $1`, `DELETE FROM instances WHERE id = $1`} {
		if _, err := tx.Exec(ctx, stmt, inst); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if r := <-done; !task.IsCode(r.err, task.CodeNotFound) || r.g.Took != 0 {
		t.Fatalf("the grant after the delete: took %d, %v; want NOT_FOUND", r.g.Took, r.err)
	}
	var n int
	if err := other.QueryRow(ctx, `SELECT count(*) FROM api_rate WHERE instance_id = $1`, inst).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("%d bucket rows outlived the instance", n)
	}
}
