package postgres

import (
	"context"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// sqlTaskPage reads one page of an instance's tasks after a key ($3, $4);
// the operations instance it serves holds few rows, so the sort is cheap.
var sqlTaskPage = `SELECT ` + cols("", taskListCols) + ` FROM tasks
	WHERE instance_id = $1 AND (created_at, id) < ($3, $4) ORDER BY created_at DESC, id DESC LIMIT $2`

// sqlTaskLockMany reads and locks the listed tasks of an instance, in id
// order so that two such calls never wait on each other in a cycle.
var sqlTaskLockMany = sqlTaskGetMany + ` ORDER BY id FOR NO KEY UPDATE`

// sqlTaskDelete removes the listed ids that are in one of the listed states.
const sqlTaskDelete = `DELETE FROM tasks WHERE instance_id = $1 AND id = ANY($2) AND state = ANY($3)`

// TaskPage implements store.OpsStore.
func (s *Store) TaskPage(ctx context.Context, p *store.TaskPageParams) ([]*task.Task, error) {
	after := p.PageStart()
	rows, err := s.pool.Query(ctx, sqlTaskPage, p.InstanceID, min(max(p.Limit, 1), 200), after.CreatedAt, after.ID)
	if err != nil {
		return nil, interpretError(err)
	}
	return scanTasks(rows, false)
}

// TaskDelete implements store.OpsStore.
func (s *Store) TaskDelete(ctx context.Context, p *store.TaskDeleteParams) (int, error) {
	if len(p.IDs) == 0 || len(p.States) == 0 {
		return 0, nil
	}
	states := make([]string, len(p.States))
	for i, st := range p.States {
		states[i] = string(st)
	}
	tag, err := s.pool.Exec(ctx, sqlTaskDelete, p.InstanceID, p.IDs, states)
	if err != nil {
		return 0, interpretError(err)
	}
	return int(tag.RowsAffected()), nil
}

// TaskUpdateMany implements store.OpsStore: one locking read, then the
// updates in one batch.
func (s *Store) TaskUpdateMany(ctx context.Context, p *store.TaskUpdateManyParams) ([]error, error) {
	out := make([]error, len(p.IDs))
	if len(p.IDs) == 0 {
		return out, nil
	}
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, sqlTaskLockMany, p.InstanceID, p.IDs)
		if err != nil {
			return interpretError(err)
		}
		ts, err := scanTasks(rows, true)
		if err != nil {
			return err
		}
		got := store.ByID(ts)
		var b pgx.Batch
		for i, id := range p.IDs {
			t := got[id]
			if t == nil {
				out[i] = task.ErrNotFound
				continue
			}
			result, history := t.Result, slices.Clone(t.Attempts)
			if err := p.Fn(t); err != nil {
				out[i] = err
				continue
			}
			t.InstanceID, t.ID = p.InstanceID, id
			b.Queue(sqlTaskUpdate, taskUpdateArgs(t, result, history)...)
		}
		if b.Len() == 0 {
			return nil
		}
		if err := tx.SendBatch(ctx, &b).Close(); err != nil {
			return interpretError(err)
		}
		return nil
	})
	return out, err
}
