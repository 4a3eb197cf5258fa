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
type scanner = store.Scanner

// scanTask reads one task row of taskCols (full) or taskListCols.
func scanTask(sc scanner, full bool) (*task.Task, error) {
	t, err := store.ScanTask(sc, full)
	return t, interpretError(err)
}

// scanTasks reads every row of rows and closes them; it never returns a nil
// slice without an error.
func scanTasks(rows *sql.Rows, full bool) ([]*task.Task, error) {
	defer rows.Close()
	ts, err := store.ScanTasks(rows, full)
	return ts, interpretError(err)
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
func attemptsJSON(a []task.Attempt) any {
	if len(a) == 0 {
		return nil
	}
	return store.AttemptsJSON(a)
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
