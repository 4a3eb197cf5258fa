package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// These are the engine's (the operator's) queries across instances. Each
// walks the queues, a small table, and seeks into a per-queue index with a
// LATERAL subquery, so none needs an index that does not begin with the
// instance, and each is a set of per-instance queries a distributed
// database can push down.
var (
	// sqlExpired finds RUNNING tasks whose lease ended: a queue's RUNNING
	// rows through tasks_running, their expiry read from the rows (it is
	// not indexed, so that lease renewals stay HOT updates).
	sqlExpired = `SELECT ` + cols("t", taskCols) + `
		FROM queues AS q CROSS JOIN LATERAL (
			SELECT * FROM tasks AS t
			WHERE t.instance_id = q.instance_id AND t.queue = q.name
			  AND t.state = 'RUNNING' AND t.lease_expires_at <= $1
			ORDER BY t.lease_expires_at
			LIMIT $2) AS t
		LIMIT $2`
	// sqlNextDue takes, per queue, the first entry of tasks_due (push
	// queues that are not paused) and the earliest expiry of its RUNNING
	// rows (tasks_running).
	sqlNextDue = `SELECT
		coalesce((SELECT min(d.run_at) FROM queues AS q CROSS JOIN LATERAL (
			SELECT t.run_at FROM tasks AS t
			WHERE t.instance_id = q.instance_id AND t.queue = q.name AND t.state IN ('PENDING', 'RETRY_WAIT')
			ORDER BY t.run_at LIMIT 1) AS d
			WHERE q.mode = 'push' AND NOT q.paused), 0),
		coalesce((SELECT min(l.lease_expires_at) FROM queues AS q CROSS JOIN LATERAL (
			SELECT t.lease_expires_at FROM tasks AS t
			WHERE t.instance_id = q.instance_id AND t.queue = q.name AND t.state = 'RUNNING'
			ORDER BY t.lease_expires_at LIMIT 1) AS l), 0)`
	// sqlDueQueues is the push queues whose first entry of tasks_due is
	// due at $1: per queue one seek into tasks_due, as sqlNextDue.
	sqlDueQueues = `SELECT q.instance_id, q.name FROM queues AS q CROSS JOIN LATERAL (
			SELECT t.run_at FROM tasks AS t
			WHERE t.instance_id = q.instance_id AND t.queue = q.name AND t.state IN ('PENDING', 'RETRY_WAIT')
			ORDER BY t.run_at LIMIT 1) AS d
		WHERE q.mode = 'push' AND NOT q.paused AND d.run_at <= $1`
	// sqlBacklog counts, per unpaused queue, its entries of tasks_due due
	// at $1 (up to $2) and takes the first, then sums them by mode.
	sqlBacklog = `SELECT q.mode, sum(d.n), min(d.first) FROM queues AS q CROSS JOIN LATERAL (
			SELECT count(*) AS n, min(x.run_at) AS first FROM (SELECT t.run_at FROM tasks AS t
				WHERE t.instance_id = q.instance_id AND t.queue = q.name AND t.state IN ('PENDING', 'RETRY_WAIT')
				AND t.run_at <= $1
				ORDER BY t.run_at LIMIT $2) AS x) AS d
		WHERE NOT q.paused AND d.n > 0 GROUP BY q.mode ORDER BY q.mode`
	// sqlQueueNextRunAt is the first entry of one queue's tasks_due after
	// $3.
	sqlQueueNextRunAt = `SELECT coalesce((SELECT run_at FROM tasks
		WHERE instance_id = $1 AND queue = $2 AND state IN ('PENDING', 'RETRY_WAIT') AND run_at > $3
		ORDER BY run_at LIMIT 1), 0)`
	// sqlNextDueAfter is sqlNextDue's first column, for tasks due after $1.
	sqlNextDueAfter = `SELECT coalesce((SELECT min(d.run_at) FROM queues AS q CROSS JOIN LATERAL (
			SELECT t.run_at FROM tasks AS t
			WHERE t.instance_id = q.instance_id AND t.queue = q.name AND t.state IN ('PENDING', 'RETRY_WAIT')
			AND t.run_at > $1
			ORDER BY t.run_at LIMIT 1) AS d
			WHERE q.mode = 'push' AND NOT q.paused), 0)`
	// sqlHeartbeat moves the lease expiry of attempts in flight, each
	// fenced on its lease and found by its key (see byKey in claim.go). It
	// changes no indexed column: a HOT update. A row another transaction
	// holds is skipped, not waited for: it is being finished (its outcome
	// written, or the rescuer's), and waiting could deadlock with that
	// multi-row write, which locks the same rows in another order. The next
	// heartbeat (every 10 s of a 30 s lease) renews whatever it skipped. A
	// task purged during the attempt is renewed under its purged lease: its
	// slot stays held while the target works.
	sqlHeartbeat = `UPDATE tasks AS t SET lease_expires_at = $4
		WHERE t.ctid = ANY (ARRAY(
			SELECT h.ctid FROM tasks AS h
			JOIN ` + unnestSQL(1, "c", []string{"instance_id text", "id text", "lease_id text"}) + `
				ON h.instance_id = c.instance_id AND h.id = c.id
			WHERE h.state = (SELECT 'RUNNING') AND h.lease_id IN (c.lease_id, c.lease_id || '` + task.PurgedLeaseSuffix + `')
			FOR UPDATE OF h SKIP LOCKED))`
	// sqlDeleteFinished removes finished tasks past their instance's
	// retention, walking tasks_done by (state, finishedAt) per queue. Rows
	// another node is deleting at the same time are skipped. The rows
	// found are deleted by their ctid (locked, so it cannot move), a TID
	// scan: the plan stays the same whatever the table's size.
	sqlDeleteFinished = `DELETE FROM tasks WHERE ctid = ANY (ARRAY(
		SELECT d.ctid
		FROM instances AS i
		JOIN queues AS q ON q.instance_id = i.id
		CROSS JOIN LATERAL (
			SELECT t.ctid FROM tasks AS t
			WHERE t.instance_id = q.instance_id AND t.queue = q.name
			  AND t.state IN ('SUCCEEDED', 'FAILED', 'CANCELLED')
			  AND t.finished_at < $1 - i.retention_days::bigint * 86400000
			LIMIT $2
			FOR UPDATE SKIP LOCKED) AS d
		LIMIT $2))`
)

// TaskExpired returns up to limit RUNNING tasks whose lease expired at or
// before now, with payloads.
func (s *Store) TaskExpired(ctx context.Context, now int64, limit int) ([]*task.Task, error) {
	if limit <= 0 {
		return []*task.Task{}, nil
	}
	rows, err := s.pool.Query(ctx, sqlExpired, now, limit)
	if err != nil {
		return nil, interpretError(err)
	}
	return scanTasks(rows, true)
}

// TaskHeartbeat moves the lease expiry of the attempts in flight that refs
// name to until, in one statement; a ref whose task is no longer RUNNING
// under its lease is skipped. It returns how many leases were extended.
func (s *Store) TaskHeartbeat(ctx context.Context, refs []store.LeaseRef, until int64) (int, error) {
	if len(refs) == 0 {
		return 0, nil
	}
	instanceIDs, ids, leases := leaseArrays(refs)
	tag, err := s.pool.Exec(ctx, sqlHeartbeat, instanceIDs, ids, leases, until)
	if err != nil {
		return 0, interpretError(err)
	}
	return int(tag.RowsAffected()), nil
}

// TaskNextDue returns the earliest runAt of a PENDING or RETRY_WAIT task of
// an unpaused push queue and the earliest lease expiry of a RUNNING task of
// any queue; each is 0 when there is none.
func (s *Store) TaskNextDue(ctx context.Context) (runAt int64, leaseExpiry int64, err error) {
	if err := s.pool.QueryRow(ctx, sqlNextDue).Scan(&runAt, &leaseExpiry); err != nil {
		return 0, 0, interpretError(err)
	}
	return runAt, leaseExpiry, nil
}

// TaskDueQueues returns the unpaused push queues with a task due at now,
// in one statement.
func (s *Store) TaskDueQueues(ctx context.Context, now int64) ([]store.QueueRef, error) {
	rows, err := s.pool.Query(ctx, sqlDueQueues, now)
	if err != nil {
		return nil, interpretError(err)
	}
	refs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.QueueRef, error) {
		var r store.QueueRef
		err := row.Scan(&r.InstanceID, &r.Name)
		return r, err
	})
	return refs, interpretError(err)
}

// TaskBacklog returns the work due and not started, per mode, in one
// statement.
func (s *Store) TaskBacklog(ctx context.Context, now int64, limit int) ([]store.Backlog, error) {
	rows, err := s.pool.Query(ctx, sqlBacklog, now, max(limit, 0))
	if err != nil {
		return nil, interpretError(err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Backlog, error) {
		var b store.Backlog
		err := row.Scan(&b.Mode, &b.Due, &b.OldestRunAt)
		return b, err
	})
	return out, interpretError(err)
}

// TaskNextDueAfter returns the earliest runAt after after of a waiting task
// of an unpaused push queue, or 0.
func (s *Store) TaskNextDueAfter(ctx context.Context, after int64) (int64, error) {
	var runAt int64
	if err := s.pool.QueryRow(ctx, sqlNextDueAfter, after).Scan(&runAt); err != nil {
		return 0, interpretError(err)
	}
	return runAt, nil
}

// TaskQueueNextRunAt returns the earliest runAt after after of a waiting
// task of the queue, or 0 (one seek into tasks_due).
func (s *Store) TaskQueueNextRunAt(ctx context.Context, ref store.QueueRef, after int64) (int64, error) {
	var runAt int64
	if err := s.pool.QueryRow(ctx, sqlQueueNextRunAt, ref.InstanceID, ref.Name, after).Scan(&runAt); err != nil {
		return 0, interpretError(err)
	}
	return runAt, nil
}

// TaskDeleteFinished removes up to limit finished tasks whose FinishedAt is
// more than their instance's retentionDays before now, in one statement,
// and returns how many.
func (s *Store) TaskDeleteFinished(ctx context.Context, now int64, limit int) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	tag, err := s.pool.Exec(ctx, sqlDeleteFinished, now, limit)
	if err != nil {
		return 0, interpretError(err)
	}
	return int(tag.RowsAffected()), nil
}

// leaseArrays are refs' columns, as arrays for unnest.
func leaseArrays(refs []store.LeaseRef) (instanceIDs, ids, leases []string) {
	instanceIDs, ids, leases = make([]string, len(refs)), make([]string, len(refs)), make([]string, len(refs))
	for i, r := range refs {
		instanceIDs[i], ids[i], leases[i] = r.InstanceID, r.ID, r.LeaseID
	}
	return instanceIDs, ids, leases
}
