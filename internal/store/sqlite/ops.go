package sqlite

import (
	"context"
	"encoding/json"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

var (
	// qTaskPage reads one page of an instance's tasks after a key; the
	// operations instance it serves holds few rows, so the sort is cheap.
	qTaskPage = define(onReader, `SELECT `+cols("", taskListCols)+` FROM tasks
		WHERE instance_id = ? AND (created_at, id) < (?, ?) ORDER BY created_at DESC, id DESC LIMIT ?`)
	// qTaskDelete removes the listed ids (a JSON array) that are in one of
	// the listed states (another JSON array).
	qTaskDelete = define(onWriter, `DELETE FROM tasks WHERE instance_id = ?
		AND id IN (SELECT value FROM json_each(?)) AND state IN (SELECT value FROM json_each(?))`)
)

// TaskPage implements store.OpsStore.
func (s *Store) TaskPage(ctx context.Context, p *store.TaskPageParams) ([]*task.Task, error) {
	after := p.PageStart()
	rows, err := s.reader(qTaskPage).QueryContext(ctx, p.InstanceID, after.CreatedAt, after.ID, min(max(p.Limit, 1), 200))
	if err != nil {
		return nil, interpretError(err)
	}
	ts, err := scanTasks(rows, false)
	if ts == nil && err == nil {
		ts = []*task.Task{}
	}
	return ts, err
}

// TaskDelete implements store.OpsStore.
func (s *Store) TaskDelete(ctx context.Context, p *store.TaskDeleteParams) (int, error) {
	if len(p.IDs) == 0 || len(p.States) == 0 {
		return 0, nil
	}
	ids, err := json.Marshal(p.IDs)
	if err != nil {
		return 0, err
	}
	states, err := json.Marshal(p.States)
	if err != nil {
		return 0, err
	}
	n := 0
	err = s.write(ctx, func(w *wtx) error {
		r, err := w.exec(qTaskDelete, p.InstanceID, string(ids), string(states))
		if err != nil {
			return err
		}
		n, err = affected(r)
		return err
	})
	return n, err
}

// TaskUpdateMany implements store.OpsStore.
func (s *Store) TaskUpdateMany(ctx context.Context, p *store.TaskUpdateManyParams) ([]error, error) {
	out := make([]error, len(p.IDs))
	err := s.write(ctx, func(w *wtx) error {
		for i, id := range p.IDs {
			t, err := scanTask(w.queryRow(qTaskGet, p.InstanceID, id), true)
			if task.IsCode(err, task.CodeNotFound) {
				out[i] = task.ErrNotFound
				continue
			}
			if err != nil {
				return err
			}
			if err := p.Fn(t); err != nil {
				out[i] = err
				continue
			}
			t.InstanceID, t.ID = p.InstanceID, id
			if _, err := w.exec(qTaskUpdate, taskUpdateArgs(t)...); err != nil {
				return err
			}
		}
		return nil
	})
	return out, err
}
