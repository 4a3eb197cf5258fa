package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// successSpec are the columns of a success's fenced write, as
// sqlFinishSuccess's arrays carry them: the task's key, the fence (the
// lease it held and the time it must still be live at,
// store.FinishParams.LiveAfter), the columns a success sets that differ
// from one success to the next, and its attempt history as a count and a
// last element.
var successSpec = []string{
	"instance_id text", "id text", "fence text", "live_at int8", "finished_at int8", "result bytea",
	"n_attempts int4", "last_attempt text",
}

// finishSpec are the columns of any fenced write, as sqlFinish's arrays
// carry them: successSpec's, then the other columns the lifecycle methods
// change.
var finishSpec = append(successSpec[:len(successSpec):len(successSpec)],
	"state text", "attempt int4", "max_attempts int4", "run_at int8", "started_at int8", "deadline_at int8",
	"lease_id text", "lease_expires_at int8", "last_error text",
	"chain bool", // store.ChainState: the write ends the task as task rules watch for
)

// finishAttempts and finishFence are sqlFinish's and sqlFinishSuccess's
// appended attempt history and fence, over entries c of successSpec's
// columns.
const (
	finishAttempts = `CASE jsonb_array_length(t.attempts)
		WHEN c.n_attempts THEN t.attempts
		WHEN c.n_attempts - 1 THEN t.attempts || NULLIF(c.last_attempt, '')::jsonb
	END`
	finishFence = `WHERE t.instance_id = c.instance_id AND t.id = c.id AND t.state = (SELECT 'RUNNING') AND t.lease_id = c.fence
	AND t.lease_expires_at > c.live_at`
)

// sqlFinish stores the outcome of a set of attempts, each fenced: a row
// changes only while it is RUNNING under the lease its entry carries and
// that lease expires after the entry's live_at, and
// RETURNING names the entries that applied. Each row is found by its key
// (see byKey in claim.go). The attempt history is appended
// in the same UPDATE: under a held lease the stored history is the one the
// task was claimed with, and task.Finish adds one attempt (task.Extend
// none), so the entry's last attempt is appended when the entry carries one
// more than the row. Any other difference leaves attempts NULL, which the
// column refuses: the whole call fails rather than store a history that
// does not follow.
//
// The same statement writes the chain events of the rows it finished
// (sqlChainEvents), so that only a write that applied counts, without a
// second statement that finds the rows again.
var sqlFinish = `WITH u AS (
	UPDATE tasks AS t SET state = c.state, attempt = c.attempt, max_attempts = c.max_attempts,
	run_at = c.run_at, started_at = c.started_at, deadline_at = c.deadline_at, finished_at = c.finished_at,
	lease_id = c.lease_id, lease_expires_at = c.lease_expires_at, last_error = c.last_error, result = c.result,
	attempts = ` + finishAttempts + `
	FROM ` + unnestSQL(1, "c", finishSpec) + `
	` + finishFence + `
	RETURNING c.ord, c.chain, t.instance_id, t.id, t.queue, t.state, t.finished_at, t.lease_id
), ev AS (` + sqlChainEvents + `)
SELECT ord FROM u`

// sqlFinishSuccess is sqlFinish for attempts that succeeded (a finish's
// usual entries), with the columns task.Finish sets alike for every
// success written as constants rather than sent as arrays: 8 arrays
// against sqlFinish's 18, less for the node to encode and for PostgreSQL
// to read. A success leaves attempt, max_attempts and run_at as the claim
// stored them under the lease it fences on, so it does not write them
// (successShape).
var sqlFinishSuccess = `WITH u AS (
	UPDATE tasks AS t SET state = 'SUCCEEDED', started_at = 0, deadline_at = 0, finished_at = c.finished_at,
	lease_id = '', lease_expires_at = 0, last_error = '', result = c.result,
	attempts = ` + finishAttempts + `
	FROM ` + unnestSQL(1, "c", successSpec) + `
	` + finishFence + `
	RETURNING c.ord, true AS chain, t.instance_id, t.id, t.queue, t.state, t.finished_at, t.lease_id
), ev AS (` + sqlChainEvents + `)
SELECT ord FROM u`

// successShape reports whether t is as task.Finish leaves a success: the
// columns sqlFinishSuccess writes as constants hold those constants.
func successShape(t *task.Task) bool {
	return t.State == task.Succeeded && t.StartedAt == 0 && t.DeadlineAt == 0 && t.LeaseID == "" &&
		t.LeaseExpiresAt == 0 && t.LastError == "" && len(t.Attempts) > 0
}

// successRows holds the writes of successes column by column (and the
// first columns of any write, finishRows).
type successRows struct {
	instanceID, id, fence, lastAttempt []string
	liveAt, finishedAt                 []int64
	result                             [][]byte
	nAttempts                          []int32
}

// add appends the successSpec columns of p's write.
func (r *successRows) add(p *store.FinishParams) {
	t := p.Task
	r.instanceID = append(r.instanceID, t.InstanceID)
	r.id = append(r.id, t.ID)
	r.fence = append(r.fence, p.LeaseID)
	r.liveAt = append(r.liveAt, p.LiveAfter())
	r.finishedAt = append(r.finishedAt, t.FinishedAt)
	r.result = append(r.result, nullBytes(t.Result))
	r.nAttempts = append(r.nAttempts, int32(len(t.Attempts)))
	r.lastAttempt = append(r.lastAttempt, attemptJSON(t.Attempts))
}

// args returns the arrays in successSpec's order.
func (r *successRows) args() []any {
	return []any{r.instanceID, r.id, r.fence, r.liveAt, r.finishedAt, r.result, r.nAttempts, r.lastAttempt}
}

// finishRows holds fenced writes of any outcome column by column.
type finishRows struct {
	successRows
	state, leaseID, lastError                    []string
	attempt, maxAttempts                         []int32
	runAt, startedAt, deadlineAt, leaseExpiresAt []int64
	chain                                        []bool
}

// add appends the write of p.
func (r *finishRows) add(p *store.FinishParams) {
	r.successRows.add(p)
	t := p.Task
	r.state = append(r.state, string(t.State))
	r.attempt = append(r.attempt, int32(t.Attempt))
	r.maxAttempts = append(r.maxAttempts, int32(t.MaxAttempts))
	r.runAt = append(r.runAt, t.RunAt)
	r.startedAt = append(r.startedAt, t.StartedAt)
	r.deadlineAt = append(r.deadlineAt, t.DeadlineAt)
	r.leaseID = append(r.leaseID, t.LeaseID)
	r.leaseExpiresAt = append(r.leaseExpiresAt, t.LeaseExpiresAt)
	r.lastError = append(r.lastError, t.LastError)
	r.chain = append(r.chain, store.ChainState(t.State))
}

// args returns the arrays in finishSpec's order.
func (r *finishRows) args() []any {
	return append(r.successRows.args(), r.state, r.attempt, r.maxAttempts, r.runAt, r.startedAt, r.deadlineAt,
		r.leaseID, r.leaseExpiresAt, r.lastError, r.chain)
}

// batcher is a pool or a transaction.
type batcher interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// TaskFinish stores attempts' outcomes in one transaction, each fenced by
// its lease: a row that is no longer RUNNING under p.LeaseID, or whose
// lease expires at or before a p.LiveAt set, is left as it is and answers
// LEASE_LOST (or, its task purged, is removed: store.FinishPurged). The
// writes go out as set-based UPDATEs (queueFinish: a task that appears
// twice in ps is written in order, in a later round), all in one
// pipelined batch: one round trip, one transaction. With dead-letter
// copies to add, the UPDATEs and the copies share it; a copy is added
// only with a write that applied, and only while its queue exists.
//
// The UPDATEs run without hash and merge joins, so that each entry's row
// is sought by tasks_pkey. A connection's first five executions of a
// prepared statement get custom plans, which see the arrays' length: for
// a finish of ~1,000 entries and statistics that count few RUNNING rows,
// the planner hashed a sequential scan of tasks instead — 14 of the
// finishes of a 100,000-task burn-down, at ~50 ms each against ~15 for
// the seeks. Forcing the generic plan (as the claim does) was worse: it
// is built once per connection, and one built while tasks was nearly
// empty scanned the whole table for every entry from then on (finishes of
// 300–500 ms in a steady window, p99 0.4–0.9 s).
func (s *Store) TaskFinish(ctx context.Context, ps []*store.FinishParams) ([]error, error) {
	return store.FinishPurged(ctx, ps, s.taskFinish, s.removePurged)
}

// taskFinish is TaskFinish's fenced writes.
func (s *Store) taskFinish(ctx context.Context, ps []*store.FinishParams) ([]error, error) {
	res := make([]error, len(ps))
	if len(ps) == 0 {
		return res, nil
	}
	dead := false
	for _, p := range ps {
		dead = dead || p.DeadLetter != nil
	}
	b := &pgx.Batch{}
	if !dead {
		b.Queue(`BEGIN`)
	}
	b.Queue(`SET LOCAL enable_hashjoin = off`)
	b.Queue(`SET LOCAL enable_mergejoin = off`)
	stmts := queueFinish(b, ps)
	var applied [][]bool
	var err error
	if !dead {
		b.Queue(`COMMIT`)
		applied, err = finishBatch(ctx, s.pool, b, stmts, 3, 1)
	} else {
		err = s.inTx(ctx, func(tx pgx.Tx) error {
			if applied, err = finishBatch(ctx, tx, b, stmts, 2, 0); err != nil {
				return err
			}
			return s.addDeadLetters(ctx, tx, ps, stmts, applied)
		})
	}
	if err != nil {
		return nil, err
	}
	for r, stmt := range stmts {
		for j, i := range stmt {
			if !applied[r][j] {
				res[i] = task.Errorf(task.CodeLeaseLost, "the lease is no longer held: it expired, was released, or the task was finished or leased again")
			}
		}
	}
	return res, nil
}

// queueFinish queues the UPDATEs of ps on b and returns the entries of
// each, in order: per round of store.FinishRounds, one sqlFinishSuccess
// of its successes and one sqlFinish of the rest, each only when it has
// entries.
func queueFinish(b *pgx.Batch, ps []*store.FinishParams) [][]int {
	var stmts [][]int
	for _, round := range store.FinishRounds(ps) {
		var ok successRows
		var other finishRows
		var okAt, otherAt []int
		for _, i := range round {
			if successShape(ps[i].Task) {
				okAt = append(okAt, i)
				ok.add(ps[i])
			} else {
				otherAt = append(otherAt, i)
				other.add(ps[i])
			}
		}
		if len(okAt) > 0 {
			b.Queue(sqlFinishSuccess, ok.args()...)
			stmts = append(stmts, okAt)
		}
		if len(otherAt) > 0 {
			b.Queue(sqlFinish, other.args()...)
			stmts = append(stmts, otherAt)
		}
	}
	return stmts
}

// finishBatch sends the UPDATEs queued for stmts, between lead statements
// before them and tail statements after them (the transaction's), and
// reports, per statement and entry, whether the write applied. A batch that fails inside its
// own BEGIN leaves its connection in the failed transaction, and the pool
// then drops that connection rather than hand it out again.
func finishBatch(ctx context.Context, db batcher, b *pgx.Batch, stmts [][]int, lead, tail int) ([][]bool, error) {
	br := db.SendBatch(ctx, b)
	defer br.Close()
	for range lead {
		if _, err := br.Exec(); err != nil {
			return nil, interpretError(err)
		}
	}
	applied := make([][]bool, len(stmts))
	for r, stmt := range stmts {
		applied[r] = make([]bool, len(stmt))
		rows, err := br.Query()
		if err != nil {
			return nil, interpretError(err)
		}
		for rows.Next() {
			var ord int64
			if err := rows.Scan(&ord); err != nil {
				rows.Close()
				return nil, interpretError(err)
			}
			if ord < 1 || int(ord) > len(stmt) {
				rows.Close()
				return nil, task.Errorf(task.CodeInternal, "store: finish answered for entry %d of %d", ord, len(stmt))
			}
			applied[r][ord-1] = true
		}
		if err := rowsErr(rows); err != nil {
			return nil, err
		}
	}
	for range tail {
		if _, err := br.Exec(); err != nil {
			return nil, interpretError(err)
		}
	}
	if err := br.Close(); err != nil {
		return nil, interpretError(err)
	}
	return applied, nil
}

// addDeadLetters adds the dead-letter copies of the writes that applied.
// A copy whose queue is gone (deleted since the engine read its queue) is
// not kept, and logged.
func (s *Store) addDeadLetters(ctx context.Context, tx pgx.Tx, ps []*store.FinishParams, stmts [][]int, applied [][]bool) error {
	var dead []*task.Task
	for r, stmt := range stmts {
		for j, i := range stmt {
			if applied[r][j] && ps[i].DeadLetter != nil {
				dead = append(dead, ps[i].DeadLetter)
			}
		}
	}
	out, err := insertTasks(ctx, tx, dead, false)
	if err != nil {
		return err
	}
	for k, dl := range dead {
		switch {
		case !out[k].queueOK:
			s.log.Warn("dead-letter queue is gone; no copy kept", "instance", dl.InstanceID, "queue", dl.Queue, "task", dl.DeadLetterOf)
		case !out[k].stored:
			return task.Errorf(task.CodeInternal, "store: dead-letter copy %s: its id is taken", dl.ID)
		}
	}
	return nil
}

// sqlRemovePurged removes the tasks purged during their attempt that refs
// name, each still RUNNING under its purged lease (store.FinishPurged).
var sqlRemovePurged = `DELETE FROM tasks AS t USING ` + unnestSQL(1, "c", []string{"instance_id text", "id text", "lease_id text"}) + `
	WHERE t.instance_id = c.instance_id AND t.id = c.id AND t.state = (SELECT 'RUNNING') AND t.lease_id = c.lease_id
	RETURNING c.ord`

// removePurged removes the purged tasks refs name, in one statement, and
// reports which it removed.
func (s *Store) removePurged(ctx context.Context, refs []store.LeaseRef) ([]bool, error) {
	instanceIDs, ids, leases := leaseArrays(refs)
	rows, err := s.pool.Query(ctx, sqlRemovePurged, instanceIDs, ids, leases)
	if err != nil {
		return nil, interpretError(err)
	}
	gone := make([]bool, len(refs))
	for rows.Next() {
		var ord int64
		if err := rows.Scan(&ord); err != nil {
			rows.Close()
			return nil, interpretError(err)
		}
		if ord >= 1 && int(ord) <= len(refs) {
			gone[ord-1] = true
		}
	}
	return gone, rowsErr(rows)
}
