package sqlite

import (
	"database/sql"
	"encoding/json"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// The task columns, shared by every backend (store.TaskColumns).
var (
	taskListCols = store.TaskListColumns
	taskCols     = store.TaskColumns
	cols         = store.Columns
)

// scanner is a *sql.Row or *sql.Rows.
type scanner interface{ Scan(dest ...any) error }

// scanTask reads one task row of taskCols (full) or taskListCols.
func scanTask(sc scanner, full bool) (*task.Task, error) {
	t := &task.Task{}
	var (
		name, deadLetterOf     sql.NullString
		pull                   int64
		state                  string
		target, attempts       []byte
		params, payload, reslt []byte
	)
	dest := []any{
		&t.InstanceID, &t.ID, &t.Queue, &name, &state, &pull, &t.Attempt, &t.MaxAttempts,
		&t.RunAt, &t.CreatedAt, &t.StartedAt, &t.DeadlineAt, &t.FinishedAt, &t.LeaseID,
		&t.LeaseExpiresAt, &t.DeadlineSeconds, &t.Source, &t.Depth, &deadLetterOf,
		&t.LastError, &target, &params, &attempts,
	}
	if full {
		dest = append(dest, &payload, &reslt)
	}
	if err := sc.Scan(dest...); err != nil {
		return nil, interpretError(err)
	}
	t.Name = name.String
	t.DeadLetterOf = deadLetterOf.String
	t.State = task.State(state)
	t.Pull = pull != 0
	if len(params) > 0 {
		t.Params = params
	}
	if len(target) > 0 {
		t.Target = &task.Target{}
		if err := json.Unmarshal(target, t.Target); err != nil {
			return nil, task.Errorf(task.CodeInternal, "store: task %s: bad target: %v", t.ID, err)
		}
	}
	if len(attempts) > 0 {
		if err := json.Unmarshal(attempts, &t.Attempts); err != nil {
			return nil, task.Errorf(task.CodeInternal, "store: task %s: bad attempts: %v", t.ID, err)
		}
	}
	if full {
		t.Payload = payload
		if len(reslt) > 0 {
			t.Result = reslt
		}
	}
	return t, nil
}

// scanTasks reads every row of rows and closes them.
func scanTasks(rows *sql.Rows, full bool) ([]*task.Task, error) {
	defer rows.Close()
	var out []*task.Task
	for rows.Next() {
		t, err := scanTask(rows, full)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, interpretError(err)
	}
	return out, nil
}

// nullStr stores "" as NULL.
func nullStr(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// nullBytes stores an empty byte slice as NULL.
func nullBytes(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return b
}

// targetJSON encodes a target, nil as NULL.
func targetJSON(t *task.Target) (any, error) {
	if t == nil {
		return nil, nil
	}
	b, err := json.Marshal(t)
	if err != nil {
		return nil, task.Errorf(task.CodeInternal, "store: encode target: %v", err)
	}
	return string(b), nil
}

// attemptsJSON encodes an attempt history, an empty one as NULL.
func attemptsJSON(a []task.Attempt) (any, error) {
	if len(a) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(a)
	if err != nil {
		return nil, task.Errorf(task.CodeInternal, "store: encode attempts: %v", err)
	}
	return string(b), nil
}

// boolInt stores a bool as 0 or 1.
func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// payloadBytes is the payload to store: never NULL (a task without one
// carries the JSON null).
func payloadBytes(p json.RawMessage) []byte {
	if len(p) == 0 {
		return []byte("null")
	}
	return p
}
