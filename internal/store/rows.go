package store

import (
	"encoding/json"
	"sync"

	"github.com/errandhq/errand/internal/task"
)

// Scanner is one row of a result: a *sql.Row or *sql.Rows of database/sql,
// a pgx.Row or pgx.Rows.
type Scanner interface{ Scan(dest ...any) error }

// Rows is a result set read row by row: *sql.Rows or pgx.Rows. The caller
// closes it.
type Rows interface {
	Scanner
	Next() bool
	Err() error
}

// ScanTask reads one task row of TaskColumns (full) or TaskListColumns.
// Both backends store the same column types as far as Scan can tell:
// nullable text for name and deadLetterOf, a boolean (PostgreSQL) or 0/1
// integer (SQLite) for pull, JSON bytes for target, params and attempts.
// An error of Scan is returned unchanged, for the backend to translate; a
// column that does not decode is INTERNAL.
func ScanTask(sc Scanner, full bool) (*task.Task, error) {
	var extra any
	if w, ok := sc.(ScanWith); ok {
		sc, extra = w.Scanner, w.Extra
	}
	t := &task.Task{}
	x := taskScratch.Get().(*taskScan)
	defer x.release()
	dest := append(x.dest[:0],
		&t.InstanceID, &t.ID, &t.Queue, &x.name, &x.state, &t.Pull, &t.Attempt, &t.MaxAttempts,
		&t.RunAt, &t.CreatedAt, &t.StartedAt, &t.DeadlineAt, &t.FinishedAt, &t.LeaseID,
		&t.LeaseExpiresAt, &t.DeadlineSeconds, &t.Source, &t.Depth, &t.Priority, &x.deadLetterOf,
		&t.LastError, &x.target, &x.params, &x.attempts,
	)
	if full {
		dest = append(dest, &x.payload, &x.result)
	}
	if extra != nil {
		dest = append(dest, extra)
	}
	if err := sc.Scan(dest...); err != nil {
		return nil, err
	}
	if x.name != nil {
		t.Name = *x.name
	}
	if x.deadLetterOf != nil {
		t.DeadLetterOf = *x.deadLetterOf
	}
	t.State = task.State(x.state)
	if len(x.params) > 0 {
		t.Params = x.params
	}
	if len(x.target) > 0 {
		t.Target = &task.Target{}
		if err := json.Unmarshal(x.target, t.Target); err != nil {
			return nil, task.Errorf(task.CodeInternal, "store: task %s: bad target: %v", t.ID, err)
		}
	}
	// PostgreSQL stores no attempts as "[]", SQLite as NULL; both read as nil.
	if len(x.attempts) > 0 && string(x.attempts) != "[]" {
		if err := json.Unmarshal(x.attempts, &t.Attempts); err != nil {
			return nil, task.Errorf(task.CodeInternal, "store: task %s: bad attempts: %v", t.ID, err)
		}
	}
	if full {
		t.Payload = x.payload
		if len(x.result) > 0 {
			t.Result = x.result
		}
	}
	return t, nil
}

// taskScan holds what ScanTask scans a row into besides the task itself:
// the columns it converts, and the destinations handed to Scan (an
// interface call, through which each would otherwise be allocated, per
// row). ScanTask reuses them through taskScratch.
type taskScan struct {
	name, deadLetterOf                        *string
	state                                     string
	target, params, attempts, payload, result []byte
	dest                                      [27]any // TaskColumns and an extra one (ScanWith)
}

// taskScratch holds the taskScans not in use.
var taskScratch = sync.Pool{New: func() any { return new(taskScan) }}

// release clears x, so that it keeps nothing of the row it held alive, and
// returns it to taskScratch.
func (x *taskScan) release() {
	*x = taskScan{}
	taskScratch.Put(x)
}

// ScanTasks reads every row of rows with ScanTask (see ScanAll).
func ScanTasks(rows Rows, full bool) ([]*task.Task, error) {
	return ScanAll(rows, func(sc Scanner) (*task.Task, error) { return ScanTask(sc, full) })
}

// ScanAll reads every row of rows with scan; it never returns a nil slice
// without an error. Errors are returned unchanged; the caller closes rows.
func ScanAll[T any](rows Rows, scan func(Scanner) (T, error)) ([]T, error) {
	out := []T{}
	for rows.Next() {
		x, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, x)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// ScanQueue reads one queue row of QueueColumns. An error of Scan is
// returned unchanged; a target that does not decode is INTERNAL.
func ScanQueue(sc Scanner) (*task.Queue, error) {
	q := &task.Queue{}
	var (
		mode   string
		target []byte
		dlq    *string
	)
	if err := sc.Scan(&q.InstanceID, &q.Name, &mode, &target, &q.RatePerSecond, &q.MaxConcurrent, &q.MaxAttempts,
		&q.MinBackoffSeconds, &q.MaxBackoffSeconds, &q.MaxDoublings, &q.MaxAgeSeconds, &q.DeadlineSeconds,
		&dlq, &q.TargetControl, &q.Paused, &q.CreatedAt); err != nil {
		return nil, err
	}
	q.Mode = task.Mode(mode)
	if dlq != nil {
		q.DeadLetterQueue = *dlq
	}
	if len(target) > 0 {
		q.Target = &task.Target{}
		if err := json.Unmarshal(target, q.Target); err != nil {
			return nil, task.Errorf(task.CodeInternal, "store: queue %s: bad target: %v", q.Name, err)
		}
	}
	return q, nil
}

// ScanQueues reads every row of rows with ScanQueue (see ScanAll).
func ScanQueues(rows Rows) ([]*task.Queue, error) {
	return ScanAll(rows, ScanQueue)
}

// ScanWith scans a row whose own columns are followed by one more (a ctid,
// a rowid): the row's into the destinations Scan is given, the last one
// into Extra.
type ScanWith struct {
	Scanner
	Extra any
}

// Scan scans the row's columns into dest and the last one into Extra.
func (w ScanWith) Scan(dest ...any) error { return w.Scanner.Scan(append(dest, w.Extra)...) }
