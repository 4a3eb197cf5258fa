package postgres

import (
	"context"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// sqlTaskPage reads one page of an instance's tasks by offset; the
// operations instance it serves holds few rows, so the sort is cheap.
var sqlTaskPage = `SELECT ` + cols("", taskListCols) + ` FROM tasks
	WHERE instance_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2 OFFSET $3`

// sqlTaskDelete removes the listed ids that are in one of the listed states.
const sqlTaskDelete = `DELETE FROM tasks WHERE instance_id = $1 AND id = ANY($2) AND state = ANY($3)`

// TaskPage implements store.OpsStore.
func (s *Store) TaskPage(ctx context.Context, p *store.TaskPageParams) ([]*task.Task, error) {
	rows, err := s.pool.Query(ctx, sqlTaskPage, p.InstanceID, min(max(p.Limit, 1), 200), max(p.Offset, 0))
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
