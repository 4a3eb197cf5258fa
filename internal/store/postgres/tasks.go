package postgres

import (
	"bytes"
	"context"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

var (
	sqlTaskGet  = `SELECT ` + cols("", taskCols) + ` FROM tasks WHERE instance_id = $1 AND id = $2`
	sqlTaskLock = sqlTaskGet + ` FOR NO KEY UPDATE`
	// sqlTaskGetMany reads the tasks of one instance whose ids $2 lists.
	sqlTaskGetMany = `SELECT ` + cols("", taskCols) + ` FROM tasks WHERE instance_id = $1 AND id = ANY($2::text[])`
	// sqlTaskUpdate stores every field a domain method may change; result
	// and attempts only when $13 and $14 say they changed, so that an
	// update that leaves them alone does not write a large value again
	// (taskUpdateArgs).
	sqlTaskUpdate = `UPDATE tasks SET state = $3, attempt = $4, max_attempts = $5, run_at = $6,
		started_at = $7, deadline_at = $8, finished_at = $9, lease_id = $10, lease_expires_at = $11,
		last_error = $12,
		result = CASE WHEN $13::boolean THEN $15::bytea ELSE result END,
		attempts = CASE WHEN $14::boolean THEN $16::text::jsonb ELSE attempts END,
		priority = $17
		WHERE instance_id = $1 AND id = $2`
)

// taskUpdateArgs are sqlTaskUpdate's arguments for t as a domain method
// left it, read with result and history before the method ran.
func taskUpdateArgs(t *task.Task, result []byte, history []task.Attempt) []any {
	return []any{t.InstanceID, t.ID, string(t.State), t.Attempt, t.MaxAttempts, t.RunAt,
		t.StartedAt, t.DeadlineAt, t.FinishedAt, t.LeaseID, t.LeaseExpiresAt, t.LastError,
		!bytes.Equal(result, t.Result), !slices.Equal(history, t.Attempts), nullBytes(t.Result), attemptsJSON(t.Attempts),
		t.Priority}
}

// TaskGet returns one task with payload, result and attempts.
func (s *Store) TaskGet(ctx context.Context, ref store.TaskRef) (*task.Task, error) {
	instanceID, id := ref.InstanceID, ref.ID
	return scanTask(s.pool.QueryRow(ctx, sqlTaskGet, instanceID, id), true)
}

// TaskGetMany reads the tasks of instanceID with the given ids in one
// statement.
func (s *Store) TaskGetMany(ctx context.Context, instanceID string, ids []string) (map[string]*task.Task, error) {
	if len(ids) == 0 {
		return map[string]*task.Task{}, nil
	}
	rows, err := s.pool.Query(ctx, sqlTaskGetMany, instanceID, ids)
	if err != nil {
		return nil, interpretError(err)
	}
	tasks, err := scanTasks(rows, true)
	return store.ByID(tasks), err
}

// TaskUpdate locks the task's row, applies fn and stores what fn changed if
// fn returned nil. fn's error is returned unchanged and nothing is written.
// The queue, name, payload, params, target and the other fields fixed at
// add are never written.
func (s *Store) TaskUpdate(ctx context.Context, ref store.TaskRef, fn func(*task.Task) error) (*task.Task, error) {
	instanceID, id := ref.InstanceID, ref.ID
	var out *task.Task
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		t, err := scanTask(tx.QueryRow(ctx, sqlTaskLock, instanceID, id), true)
		if err != nil {
			return err
		}
		result, history := t.Result, slices.Clone(t.Attempts)
		if err := fn(t); err != nil {
			return err
		}
		t.InstanceID, t.ID = instanceID, id
		if _, err := tx.Exec(ctx, sqlTaskUpdate, taskUpdateArgs(t, result, history)...); err != nil {
			return interpretError(err)
		}
		out = t
		return nil
	})
	return out, err
}
