package postgres

import (
	"context"
	"fmt"
	"hash/fnv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// claimSpec are the columns task.Claim changes, as sqlClaimSet's arrays
// carry them, after each row's key and its ctid (the row version the claim
// locked: see sqlClaimSet).
var claimSpec = []string{
	"row_ctid tid", "instance_id text", "id text", "state text", "attempt int4", "max_attempts int4",
	"started_at int8", "deadline_at int8", "lease_id text", "lease_expires_at int8",
}

var (
	// sqlClaimDue takes the first due tasks of one queue in claim order
	// (claimDueSQL) and locks them; rows another claimer holds are skipped,
	// not waited for, so concurrent claimers share a queue without blocking
	// and never get the same task.
	//
	// The row limit is $4 narrowed by the limits the claim keeps ($5 the
	// queue's cap on RUNNING tasks, $6 the instance's cap on RUNNING push
	// tasks, $7 and $8 the queue's rate and burst; 0 for none). The counts
	// and the bucket are read by this statement, which runs after the
	// claim's advisory locks are held: its snapshot sees every claim that
	// held them before. The bucket's refill is store.Refill, written in
	// SQL with the same floating-point steps (TestRefillParity).
	sqlClaimDue = claimDueSQL(routeSQL(9), sqlClaimLimit)
	// sqlClaimDueInRoom is sqlClaimDue for an add's claim, limited by the
	// room sqlClaimRoom read just before it in the same transaction, under
	// the same locks, rather than by counting the RUNNING rows again (a
	// count that reads up to the instance's cap of them): a finish
	// committed between the two statements only leaves more room than it
	// uses. Without the setting (no room read in this transaction) it
	// takes nothing. Its route parameters are $4–$7.
	sqlClaimDueInRoom = claimDueSQL(routeSQL(4),
		`coalesce(nullif(current_setting('`+claimRoomSetting+`', true), ''), '0')::bigint`)
	// sqlClaimLimit is how many tasks a claim may take ($1–$8 as in
	// sqlClaimDue): none while the queue's row says it is paused (or is
	// gone), whatever the caller's copy of the queue says: a pause answered
	// on one node holds on every node from then on, not from when each
	// one's cached queue learns of it.
	sqlClaimLimit = `greatest(0, least($4::bigint,
			CASE WHEN coalesce((SELECT q.paused FROM queues AS q WHERE q.instance_id = $1 AND q.name = $2), true) THEN 0 END,
			CASE WHEN $5::bigint > 0 THEN $5 - (SELECT count(*) FROM (
				SELECT FROM tasks WHERE instance_id = $1 AND queue = $2 AND state = 'RUNNING' LIMIT $5) AS r)
			END,
			CASE WHEN $6::bigint > 0 THEN $6 - (SELECT count(*) FROM queues AS q CROSS JOIN LATERAL (
				SELECT FROM tasks AS t
				WHERE t.instance_id = q.instance_id AND t.queue = q.name AND t.state = 'RUNNING' LIMIT $6) AS r
				WHERE q.instance_id = $1 AND q.mode = 'push')
			END,
			CASE WHEN $7::float8 > 0 THEN (SELECT floor(` + sqlRefill + `)::bigint
				FROM queues AS q WHERE q.instance_id = $1 AND q.name = $2)
			END))`
	// sqlClaimRoom reads sqlClaimLimit itself, under the claim's locks:
	// how many tasks an add's claim may take, of the queue's due tasks and
	// of those it adds (TaskAddClaim). It keeps the figure for the rest of
	// the transaction in claimRoomSetting, where sqlClaimDueInRoom, sent in
	// the same round trip, reads it.
	//
	// A single task's add does not wait for the claim's locks
	// (sqlClaimTryLock): when one was not had, the room is 0 and the add
	// only adds.
	sqlClaimRoom = `SELECT set_config('` + claimRoomSetting + `', (CASE WHEN current_setting('` + claimBusySetting + `', true) = 'on'
		THEN 0 ELSE ` + sqlClaimLimit + ` END)::text, true)::bigint`
	// sqlRefill is store.Refill of queue q's bucket at $3 (now), for rate
	// $7 and burst $8.
	sqlRefill = `CASE WHEN q.rate_tokens < 0 THEN greatest($8::int, 1)::float8
		ELSE least(q.rate_tokens + CASE WHEN $3 > q.rate_at THEN ($3 - q.rate_at)::float8 / 1000 * $7 ELSE 0 END,
			greatest($8::int, 1)::float8) END`
	// sqlClaimLock serializes the claims that keep a limit: per instance
	// for its cap, per queue for the queue's cap and bucket. An advisory
	// lock is held in memory only (no row is written to hold it) and ends
	// with the transaction. The instance's is always taken first.
	sqlClaimLock = `SELECT pg_advisory_xact_lock($1)`
	// sqlClaimTryLock is sqlClaimLock for the claim of a single task's
	// add, which does not wait: it tries the lock only while the ones
	// before it in the transaction were had, and records in
	// claimBusySetting that one was not, so that sqlClaimRoom reads no
	// room and the add only adds (the dispatcher, woken by an add that
	// claimed nothing, claims its tasks in a batch). An add that waited
	// for another claim's lock held it across its two round trips and its
	// commit: three nodes' single adds queued behind each other for ~6 ms
	// a task (BENCHMARKS.md, the forty-eighth session). CASE tries its
	// branches in order.
	//
	// A batch's add waits for the locks (sqlClaimLock), as the
	// dispatcher's claims do: its claim saves a row version for each task
	// it takes, and the wait paces its caller. Batches that gave way sent
	// nearly every task of the steady window over HTTP (adds of 100 beside
	// a busy dispatcher) through the dispatcher's claim instead, three row
	// versions rather than two: 10% fewer tasks a second at twice the
	// latency (BENCHMARKS.md, the forty-ninth session).
	sqlClaimTryLock = `SELECT CASE WHEN current_setting('` + claimBusySetting + `', true) = 'on' THEN NULL
		WHEN pg_try_advisory_xact_lock($1) THEN NULL
		ELSE set_config('` + claimBusySetting + `', 'on', true) END`
	// sqlClaimAny asks whether a claim would find anything due: it takes
	// the queue's earliest waiting task from tasks_due (in run_at order, so
	// a backlog of future tasks is never read) and compares its run_at.
	// Written as EXISTS over the filter, the planner took a sequential
	// scan expecting a due row early: with a million future tasks ahead of
	// the due ones it read them all on every dispatcher pass.
	//
	// Under a route filter (store.RouteFilter) the earliest waiting task may
	// be one this node cannot take: the filter is then applied to the due
	// tasks instead, and a claim runs only if one of them passes it.
	sqlClaimAny = `SELECT coalesce((SELECT run_at <= $3 FROM tasks
		WHERE instance_id = $1 AND queue = $2 AND state IN ('PENDING', 'RETRY_WAIT')
		ORDER BY run_at LIMIT 1), false)`
	sqlClaimAnyRouted = `SELECT coalesce((SELECT true FROM tasks
		WHERE instance_id = $1 AND queue = $2 AND state IN ('PENDING', 'RETRY_WAIT') AND run_at <= $3
		AND ` + routeSQL(4) + `
		ORDER BY run_at LIMIT 1), false)`
	// sqlBucketGet reads the queue's bucket, under the queue's lock.
	sqlBucketGet = `SELECT rate_tokens, rate_at FROM queues WHERE instance_id = $1 AND name = $2`
	// sqlBucketSet stores what the claim left in the bucket.
	sqlBucketSet = `UPDATE queues SET rate_tokens = $3, rate_at = $4 WHERE instance_id = $1 AND name = $2`
	// sqlClaimSet stores what task.Claim made of the locked rows, all of
	// them in one statement. Each row is found by the ctid sqlClaimDue read
	// (a TID scan: no index is searched), which cannot change before the
	// claim commits: the claim holds the row's lock, so no one else updates
	// or deletes it, and vacuum never moves a live row. The key and the
	// state are checked too, and a row that did not match would fail the
	// claim (claimCommit counts the rows written).
	sqlClaimSet = `UPDATE tasks AS t SET state = c.state, attempt = c.attempt, max_attempts = c.max_attempts,
		started_at = c.started_at, deadline_at = c.deadline_at, lease_id = c.lease_id,
		lease_expires_at = c.lease_expires_at
		FROM ` + unnestSQL(1, "c", claimSpec) + `
		WHERE t.ctid = c.row_ctid AND t.instance_id = c.instance_id AND t.id = c.id
		AND t.state = ANY ((SELECT '{PENDING,RETRY_WAIT}'::text[])::text[])`
	// sqlClaimSetAlike is sqlClaimSet for a claim whose tasks task.Claim
	// left alike but for their key, attempt and lease (claimAlike): the
	// columns they share travel once, as $5–$10, rather than as an array
	// each (4 arrays against 10, less to encode and read inside the
	// claim's locks).
	sqlClaimSetAlike = `UPDATE tasks AS t SET state = $6, attempt = c.attempt, max_attempts = $7,
		started_at = $8, deadline_at = $9, lease_id = c.lease_id, lease_expires_at = $10
		FROM ` + unnestSQL(1, "c", []string{"row_ctid tid", "id text", "attempt int4", "lease_id text"}) + `
		WHERE t.ctid = c.row_ctid AND t.instance_id = $5 AND t.id = c.id
		AND t.state = ANY ((SELECT '{PENDING,RETRY_WAIT}'::text[])::text[])`
)

// claimDueSQL is a locking read of one queue's first due tasks in claim
// order (task.ClaimOrder), passing route, at most limit of them: the
// prioritized ones from tasks_urgent (highest priority first, each in runAt
// order), then those of priority 0 from tasks_due in runAt order. limit is
// read once (lim); the outer LIMIT stops the second branch as soon as the
// first has filled it, so no row is locked that the claim does not return.
// A queue without prioritized tasks costs the first branch one probe of an
// empty index. The literal states and priorities let the planner prove the
// partial indexes' predicates in a generic plan too.
func claimDueSQL(route, limit string) string {
	head := `SELECT ` + cols("", taskCols) + `, ctid FROM tasks
		WHERE instance_id = $1 AND queue = $2 AND state IN ('PENDING', 'RETRY_WAIT') AND run_at <= $3 AND ` + route
	return `WITH lim AS MATERIALIZED (SELECT ` + limit + ` AS n)
	SELECT * FROM (` + head + ` AND priority > 0
		ORDER BY priority DESC, run_at, id LIMIT (SELECT n FROM lim) FOR UPDATE SKIP LOCKED) AS urgent
	UNION ALL
	SELECT * FROM (` + head + ` AND priority = 0
		ORDER BY run_at, id LIMIT (SELECT n FROM lim) FOR UPDATE SKIP LOCKED) AS due
	LIMIT (SELECT n FROM lim)`
}

// routeSQL is store.RouteFilter as a condition on a task row, with its
// four parameters (routeArgs) numbered from n.
func routeSQL(n int) string {
	return fmt.Sprintf(`($%d::bool OR created_at <= $%d::bigint OR CASE WHEN target IS NULL THEN $%d::bool
		ELSE coalesce(target->>'function', '') = '' OR target->>'function' = ANY ($%d::text[]) END)`, n, n+1, n+2, n+3)
}

// claimRoomSetting is the transaction-local setting in which an add's
// claim keeps its room (sqlClaimRoom, sqlClaimDueInRoom).
const claimRoomSetting = "errand.claim_room"

// claimBusySetting is the transaction-local setting that is "on" once an
// add's claim did not have one of its locks (sqlClaimTryLock).
const claimBusySetting = "errand.claim_busy"

// routeArgs are routeSQL's parameters for p.
func routeArgs(p *store.ClaimParams) []any {
	f := p.Route()
	return []any{f.All, f.ExpiredBefore, f.QueueOK, f.Served}
}

// byKey: the statements that reach tasks by their key (claim set, finish,
// heartbeat) check the row's state against a sub-select rather than a
// literal. With a literal the planner can prove a partial state index's
// predicate and may then find each row by walking the instance's part of
// that index (instance_id leads it) instead of seeking tasks_pkey: cheap
// while the index is small by its statistics, ruinous once it holds many
// entries, dead ones included, that a lookup walks for every row. A
// sub-select is not a constant, so no partial index can serve them: a
// lookup is tasks_pkey's, or, when the statistics say the table is small
// (stale ones after it grew), a hash join over a sequential scan — seen
// once in 200 finishes of a 100,000-task burn-down (a 48 ms scan); the
// statistics service's ANALYZE when the live rows double bounds how stale.

// claimLockKey is the advisory lock of an instance's claims (queue "") or
// of one queue's.
func claimLockKey(instanceID, queue string) int64 {
	h := fnv.New64a()
	h.Write([]byte("errand:claim:" + instanceID + "\x00" + queue))
	return int64(h.Sum64())
}

// TaskClaim claims up to p.Limit due tasks of p.Queue in claim order
// (task.ClaimOrder: priority, runAt, id) in one short transaction of two
// round trips: BEGIN, the advisory locks of the limits it keeps and the
// locking SELECT … FOR UPDATE SKIP LOCKED travel together; task.Claim
// then moves each task to RUNNING with a fresh lease from p.NewLeaseID, and
// the UPDATE that stores them (with the rate bucket) travels with the
// COMMIT. The tasks are returned with their payloads. A claim without
// limits (a pull lease) takes no advisory lock: claimers then share the
// queue through SKIP LOCKED alone.
func (s *Store) TaskClaim(ctx context.Context, p *store.ClaimParams) ([]*task.Task, error) {
	if p.Limit <= 0 {
		return []*task.Task{}, nil
	}
	if p.Queue == nil || p.NewLeaseID == nil {
		return nil, task.Errorf(task.CodeInternal, "store: TaskClaim needs a queue and NewLeaseID")
	}
	q := p.Queue
	// A queue with nothing due is answered by one read, without a
	// transaction or a lock: most passes of a dispatcher find most queues
	// idle.
	// A caller that has just seen a task due (p.Due) saves the round trip.
	due := p.Due
	if !due {
		anySQL, anyArgs := sqlClaimAny, []any{q.InstanceID, q.Name, p.Now}
		if p.Functions != nil {
			anySQL, anyArgs = sqlClaimAnyRouted, append(anyArgs, routeArgs(p)...)
		}
		if err := s.pool.QueryRow(ctx, anySQL, anyArgs...).Scan(&due); err != nil {
			return nil, interpretError(err)
		}
	}
	if !due {
		return []*task.Task{}, nil
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, interpretError(err)
	}
	defer conn.Release()

	b := &pgx.Batch{}
	b.Queue(`BEGIN`)
	// Every claim waits for its commit's WAL flush: a delivery may start
	// only once its claim is durable. A claim lost in a crash would leave
	// the task due again and its slot free while its delivery is still
	// open: a second delivery beside the first, as the same attempt.
	// The claim's statements run with their generic plans (the add's
	// reason, see insertGeneric): planning the locking read for its
	// values cost ~0.3 ms a claim, on the path from an add to its
	// delivery. Its generic plan reads tasks_due in order, as the custom
	// one does (TestQueryPlans checks both), once the table has planner
	// statistics (RefreshStats).
	b.Queue(`SET LOCAL plan_cache_mode = force_generic_plan`)
	locks := queueClaim(b, p)
	tasks, ctids, tokens, err := claimDue(conn.SendBatch(ctx, b), p, 2+locks)
	if err != nil {
		abort(ctx, conn)
		return nil, err
	}
	return claimSet(ctx, conn, p, tasks, ctids, tokens)
}

// queueClaim queues the statements of p's claim after its BEGIN and its
// setting: the advisory locks of the limits it keeps, the bucket's read
// when the queue has a rate, and the locking read of the due tasks
// (claimDue reads their results). It returns how many locks it queued.
func queueClaim(b *pgx.Batch, p *store.ClaimParams) int {
	return queueClaimWith(b, p, false, false)
}

// queueClaimWith is queueClaim, with the read of the claim's room
// (sqlClaimRoom) between the locks and the bucket when room is set, and
// the due tasks then read within that room (sqlClaimDueInRoom); with try
// set the locks are tried, not waited for (sqlClaimTryLock).
func queueClaimWith(b *pgx.Batch, p *store.ClaimParams, room, try bool) int {
	q := p.Queue
	locks := 0
	lock := sqlClaimLock
	if try {
		lock = sqlClaimTryLock
	}
	if p.InstanceMaxRunning > 0 {
		b.Queue(lock, claimLockKey(q.InstanceID, ""))
		locks++
	}
	if p.MaxRunning > 0 || p.Rate > 0 {
		b.Queue(lock, claimLockKey(q.InstanceID, q.Name))
		locks++
	}
	limits := []any{q.InstanceID, q.Name, p.Now, p.Limit, max(p.MaxRunning, 0), max(p.InstanceMaxRunning, 0),
		max(p.Rate, 0), p.Burst}
	if room {
		b.Queue(sqlClaimRoom, limits...)
	}
	if p.Rate > 0 {
		b.Queue(sqlBucketGet, q.InstanceID, q.Name)
	}
	if room {
		b.Queue(sqlClaimDueInRoom, append([]any{q.InstanceID, q.Name, p.Now}, routeArgs(p)...)...)
	} else {
		b.Queue(sqlClaimDue, append(limits, routeArgs(p)...)...)
	}
	return locks
}

// claimSet moves the locked tasks the claim keeps to RUNNING and stores
// them in the second round trip, which commits the claim's transaction
// (claimBatch, claimCommit). On an error the transaction is rolled back,
// if it is still open.
func claimSet(ctx context.Context, conn *pgxpool.Conn, p *store.ClaimParams, tasks []*task.Task, ctids []pgtype.TID, tokens float64) ([]*task.Task, error) {
	b, tasks, err := claimBatch(p, tasks, ctids, tokens)
	if err == nil {
		err = claimCommit(conn.SendBatch(ctx, b), len(tasks), p.Rate > 0)
	}
	if err != nil {
		abort(ctx, conn)
		return nil, err
	}
	return tasks, nil
}

// claimBatch is the second round trip of a claim: task.Claim moves each
// locked task the claim keeps to RUNNING with a fresh lease, and the batch
// stores them, with the bucket when the queue has a rate, and commits;
// with no task to keep, it only commits. It returns the tasks kept.
func claimBatch(p *store.ClaimParams, tasks []*task.Task, ctids []pgtype.TID, tokens float64) (*pgx.Batch, []*task.Task, error) {
	q := p.Queue
	tasks, ctids = store.KeepWith(p, tasks, ctids)
	b := &pgx.Batch{}
	if len(tasks) == 0 {
		b.Queue(`COMMIT`)
		return b, tasks, nil
	}
	if err := queueClaimSet(b, p, tasks, ctids); err != nil {
		return nil, nil, err
	}
	if p.Rate > 0 {
		b.Queue(sqlBucketSet, q.InstanceID, q.Name, tokens-float64(len(tasks)), p.Now)
	}
	b.Queue(`COMMIT`)
	return b, tasks, nil
}

// queueClaimSet moves tasks, locked rows found by ctids, to RUNNING with
// task.Claim and a fresh lease each, and queues the UPDATE that stores
// them.
func queueClaimSet(b *pgx.Batch, p *store.ClaimParams, tasks []*task.Task, ctids []pgtype.TID) error {
	q := p.Queue
	var set struct {
		instanceID, id, state, leaseID        []string
		attempt, maxAttempts                  []int32
		startedAt, deadlineAt, leaseExpiresAt []int64
	}
	for _, t := range tasks {
		if err := t.Claim(q, p.Now, p.NewLeaseID(), p.LeaseMs); err != nil {
			return err
		}
		set.instanceID = append(set.instanceID, t.InstanceID)
		set.id = append(set.id, t.ID)
		set.state = append(set.state, string(t.State))
		set.attempt = append(set.attempt, int32(t.Attempt))
		set.maxAttempts = append(set.maxAttempts, int32(t.MaxAttempts))
		set.startedAt = append(set.startedAt, t.StartedAt)
		set.deadlineAt = append(set.deadlineAt, t.DeadlineAt)
		set.leaseID = append(set.leaseID, t.LeaseID)
		set.leaseExpiresAt = append(set.leaseExpiresAt, t.LeaseExpiresAt)
	}
	if t := tasks[0]; claimAlike(tasks) {
		b.Queue(sqlClaimSetAlike, ctids, set.id, set.attempt, set.leaseID,
			t.InstanceID, string(t.State), int32(t.MaxAttempts), t.StartedAt, t.DeadlineAt, t.LeaseExpiresAt)
		return nil
	}
	b.Queue(sqlClaimSet, ctids, set.instanceID, set.id, set.state, set.attempt, set.maxAttempts, set.startedAt,
		set.deadlineAt, set.leaseID, set.leaseExpiresAt)
	return nil
}

// claimAlike reports whether tasks, as task.Claim left them, share every
// column sqlClaimSetAlike writes once: the instance, state, budget, start,
// deadline and lease expiry (a claim's usual tasks: one queue's, claimed
// at one time; a task with a deadline of its own differs).
func claimAlike(tasks []*task.Task) bool {
	a := tasks[0]
	for _, t := range tasks[1:] {
		if t.InstanceID != a.InstanceID || t.State != a.State || t.MaxAttempts != a.MaxAttempts || t.StartedAt != a.StartedAt ||
			t.DeadlineAt != a.DeadlineAt || t.LeaseExpiresAt != a.LeaseExpiresAt {
			return false
		}
	}
	return true
}

// errRolledBack is a claim's error when its COMMIT was answered ROLLBACK:
// an earlier statement of its transaction failed, and nothing of it was
// kept.
var errRolledBack = task.Errorf(task.CodeUnavailable, "store: the claim was rolled back")

// claimDue reads the results of a claim's first batch: execs statements
// (the BEGIN, the setting, the locks: queueClaim), the bucket when p's
// queue has a rate (refilled to p.Now), and the locked rows, each with its
// ctid.
func claimDue(br pgx.BatchResults, p *store.ClaimParams, execs int) ([]*task.Task, []pgtype.TID, float64, error) {
	defer br.Close()
	for range execs {
		if _, err := br.Exec(); err != nil {
			return nil, nil, 0, interpretError(err)
		}
	}
	return claimRows(br, p)
}

// claimRows reads the bucket, when p's queue has a rate, and the locked
// rows of a claim's first batch; br is at the bucket's read.
func claimRows(br pgx.BatchResults, p *store.ClaimParams) ([]*task.Task, []pgtype.TID, float64, error) {
	var tokens float64 // the bucket at p.Now
	bucket := func(row pgx.Row) error {
		var at int64
		if err := row.Scan(&tokens, &at); err != nil {
			return interpretError(err)
		}
		tokens = store.Refill(tokens, at, p.Now, p.Rate, p.Burst)
		return nil
	}
	rate := p.Rate > 0
	rows, err := br.Query()
	if err != nil {
		return nil, nil, 0, interpretError(err)
	}
	if rate {
		if !rows.Next() {
			if err := rowsErr(rows); err != nil {
				return nil, nil, 0, err
			}
			return []*task.Task{}, nil, 0, nil // the queue is gone
		}
		if err := bucket(rows); err != nil {
			rows.Close()
			return nil, nil, 0, err
		}
		if err := rowsErr(rows); err != nil {
			return nil, nil, 0, err
		}
		if rows, err = br.Query(); err != nil {
			return nil, nil, 0, interpretError(err)
		}
	}
	var ctids []pgtype.TID
	tasks := []*task.Task{}
	var size store.ClaimSize
	for rows.Next() {
		if size.Past(p) {
			continue // Keep would not take it: its row is not decoded
		}
		var ctid pgtype.TID
		t, err := store.ScanTask(store.ScanWith{Scanner: rows, Extra: &ctid}, true)
		if err != nil {
			rows.Close()
			return nil, nil, 0, interpretError(err)
		}
		tasks, ctids = append(tasks, t), append(ctids, ctid)
		size.Add(t)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, nil, 0, interpretError(err)
	}
	if err := br.Close(); err != nil {
		return nil, nil, 0, interpretError(err)
	}
	return tasks, ctids, tokens, nil
}

// claimCommit reads the results of claimBatch's batch for n tasks: the
// UPDATE and the bucket's (when rate) if n > 0, then the COMMIT, answered
// ROLLBACK (errRolledBack) if a statement of the transaction failed.
func claimCommit(br pgx.BatchResults, n int, rate bool) error {
	defer br.Close()
	if n > 0 {
		tag, err := br.Exec()
		if err != nil {
			return interpretError(err)
		}
		if tag.RowsAffected() != int64(n) {
			return task.Errorf(task.CodeInternal, "store: claimed %d tasks but wrote %d", n, tag.RowsAffected())
		}
		if rate {
			if _, err := br.Exec(); err != nil {
				return interpretError(err)
			}
		}
	}
	tag, err := br.Exec()
	if err != nil {
		return interpretError(err)
	}
	if tag.String() != "COMMIT" {
		return errRolledBack
	}
	return interpretError(br.Close())
}

// abort rolls back the transaction a pipelined BEGIN left open on conn,
// even when ctx is done. A connection that cannot roll back (broken, or
// still busy) is dropped by the pool on release, and the server ends the
// transaction with it.
func abort(ctx context.Context, conn *pgxpool.Conn) {
	pc := conn.Conn().PgConn()
	if pc.IsClosed() || pc.IsBusy() || pc.TxStatus() == 'I' {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
	defer cancel()
	_, _ = conn.Exec(rctx, `ROLLBACK`)
}
