package postgres

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// The task columns, shared by every backend (store.TaskColumns).
var (
	taskListCols = store.TaskListColumns
	taskCols     = store.TaskColumns
	cols         = store.Columns
)

// scanTask reads one task row of taskCols (full) or taskListCols.
func scanTask(row pgx.Row, full bool) (*task.Task, error) {
	t, err := store.ScanTask(row, full)
	return t, interpretError(err)
}

// scanTasks reads every row of rows and closes them; it never returns a nil
// slice without an error.
func scanTasks(rows pgx.Rows, full bool) ([]*task.Task, error) {
	defer rows.Close()
	ts, err := store.ScanTasks(rows, full)
	return ts, interpretError(err)
}

// targetJSON encodes a target for a jsonb column, "" for none (stored as
// NULL).
func targetJSON(t *task.Target) (string, error) {
	if t == nil {
		return "", nil
	}
	b, err := json.Marshal(t)
	if err != nil {
		return "", task.Errorf(task.CodeInternal, "store: encode target: %v", err)
	}
	return string(b), nil
}

// attemptsJSON encodes an attempt history as a JSON array ("[]" for none).
func attemptsJSON(a []task.Attempt) string {
	if len(a) == 0 {
		return "[]"
	}
	return store.AttemptsJSON(a)
}

// attemptJSON encodes the last attempt of a, "" for none.
func attemptJSON(a []task.Attempt) string {
	if len(a) == 0 {
		return ""
	}
	return store.AttemptJSON(&a[len(a)-1])
}

// nullBytes stores an empty byte slice as NULL.
func nullBytes(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}

// payloadBytes is the payload to store: never NULL (a task without one
// carries the JSON null).
func payloadBytes(p json.RawMessage) []byte {
	if len(p) == 0 {
		return []byte("null")
	}
	return p
}

// unnestSQL returns "unnest($first::t1[], $first+1::t2[], …) WITH
// ORDINALITY AS alias(c1, c2, …, ord)" for columns given as "name type"
// pairs, the building block of every set-based statement: one array
// parameter per column, one row per task, ord its 1-based position.
func unnestSQL(first int, alias string, spec []string) string {
	var arrays, names []string
	for i, s := range spec {
		name, typ, _ := strings.Cut(s, " ")
		arrays = append(arrays, fmt.Sprintf("$%d::%s[]", first+i, typ))
		names = append(names, name)
	}
	return "unnest(" + strings.Join(arrays, ", ") + ") WITH ORDINALITY AS " + alias + "(" + strings.Join(names, ", ") + ", ord)"
}
