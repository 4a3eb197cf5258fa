package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"strings"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// queueCols are the queue columns, shared by every backend (store.QueueColumns).
var queueCols = cols("", store.QueueColumns)

var (
	qQueueInsert = define(onWriter, `INSERT INTO queues (`+queueCols+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	qQueueGet    = define(onWriter|onReader, `SELECT `+queueCols+` FROM queues WHERE instance_id = ? AND name = ?`)
	qQueueExists = define(onWriter, `SELECT 1 FROM queues WHERE instance_id = ? AND name = ?`)
	qQueueDLQ    = define(onWriter, `SELECT coalesce(dead_letter_queue, '') FROM queues WHERE instance_id = ? AND name = ?`)
	qQueueList   = define(onReader, `SELECT `+queueCols+` FROM queues WHERE instance_id = ? ORDER BY name`)
	qQueueAll    = define(onReader, `SELECT `+queueCols+` FROM queues ORDER BY instance_id, name`)
	qQueueUpdate = define(onWriter, `UPDATE queues SET target = ?, rate_per_second = ?, max_concurrent = ?,
		max_attempts = ?, min_backoff_seconds = ?, max_backoff_seconds = ?, max_doublings = ?, max_age_seconds = ?,
		deadline_seconds = ?, dead_letter_queue = ?, target_control = ?, paused = ?
		WHERE instance_id = ? AND name = ?`)
	qQueueDelete = define(onWriter, `DELETE FROM queues WHERE instance_id = ? AND name = ?`)
	qQueuePurge  = define(onWriter, `DELETE FROM tasks INDEXED BY tasks_created WHERE instance_id = ? AND queue = ?`)
	// qQueuePurgeWaiting is a purge's delete of a queue's tasks but the
	// RUNNING ones; qQueuePurgeRunning marks those purged
	// (task.PurgedLease).
	qQueuePurgeWaiting = define(onWriter, `DELETE FROM tasks INDEXED BY tasks_created
		WHERE instance_id = ? AND queue = ? AND state <> 'RUNNING'`)
	qQueuePurgeRunning = define(onWriter, `UPDATE tasks INDEXED BY tasks_running SET lease_id = lease_id || '`+task.PurgedLeaseSuffix+`'
		WHERE instance_id = ? AND queue = ? AND state = 'RUNNING' AND lease_id NOT LIKE '%`+task.PurgedLeaseSuffix+`'`)
	// A deleted queue is no longer anyone's dead-letter queue.
	qQueueUnlinkDLQ = define(onWriter, `UPDATE queues SET dead_letter_queue = NULL
		WHERE instance_id = ? AND dead_letter_queue = ?`)
	qQueueCounts = define(onReader, countsSQL())
)

// scanQueue reads one queue row of queueCols.
func scanQueue(sc scanner) (*task.Queue, error) {
	q, err := store.ScanQueue(sc)
	return q, interpretError(err)
}

// scanQueues reads every row of rows and closes them.
func scanQueues(rows *sql.Rows) ([]*task.Queue, error) {
	defer rows.Close()
	qs, err := store.ScanQueues(rows)
	return qs, interpretError(err)
}

// insertQueue stores a new queue; QUEUE_EXISTS if its name is taken.
func (w *wtx) insertQueue(q *task.Queue) error {
	target, err := targetJSON(q.Target)
	if err != nil {
		return err
	}
	_, err = w.exec(qQueueInsert, q.InstanceID, q.Name, string(q.Mode), target, q.RatePerSecond, q.MaxConcurrent,
		q.MaxAttempts, q.MinBackoffSeconds, q.MaxBackoffSeconds, q.MaxDoublings, q.MaxAgeSeconds, q.DeadlineSeconds,
		nullStr(q.DeadLetterQueue), boolInt(q.TargetControl), boolInt(q.Paused), q.CreatedAt)
	return err
}

// queueExists reports whether the instance has the queue.
func (w *wtx) queueExists(instanceID, name string) (bool, error) {
	var one int
	err := w.queryRow(qQueueExists, instanceID, name).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, interpretError(err)
	}
	return true, nil
}

// checkDeadLetter refuses a deadLetterQueue that is not a queue of the same
// instance, or that leads back to q.
func (w *wtx) checkDeadLetter(q *task.Queue) error {
	return store.CheckDeadLetter(q, func(name string) (string, bool, error) {
		var dlq string
		err := w.queryRow(qQueueDLQ, q.InstanceID, name).Scan(&dlq)
		if errors.Is(err, sql.ErrNoRows) {
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
	return s.write(ctx, func(w *wtx) error {
		var one int
		if err := w.queryRow(qInstanceExists, q.InstanceID).Scan(&one); err != nil {
			return interpretError(err)
		}
		if err := w.checkDeadLetter(q); err != nil {
			return err
		}
		return w.insertQueue(q)
	})
}

// QueueGet finds one queue.
func (s *Store) QueueGet(ctx context.Context, ref store.QueueRef) (*task.Queue, error) {
	instanceID, name := ref.InstanceID, ref.Name
	return scanQueue(s.reader(qQueueGet).QueryRowContext(ctx, instanceID, name))
}

// QueueList lists an instance's queues by name.
func (s *Store) QueueList(ctx context.Context, instanceID string) ([]*task.Queue, error) {
	rows, err := s.reader(qQueueList).QueryContext(ctx, instanceID)
	if err != nil {
		return nil, interpretError(err)
	}
	return scanQueues(rows)
}

// QueueListAll lists every queue of every instance, by instance and name.
func (s *Store) QueueListAll(ctx context.Context) ([]*task.Queue, error) {
	rows, err := s.reader(qQueueAll).QueryContext(ctx)
	if err != nil {
		return nil, interpretError(err)
	}
	return scanQueues(rows)
}

// QueueUpdate applies fn to the queue inside a write transaction and stores
// its settings, refusing a deadLetterQueue that does not exist. The
// instance, name, mode and creation time stay.
func (s *Store) QueueUpdate(ctx context.Context, ref store.QueueRef, fn func(*task.Queue) error) (*task.Queue, error) {
	instanceID, name := ref.InstanceID, ref.Name
	var out *task.Queue
	err := s.write(ctx, func(w *wtx) error {
		q, err := scanQueue(w.queryRow(qQueueGet, instanceID, name))
		if err != nil {
			return err
		}
		mode, created := q.Mode, q.CreatedAt
		if err := fn(q); err != nil {
			return err
		}
		q.InstanceID, q.Name, q.Mode, q.CreatedAt = instanceID, name, mode, created
		if err := w.checkDeadLetter(q); err != nil {
			return err
		}
		target, err := targetJSON(q.Target)
		if err != nil {
			return err
		}
		if _, err := w.exec(qQueueUpdate, target, q.RatePerSecond, q.MaxConcurrent, q.MaxAttempts, q.MinBackoffSeconds,
			q.MaxBackoffSeconds, q.MaxDoublings, q.MaxAgeSeconds, q.DeadlineSeconds, nullStr(q.DeadLetterQueue),
			boolInt(q.TargetControl), boolInt(q.Paused), instanceID, name); err != nil {
			return err
		}
		out = q
		return nil
	})
	return out, err
}

// QueueDelete removes a queue and all its tasks, and clears it as the
// dead-letter queue of the instance's other queues. It returns how many
// tasks went with it.
func (s *Store) QueueDelete(ctx context.Context, ref store.QueueRef) (int, error) {
	instanceID, name := ref.InstanceID, ref.Name
	var n int
	err := s.write(ctx, func(w *wtx) error {
		r, err := w.exec(qQueueDelete, instanceID, name)
		if err != nil {
			return err
		}
		if gone, err := affected(r); err != nil {
			return err
		} else if gone == 0 {
			return task.ErrNotFound
		}
		if n, err = w.purge(instanceID, name); err != nil {
			return err
		}
		_, err = w.exec(qQueueUnlinkDLQ, instanceID, name)
		return err
	})
	return n, err
}

// QueuePurge removes every task of a queue and returns how many; a task
// whose attempt is in flight is marked purged, and removed when the
// attempt ends (store.Store.QueuePurge).
func (s *Store) QueuePurge(ctx context.Context, ref store.QueueRef) (int, error) {
	instanceID, name := ref.InstanceID, ref.Name
	var n int
	err := s.write(ctx, func(w *wtx) error {
		ok, err := w.queueExists(instanceID, name)
		if err != nil {
			return err
		}
		if !ok {
			return task.ErrNotFound
		}
		if n, err = w.purgeWaiting(instanceID, name); err != nil {
			return err
		}
		r, err := w.exec(qQueuePurgeRunning, instanceID, name)
		if err != nil {
			return err
		}
		marked, err := affected(r)
		n += marked
		return err
	})
	return n, err
}

// purgeWaiting deletes a queue's tasks but the RUNNING ones.
func (w *wtx) purgeWaiting(instanceID, name string) (int, error) {
	r, err := w.exec(qQueuePurgeWaiting, instanceID, name)
	if err != nil {
		return 0, err
	}
	return affected(r)
}

func (w *wtx) purge(instanceID, name string) (int, error) {
	r, err := w.exec(qQueuePurge, instanceID, name)
	if err != nil {
		return 0, err
	}
	return affected(r)
}

// QueueCounts counts a queue's tasks by state, each count stopping at limit.
// Every state has an entry.
func (s *Store) QueueCounts(ctx context.Context, ref store.QueueRef, limit int) (map[task.State]int, error) {
	instanceID, name := ref.InstanceID, ref.Name
	if limit < 0 {
		limit = 0
	}
	rows, err := s.reader(qQueueCounts).QueryContext(ctx, instanceID, name, limit)
	if err != nil {
		return nil, interpretError(err)
	}
	defer rows.Close()
	out := make(map[task.State]int, len(task.States))
	for rows.Next() {
		var (
			state string
			n     int
		)
		if err := rows.Scan(&state, &n); err != nil {
			return nil, interpretError(err)
		}
		out[task.State(state)] = n
	}
	if err := rows.Err(); err != nil {
		return nil, interpretError(err)
	}
	return out, nil
}

// countsSQL counts each state's tasks of one queue, up to ?3 each, through
// the state's partial index.
func countsSQL() string {
	var parts []string
	for _, st := range task.States {
		parts = append(parts, `SELECT '`+string(st)+`', count(*) FROM (SELECT 1 FROM tasks WHERE instance_id = ?1 AND queue = ?2 AND `+
			stateTerm(st)+` LIMIT ?3)`)
	}
	return strings.Join(parts, "\nUNION ALL ")
}

// qQueueActivity reads a queue's events per minute: adds through
// tasks_created, successes and failures through tasks_done, each read
// stopping at ?5 tasks.
var qQueueActivity = define(onReader, `
SELECT 'added', m, count(*) FROM (SELECT created_at / 60000 * 60000 AS m FROM tasks INDEXED BY tasks_created
	WHERE instance_id = ?1 AND queue = ?2 AND created_at >= ?3 AND created_at < ?4 LIMIT ?5) GROUP BY m
UNION ALL
SELECT 'succeeded', m, count(*) FROM (SELECT finished_at / 60000 * 60000 AS m FROM tasks
	WHERE instance_id = ?1 AND queue = ?2 AND `+stateTerm(task.Succeeded)+` AND finished_at >= ?3 AND finished_at < ?4 LIMIT ?5) GROUP BY m
UNION ALL
SELECT 'failed', m, count(*) FROM (SELECT finished_at / 60000 * 60000 AS m FROM tasks
	WHERE instance_id = ?1 AND queue = ?2 AND `+stateTerm(task.Failed)+` AND finished_at >= ?3 AND finished_at < ?4 LIMIT ?5) GROUP BY m`)

// QueueActivity counts a queue's adds, successes and failures per minute.
func (s *Store) QueueActivity(ctx context.Context, p *store.ActivityParams) (*store.Activity, error) {
	rows, err := s.reader(qQueueActivity).QueryContext(ctx, p.InstanceID, p.Queue, p.Since, p.Until, max(p.Limit, 0))
	if err != nil {
		return nil, interpretError(err)
	}
	defer rows.Close()
	a, err := store.ScanActivity(rows, p.Limit)
	return a, interpretError(err)
}
