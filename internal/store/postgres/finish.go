package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// finishSpec are the columns of one fenced write, as sqlFinish's arrays
// carry them: the task's key, the fence (the lease it held and the time
// it must still be live at, store.FinishParams.LiveAfter), the columns
// the lifecycle methods change, and its attempt history as a count and a
// last element.
var finishSpec = []string{
	"instance_id text", "id text", "fence text", "live_at int8", "state text", "attempt int4", "max_attempts int4",
	"run_at int8", "started_at int8", "deadline_at int8", "finished_at int8", "lease_id text",
	"lease_expires_at int8", "last_error text", "result bytea", "n_attempts int4", "last_attempt text",
	"chain bool", // store.ChainState: the write ends the task as task rules watch for
}

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
	attempts = CASE jsonb_array_length(t.attempts)
		WHEN c.n_attempts THEN t.attempts
		WHEN c.n_attempts - 1 THEN t.attempts || NULLIF(c.last_attempt, '')::jsonb
	END
	FROM ` + unnestSQL(1, "c", finishSpec) + `
	WHERE t.instance_id = c.instance_id AND t.id = c.id AND t.state = (SELECT 'RUNNING') AND t.lease_id = c.fence
	AND t.lease_expires_at > c.live_at
	RETURNING c.ord, c.chain, t.instance_id, t.id, t.queue, t.state, t.finished_at, t.lease_id
), ev AS (` + sqlChainEvents + `)
SELECT ord FROM u`

// finishRows holds one round of fenced writes column by column.
type finishRows struct {
	instanceID, id, fence, state, leaseID, lastError, lastAttempt []string
	attempt, maxAttempts, nAttempts                               []int32
	liveAt, runAt, startedAt, deadlineAt, finishedAt              []int64
	leaseExpiresAt                                                []int64
	result                                                        [][]byte
	chain                                                         []bool
}

// add appends the write of p.
func (r *finishRows) add(p *store.FinishParams) error {
	t := p.Task
	last, err := attemptJSON(t.Attempts)
	if err != nil {
		return err
	}
	r.instanceID = append(r.instanceID, t.InstanceID)
	r.id = append(r.id, t.ID)
	r.fence = append(r.fence, p.LeaseID)
	r.liveAt = append(r.liveAt, p.LiveAfter())
	r.state = append(r.state, string(t.State))
	r.attempt = append(r.attempt, int32(t.Attempt))
	r.maxAttempts = append(r.maxAttempts, int32(t.MaxAttempts))
	r.runAt = append(r.runAt, t.RunAt)
	r.startedAt = append(r.startedAt, t.StartedAt)
	r.deadlineAt = append(r.deadlineAt, t.DeadlineAt)
	r.finishedAt = append(r.finishedAt, t.FinishedAt)
	r.leaseID = append(r.leaseID, t.LeaseID)
	r.leaseExpiresAt = append(r.leaseExpiresAt, t.LeaseExpiresAt)
	r.lastError = append(r.lastError, t.LastError)
	r.result = append(r.result, nullBytes(t.Result))
	r.nAttempts = append(r.nAttempts, int32(len(t.Attempts)))
	r.lastAttempt = append(r.lastAttempt, last)
	r.chain = append(r.chain, store.ChainState(t.State))
	return nil
}

// args returns the arrays in finishSpec's order.
func (r *finishRows) args() []any {
	return []any{r.instanceID, r.id, r.fence, r.liveAt, r.state, r.attempt, r.maxAttempts, r.runAt, r.startedAt,
		r.deadlineAt, r.finishedAt, r.leaseID, r.leaseExpiresAt, r.lastError, r.result, r.nAttempts, r.lastAttempt, r.chain}
}

// batcher is a pool or a transaction.
type batcher interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// TaskFinish stores attempts' outcomes in one transaction, each fenced by
// its lease: a row that is no longer RUNNING under p.LeaseID, or whose
// lease expires at or before a p.LiveAt set, is left as it is and answers
// LEASE_LOST (or, its task purged, is removed: store.FinishPurged). The writes go out as one set-based UPDATE per
// round (a task that appears twice in ps is written in order, in a later
// round), every round in one pipelined batch: one round trip, one
// transaction. With dead-letter copies to add, the rounds and the copies
// share it; a copy is added only with a write that applied, and only while
// its queue exists.
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
	rounds := store.FinishRounds(ps)
	b := &pgx.Batch{}
	if !dead {
		b.Queue(`BEGIN`)
	}
	b.Queue(`SET LOCAL enable_hashjoin = off`)
	b.Queue(`SET LOCAL enable_mergejoin = off`)
	for _, round := range rounds {
		var r finishRows
		for _, i := range round {
			if err := r.add(ps[i]); err != nil {
				return nil, err
			}
		}
		b.Queue(sqlFinish, r.args()...)
	}
	var applied [][]bool
	var err error
	if !dead {
		b.Queue(`COMMIT`)
		applied, err = finishBatch(ctx, s.pool, b, rounds, 3, 1)
	} else {
		err = s.inTx(ctx, func(tx pgx.Tx) error {
			if applied, err = finishBatch(ctx, tx, b, rounds, 2, 0); err != nil {
				return err
			}
			return s.addDeadLetters(ctx, tx, ps, rounds, applied)
		})
	}
	if err != nil {
		return nil, err
	}
	for r, round := range rounds {
		for j, i := range round {
			if !applied[r][j] {
				res[i] = task.Errorf(task.CodeLeaseLost, "the lease is no longer held: it expired, was released, or the task was finished or leased again")
			}
		}
	}
	return res, nil
}

// finishBatch sends the rounds' UPDATEs, between lead statements before
// them and tail statements after them (the transaction's), and reports, per
// round and entry, whether the write applied. A batch that fails inside its
// own BEGIN leaves its connection in the failed transaction, and the pool
// then drops that connection rather than hand it out again.
func finishBatch(ctx context.Context, db batcher, b *pgx.Batch, rounds [][]int, lead, tail int) ([][]bool, error) {
	br := db.SendBatch(ctx, b)
	defer br.Close()
	for range lead {
		if _, err := br.Exec(); err != nil {
			return nil, interpretError(err)
		}
	}
	applied := make([][]bool, len(rounds))
	for r, round := range rounds {
		applied[r] = make([]bool, len(round))
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
			if ord < 1 || int(ord) > len(round) {
				rows.Close()
				return nil, task.Errorf(task.CodeInternal, "store: finish answered for entry %d of %d", ord, len(round))
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
func (s *Store) addDeadLetters(ctx context.Context, tx pgx.Tx, ps []*store.FinishParams, rounds [][]int, applied [][]bool) error {
	var dead []*task.Task
	for r, round := range rounds {
		for j, i := range round {
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
