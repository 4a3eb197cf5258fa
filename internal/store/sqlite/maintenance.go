package sqlite

import (
	"context"
	"database/sql"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// These are the engine's (the operator's) queries across instances. Each
// loops over the queues, a small table, and seeks into a per-queue index, so
// none needs an index that does not begin with the instance.
var (
	// qExpired finds RUNNING tasks whose lease ended: per queue, its
	// RUNNING rows through tasks_running (the work in flight), each row's
	// expiry read from the row.
	qExpired = define(onReader, `SELECT `+cols("t", taskCols)+`
		FROM queues AS q CROSS JOIN tasks AS t
		WHERE t.instance_id = q.instance_id AND t.queue = q.name
		  AND t.state = 'RUNNING' AND t.lease_expires_at <= ?
		LIMIT ?`)
	// qNextDue takes, per queue, the first entry of tasks_due and the
	// earliest lease expiry of the RUNNING rows (tasks_running).
	qNextDue = define(onReader, `SELECT
		coalesce(min(CASE WHEN q.mode = 'push' AND q.paused = 0 THEN (SELECT t.run_at FROM tasks AS t
			WHERE t.instance_id = q.instance_id AND t.queue = q.name AND t.state IN ('PENDING', 'RETRY_WAIT')
			ORDER BY t.run_at LIMIT 1) END), 0),
		coalesce(min((SELECT min(t.lease_expires_at) FROM tasks AS t
			WHERE t.instance_id = q.instance_id AND t.queue = q.name AND t.state = 'RUNNING')), 0)
		FROM queues AS q`)
	// qDueQueues is the push queues whose first entry of tasks_due is due
	// at ?: per queue one seek into tasks_due, as qNextDue.
	qDueQueues = define(onReader, `SELECT q.instance_id, q.name FROM queues AS q
		WHERE q.mode = 'push' AND q.paused = 0 AND (SELECT t.run_at FROM tasks AS t
			WHERE t.instance_id = q.instance_id AND t.queue = q.name AND t.state IN ('PENDING', 'RETRY_WAIT')
			ORDER BY t.run_at LIMIT 1) <= ?`)
	// qBacklog counts, per unpaused queue, its entries of tasks_due due at
	// ?1 (up to ?2) and takes the first, then sums them by mode.
	qBacklog = define(onReader, `SELECT mode, sum(n), min(CASE WHEN n > 0 THEN first END) FROM (SELECT q.mode AS mode,
			(SELECT count(*) FROM (SELECT 1 FROM tasks AS t
				WHERE t.instance_id = q.instance_id AND t.queue = q.name AND t.state IN ('PENDING', 'RETRY_WAIT')
				AND t.run_at <= ?1 LIMIT ?2)) AS n,
			(SELECT t.run_at FROM tasks AS t
				WHERE t.instance_id = q.instance_id AND t.queue = q.name AND t.state IN ('PENDING', 'RETRY_WAIT')
				ORDER BY t.run_at LIMIT 1) AS first
		FROM queues AS q WHERE q.paused = 0)
		GROUP BY mode HAVING sum(n) > 0 ORDER BY mode`)
	// qNextDueAfter is qNextDue's first column, for tasks due after ?.
	// qQueueNextRunAt is the head of one queue's tasks_due.
	qQueueNextRunAt = define(onReader, `SELECT coalesce((SELECT run_at FROM tasks
		WHERE instance_id = ? AND queue = ? AND state IN ('PENDING', 'RETRY_WAIT') AND run_at > ?
		ORDER BY run_at LIMIT 1), 0)`)
	qNextDueAfter = define(onReader, `SELECT
		coalesce(min((SELECT t.run_at FROM tasks AS t
			WHERE t.instance_id = q.instance_id AND t.queue = q.name AND t.state IN ('PENDING', 'RETRY_WAIT')
			AND t.run_at > ?1
			ORDER BY t.run_at LIMIT 1)), 0)
		FROM queues AS q WHERE q.mode = 'push' AND q.paused = 0`)
	// qDeleteFinished removes finished tasks past their instance's
	// retention, walking tasks_done by (state, finishedAt) per queue.
	qDeleteFinished = define(onWriter, `DELETE FROM tasks WHERE (instance_id, id) IN (
		SELECT t.instance_id, t.id
		FROM instances AS i CROSS JOIN queues AS q CROSS JOIN tasks AS t INDEXED BY tasks_done
		WHERE q.instance_id = i.id AND t.instance_id = q.instance_id AND t.queue = q.name
		  AND (t.state IN ('SUCCEEDED', 'FAILED') OR t.state = 'CANCELLED')
		  AND t.state IN ('SUCCEEDED', 'FAILED', 'CANCELLED')
		  AND t.finished_at < ?1 - i.retention_days * 86400000
		LIMIT ?2)`)
)

// TaskExpired returns up to limit RUNNING tasks whose lease expired at or
// before now, with payloads.
func (s *Store) TaskExpired(ctx context.Context, now int64, limit int) ([]*task.Task, error) {
	if limit <= 0 {
		return []*task.Task{}, nil
	}
	rows, err := s.reader(qExpired).QueryContext(ctx, now, limit)
	if err != nil {
		return nil, interpretError(err)
	}
	out, err := scanTasks(rows, true)
	if out == nil && err == nil {
		out = []*task.Task{}
	}
	return out, err
}

// TaskNextDue returns the earliest runAt of a PENDING or RETRY_WAIT task of
// an unpaused push queue and the earliest lease expiry of a RUNNING task of
// any queue; each is 0 when there is none.
func (s *Store) TaskNextDue(ctx context.Context) (runAt int64, leaseExpiry int64, err error) {
	var r, l sql.NullInt64
	if err := s.reader(qNextDue).QueryRowContext(ctx).Scan(&r, &l); err != nil {
		return 0, 0, interpretError(err)
	}
	return r.Int64, l.Int64, nil
}

// TaskDueQueues returns the unpaused push queues with a task due at now.
func (s *Store) TaskDueQueues(ctx context.Context, now int64) ([]store.QueueRef, error) {
	rows, err := s.reader(qDueQueues).QueryContext(ctx, now)
	if err != nil {
		return nil, interpretError(err)
	}
	defer rows.Close()
	out := []store.QueueRef{}
	for rows.Next() {
		var r store.QueueRef
		if err := rows.Scan(&r.InstanceID, &r.Name); err != nil {
			return nil, interpretError(err)
		}
		out = append(out, r)
	}
	return out, interpretError(rows.Err())
}

// TaskBacklog returns the work due and not started, per mode.
func (s *Store) TaskBacklog(ctx context.Context, now int64, limit int) ([]store.Backlog, error) {
	rows, err := s.reader(qBacklog).QueryContext(ctx, now, max(limit, 0))
	if err != nil {
		return nil, interpretError(err)
	}
	defer rows.Close()
	out := []store.Backlog{}
	for rows.Next() {
		var b store.Backlog
		if err := rows.Scan(&b.Mode, &b.Due, &b.OldestRunAt); err != nil {
			return nil, interpretError(err)
		}
		out = append(out, b)
	}
	return out, interpretError(rows.Err())
}

// TaskNextDueAfter returns the earliest runAt after after of a waiting task
// of an unpaused push queue, or 0.
func (s *Store) TaskNextDueAfter(ctx context.Context, after int64) (int64, error) {
	var r sql.NullInt64
	if err := s.reader(qNextDueAfter).QueryRowContext(ctx, after).Scan(&r); err != nil {
		return 0, interpretError(err)
	}
	return r.Int64, nil
}

// TaskQueueNextRunAt returns the earliest runAt after after of a waiting
// task of the queue, or 0 (one seek into tasks_due).
func (s *Store) TaskQueueNextRunAt(ctx context.Context, ref store.QueueRef, after int64) (int64, error) {
	var r int64
	if err := s.reader(qQueueNextRunAt).QueryRowContext(ctx, ref.InstanceID, ref.Name, after).Scan(&r); err != nil {
		return 0, interpretError(err)
	}
	return r, nil
}

// TaskDeleteFinished removes up to limit finished tasks whose FinishedAt is
// more than their instance's retentionDays before now, in one transaction,
// and returns how many.
func (s *Store) TaskDeleteFinished(ctx context.Context, now int64, limit int) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	var n int
	err := s.write(ctx, func(w *wtx) error {
		r, err := w.exec(qDeleteFinished, now, limit)
		if err != nil {
			return err
		}
		n, err = affected(r)
		return err
	})
	return n, err
}

// qHeartbeat extends one lease, fenced on it or on its purged form (the
// task purged during the attempt keeps its slot while the target works).
var qHeartbeat = define(onWriter, `UPDATE tasks SET lease_expires_at = ?1
	WHERE instance_id = ?2 AND id = ?3 AND state = 'RUNNING' AND lease_id IN (?4, ?4 || '`+task.PurgedLeaseSuffix+`')`)

// TaskHeartbeat extends the leases of attempts in flight to until, in one
// write transaction, each fenced on its lease id.
func (s *Store) TaskHeartbeat(ctx context.Context, refs []store.LeaseRef, until int64) (int, error) {
	if len(refs) == 0 {
		return 0, nil
	}
	n := 0
	err := s.write(ctx, func(w *wtx) error {
		n = 0
		for _, r := range refs {
			res, err := w.exec(qHeartbeat, until, r.InstanceID, r.ID, r.LeaseID)
			if err != nil {
				return err
			}
			k, err := affected(res)
			if err != nil {
				return err
			}
			n += k
		}
		return nil
	})
	return n, err
}
