package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// queueCols are the queue columns, shared by every backend (store.QueueColumns).
var queueCols = cols("", store.QueueColumns)

var (
	qQueueInsert = `INSERT INTO queues (` + queueCols + `)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)`
	qQueueGet = `SELECT ` + queueCols + ` FROM queues WHERE instance_id = $1 AND name = $2`
	// qQueueLock locks a queue for a settings change: NO KEY UPDATE does
	// not wait for the key-share locks that adds take.
	qQueueLock = qQueueGet + ` FOR NO KEY UPDATE`
	// qQueueKeep holds a queue (the queue being purged) so that it cannot
	// be deleted before commit.
	qQueueKeep = `SELECT 1 FROM queues WHERE instance_id = $1 AND name = $2 FOR KEY SHARE`
	// qQueueKeepDLQ holds a queue named as a deadLetterQueue, as qQueueKeep
	// does, and reads its own deadLetterQueue, for the cycle check.
	qQueueKeepDLQ = `SELECT coalesce(dead_letter_queue, '') FROM queues WHERE instance_id = $1 AND name = $2 FOR KEY SHARE`
	// qInstanceKeep holds the instance a queue is created in likewise.
	qInstanceKeep = `SELECT 1 FROM instances WHERE id = $1 FOR KEY SHARE`
	qQueueList    = `SELECT ` + queueCols + ` FROM queues WHERE instance_id = $1 ORDER BY name`
	qQueueAll     = `SELECT ` + queueCols + ` FROM queues ORDER BY instance_id, name`
	qQueueUpdate  = `UPDATE queues SET target = $3, rate_per_second = $4, max_concurrent = $5,
		max_attempts = $6, min_backoff_seconds = $7, max_backoff_seconds = $8, max_doublings = $9,
		max_age_seconds = $10, deadline_seconds = $11, dead_letter_queue = $12, target_control = $13,
		paused = $14
		WHERE instance_id = $1 AND name = $2`
	// Deleting the queue row first waits for the adds in flight (they hold
	// a key-share lock on it) and turns away the later ones; the tasks are
	// deleted in the next statement, whose snapshot sees those adds.
	qQueueDelete = `DELETE FROM queues WHERE instance_id = $1 AND name = $2`
	// qQueuePurge reaches a queue's tasks through tasks_created, which
	// holds all but the RUNNING ones, and tasks_running, which holds those:
	// the two arms of the OR let the planner prove each partial index's
	// predicate.
	qQueuePurge = `DELETE FROM tasks WHERE instance_id = $1 AND queue = $2 AND (state <> 'RUNNING' OR state = 'RUNNING')`
	// qQueuePurgeWaiting is a purge's delete of a queue's tasks but the
	// RUNNING ones, through tasks_created.
	qQueuePurgeWaiting = `DELETE FROM tasks WHERE instance_id = $1 AND queue = $2 AND state <> 'RUNNING'`
	// qQueuePurgeRunning marks a queue's RUNNING tasks purged
	// (task.PurgedLease), through tasks_running; lease_id is in no index,
	// so the update may stay HOT.
	qQueuePurgeRunning = `UPDATE tasks SET lease_id = lease_id || '` + task.PurgedLeaseSuffix + `'
		WHERE instance_id = $1 AND queue = $2 AND state = 'RUNNING' AND lease_id NOT LIKE '%` + task.PurgedLeaseSuffix + `'`
	// A deleted queue is no longer anyone's dead-letter queue.
	qQueueUnlinkDLQ = `UPDATE queues SET dead_letter_queue = NULL WHERE instance_id = $1 AND dead_letter_queue = $2`
	// qQueueCounts counts each state through the partial index that holds
	// it (tasks_due, tasks_running, tasks_retry, tasks_done), each count
	// stopping at $3.
	// The literal state lets the planner prove the index's predicate even
	// in a generic plan.
	qQueueCounts = `SELECT
		(SELECT count(*) FROM (SELECT FROM tasks WHERE instance_id = $1 AND queue = $2 AND state = 'PENDING' LIMIT $3) AS x),
		(SELECT count(*) FROM (SELECT FROM tasks WHERE instance_id = $1 AND queue = $2 AND state = 'RUNNING' LIMIT $3) AS x),
		(SELECT count(*) FROM (SELECT FROM tasks WHERE instance_id = $1 AND queue = $2 AND state = 'RETRY_WAIT' LIMIT $3) AS x),
		(SELECT count(*) FROM (SELECT FROM tasks WHERE instance_id = $1 AND queue = $2 AND state = 'SUCCEEDED' LIMIT $3) AS x),
		(SELECT count(*) FROM (SELECT FROM tasks WHERE instance_id = $1 AND queue = $2 AND state = 'FAILED' LIMIT $3) AS x),
		(SELECT count(*) FROM (SELECT FROM tasks WHERE instance_id = $1 AND queue = $2 AND state = 'CANCELLED' LIMIT $3) AS x)`
)

// scanQueue reads one queue row of queueCols.
func scanQueue(row pgx.Row) (*task.Queue, error) {
	q, err := store.ScanQueue(row)
	return q, interpretError(err)
}

// scanQueues reads every row of a query's result and closes it.
func scanQueues(rows pgx.Rows, err error) ([]*task.Queue, error) {
	if err != nil {
		return nil, interpretError(err)
	}
	defer rows.Close()
	qs, err := store.ScanQueues(rows)
	return qs, interpretError(err)
}

// queueArgs returns the values of queueCols for q.
func queueArgs(q *task.Queue) ([]any, error) {
	target, err := jsonArg(q.Target)
	if err != nil {
		return nil, err
	}
	return []any{q.InstanceID, q.Name, string(q.Mode), target, q.RatePerSecond, q.MaxConcurrent,
		q.MaxAttempts, q.MinBackoffSeconds, q.MaxBackoffSeconds, q.MaxDoublings, q.MaxAgeSeconds, q.DeadlineSeconds,
		nullString(q.DeadLetterQueue), q.TargetControl, q.Paused, q.CreatedAt}, nil
}

// jsonArg encodes a target for a jsonb parameter, nil (NULL) for none.
func jsonArg(t *task.Target) (any, error) {
	s, err := targetJSON(t)
	if err != nil || s == "" {
		return nil, err
	}
	return s, nil
}

// nullString passes "" as NULL.
func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// keep locks a row with qInstanceKeep or qQueueKeep and reports whether it
// exists.
func keep(ctx context.Context, tx pgx.Tx, q string, args ...any) (bool, error) {
	rows, err := tx.Query(ctx, q, args...)
	if err != nil {
		return false, interpretError(err)
	}
	found := rows.Next()
	if err := rowsErr(rows); err != nil {
		return false, err
	}
	return found, nil
}

// checkDeadLetter refuses a deadLetterQueue that is not a queue of the same
// instance, or that leads back to q, and holds the queues it reads until
// commit so that they cannot vanish meanwhile.
func checkDeadLetter(ctx context.Context, tx pgx.Tx, q *task.Queue) error {
	return store.CheckDeadLetter(q, func(name string) (string, bool, error) {
		var dlq string
		err := tx.QueryRow(ctx, qQueueKeepDLQ, q.InstanceID, name).Scan(&dlq)
		if errors.Is(err, pgx.ErrNoRows) {
			return "", false, nil
		}
		if err != nil {
			return "", false, interpretError(err)
		}
		return dlq, true, nil
	})
}

// QueueCreate stores a new queue: QUEUE_EXISTS if the name is taken,
// INVALID_ARGUMENT naming deadLetterQueue if that queue does not exist in
// the instance, NOT_FOUND if the instance does not exist.
func (s *Store) QueueCreate(ctx context.Context, q *task.Queue) error {
	args, err := queueArgs(q)
	if err != nil {
		return err
	}
	return s.inTx(ctx, func(tx pgx.Tx) error {
		ok, err := keep(ctx, tx, qInstanceKeep, q.InstanceID)
		if err != nil {
			return err
		}
		if !ok {
			return task.ErrNotFound
		}
		if err := checkDeadLetter(ctx, tx, q); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, qQueueInsert, args...)
		return interpretError(err)
	})
}

// QueueGet finds one queue.
func (s *Store) QueueGet(ctx context.Context, ref store.QueueRef) (*task.Queue, error) {
	instanceID, name := ref.InstanceID, ref.Name
	return scanQueue(s.pool.QueryRow(ctx, qQueueGet, instanceID, name))
}

// QueueList lists an instance's queues by name.
func (s *Store) QueueList(ctx context.Context, instanceID string) ([]*task.Queue, error) {
	return scanQueues(s.pool.Query(ctx, qQueueList, instanceID))
}

// QueueListAll lists every queue of every instance, by instance and name.
func (s *Store) QueueListAll(ctx context.Context) ([]*task.Queue, error) {
	return scanQueues(s.pool.Query(ctx, qQueueAll))
}

// QueueUpdate locks the queue's row, applies fn and stores its settings,
// refusing a deadLetterQueue that does not exist. The instance, name, mode
// and creation time stay.
func (s *Store) QueueUpdate(ctx context.Context, ref store.QueueRef, fn func(*task.Queue) error) (*task.Queue, error) {
	instanceID, name := ref.InstanceID, ref.Name
	var out *task.Queue
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		q, err := scanQueue(tx.QueryRow(ctx, qQueueLock, instanceID, name))
		if err != nil {
			return err
		}
		mode, created := q.Mode, q.CreatedAt
		if err := fn(q); err != nil {
			return err
		}
		q.InstanceID, q.Name, q.Mode, q.CreatedAt = instanceID, name, mode, created
		if err := checkDeadLetter(ctx, tx, q); err != nil {
			return err
		}
		args, err := queueArgs(q)
		if err != nil {
			return err
		}
		// queueArgs without mode and created_at, in qQueueUpdate's order.
		args = append(args[:2:2], args[3:15]...)
		if _, err := tx.Exec(ctx, qQueueUpdate, args...); err != nil {
			return interpretError(err)
		}
		out = q
		return nil
	})
	return out, err
}

// QueueDelete removes a queue and all its tasks, and clears it as the
// dead-letter queue of the instance's other queues, in one transaction
// whose statements may run for up to bulkStatementTimeout. It returns how
// many tasks went with it.
func (s *Store) QueueDelete(ctx context.Context, ref store.QueueRef) (int, error) {
	instanceID, name := ref.InstanceID, ref.Name
	var n int
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, qQueueDelete, instanceID, name)
		if err != nil {
			return interpretError(err)
		}
		if tag.RowsAffected() == 0 {
			return task.ErrNotFound
		}
		if err := bulk(ctx, tx); err != nil {
			return err
		}
		b := &pgx.Batch{}
		b.Queue(qQueuePurge, instanceID, name).Exec(func(tag pgconn.CommandTag) error {
			n = int(tag.RowsAffected())
			return nil
		})
		b.Queue(qQueueUnlinkDLQ, instanceID, name)
		return interpretError(tx.SendBatch(ctx, b).Close())
	})
	return n, err
}

// QueuePurge removes every task of a queue and returns how many; a task
// whose attempt is in flight is marked purged, and removed when the
// attempt ends (store.Store.QueuePurge). Its statements may run for up to
// bulkStatementTimeout. The queue is held
// (key share) so that it cannot be deleted meanwhile; adds go on.
func (s *Store) QueuePurge(ctx context.Context, ref store.QueueRef) (int, error) {
	instanceID, name := ref.InstanceID, ref.Name
	var n int
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		ok, err := keep(ctx, tx, qQueueKeep, instanceID, name)
		if err != nil {
			return err
		}
		if !ok {
			return task.ErrNotFound
		}
		if err := bulk(ctx, tx); err != nil {
			return err
		}
		// Waiting tasks go, running ones are marked, and the waiting go
		// again: each statement reads its own snapshot, so a task finished
		// after the first one read it (and not marked, no longer RUNNING)
		// is deleted by the third, and one claimed after it is marked by
		// the second.
		for _, q := range []string{qQueuePurgeWaiting, qQueuePurgeRunning, qQueuePurgeWaiting} {
			tag, err := tx.Exec(ctx, q, instanceID, name)
			if err != nil {
				return interpretError(err)
			}
			n += int(tag.RowsAffected())
		}
		return nil
	})
	return n, err
}

// QueueCounts counts a queue's tasks by state, each count stopping at limit.
// Every state has an entry.
func (s *Store) QueueCounts(ctx context.Context, ref store.QueueRef, limit int) (map[task.State]int, error) {
	instanceID, name := ref.InstanceID, ref.Name
	limit = max(limit, 0)
	var c [6]int
	if err := s.pool.QueryRow(ctx, qQueueCounts, instanceID, name, limit).Scan(&c[0], &c[1], &c[2], &c[3], &c[4], &c[5]); err != nil {
		return nil, interpretError(err)
	}
	out := make(map[task.State]int, len(task.States))
	for i, st := range []task.State{task.Pending, task.Running, task.RetryWait, task.Succeeded, task.Failed, task.Cancelled} {
		out[st] = c[i]
	}
	return out, nil
}

// qQueueActivity reads a queue's events per minute: adds through
// tasks_created and tasks_running (which holds the RUNNING rows that
// tasks_created leaves out), successes and failures through tasks_done,
// each read stopping at $5 tasks.
const qQueueActivity = `
SELECT 'added', m, count(*) FROM (SELECT created_at / 60000 * 60000 AS m FROM (
	(SELECT created_at FROM tasks WHERE instance_id = $1 AND queue = $2 AND state <> 'RUNNING'
		AND created_at >= $3 AND created_at < $4 LIMIT $5)
	UNION ALL
	(SELECT created_at FROM tasks WHERE instance_id = $1 AND queue = $2 AND state = 'RUNNING'
		AND created_at >= $3 AND created_at < $4 LIMIT $5)) AS y LIMIT $5) AS x GROUP BY m
UNION ALL
SELECT 'succeeded', m, count(*) FROM (SELECT finished_at / 60000 * 60000 AS m FROM tasks
	WHERE instance_id = $1 AND queue = $2 AND state = 'SUCCEEDED' AND finished_at >= $3 AND finished_at < $4 LIMIT $5) AS x GROUP BY m
UNION ALL
SELECT 'failed', m, count(*) FROM (SELECT finished_at / 60000 * 60000 AS m FROM tasks
	WHERE instance_id = $1 AND queue = $2 AND state = 'FAILED' AND finished_at >= $3 AND finished_at < $4 LIMIT $5) AS x GROUP BY m`

// QueueActivity counts a queue's adds, successes and failures per minute.
func (s *Store) QueueActivity(ctx context.Context, p *store.ActivityParams) (*store.Activity, error) {
	rows, err := s.pool.Query(ctx, qQueueActivity, p.InstanceID, p.Queue, p.Since, p.Until, max(p.Limit, 0))
	if err != nil {
		return nil, interpretError(err)
	}
	defer rows.Close()
	a, err := store.ScanActivity(rows, p.Limit)
	return a, interpretError(err)
}
