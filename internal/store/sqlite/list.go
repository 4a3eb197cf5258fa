package sqlite

import (
	"context"
	"strings"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// listQueries holds the statement of each state ("" for none), without
// and with a name filter. Every one walks an index in its order from the
// cursor on, so a page costs its own rows and never a sort: the state's
// partial index (tasks_due, tasks_retry, tasks_running, tasks_done), whose
// predicate the literal state proves, or tasks_created.
var listQueries = map[task.State][2]query{}

func init() {
	for _, st := range append([]task.State{""}, task.States...) {
		var q [2]query
		for i, named := range []bool{false, true} {
			q[i] = define(onReader, listSQL(st, named))
		}
		listQueries[st] = q
	}
}

// listSQL builds the statement of state st ("" for every state). Its
// arguments are: instance, queue, [name], pull twice (see pullArgs), the
// cursor's key and id, the row limit.
func listSQL(st task.State, named bool) string {
	var b strings.Builder
	// The planner, left alone with the statistics of a large queue, may
	// take tasks_created and sort; each statement names its index.
	index := map[task.State]string{"": "tasks_created", task.Pending: "tasks_due", task.RetryWait: "tasks_retry",
		task.Running: "tasks_running", task.Succeeded: "tasks_done", task.Failed: "tasks_done", task.Cancelled: "tasks_done"}[st]
	if named {
		index = "tasks_name"
	}
	b.WriteString(`SELECT ` + cols("", taskListCols) + ` FROM tasks INDEXED BY ` + index + ` WHERE instance_id = ? AND queue = ?`)
	key, cmp, dir := "run_at", ">", "ASC"
	switch store.OrderOf(st) {
	case store.ByFinished:
		key, cmp, dir = "finished_at", "<", "DESC"
	case store.ByCreated:
		key, cmp, dir = "created_at", "<", "DESC"
	}
	if st != "" {
		b.WriteString(` AND ` + stateTerm(st))
	}
	if named {
		b.WriteString(` AND name = ?`)
	}
	b.WriteString(` AND pull IN (?, ?)`)
	b.WriteString(` AND (` + key + `, id) ` + cmp + ` (?, ?)`)
	b.WriteString(` ORDER BY ` + key + ` ` + dir + `, id ` + dir + ` LIMIT ?`)
	return b.String()
}

// pullArgs narrow the pull column: nil lets both values through.
func pullArgs(p *bool) (any, any) {
	switch {
	case p == nil:
		return int64(0), int64(1)
	case *p:
		return int64(1), int64(1)
	}
	return int64(0), int64(0)
}

// TaskList returns one page of a queue's tasks, without payloads or
// results, in the listing order of store.ListParams; the cursor is keyset (the last row's
// sort key and id), so rows added between pages never shift a page.
func (s *Store) TaskList(ctx context.Context, p *store.ListParams) (*store.ListPage, error) {
	if p.State != "" && !p.State.Valid() {
		return nil, task.FieldErrorf(task.CodeInvalidArgument, "state", "unknown state %q", p.State)
	}
	limit := min(max(p.Limit, 1), 200)
	o := store.OrderOf(p.State)
	key, id, err := store.DecodeCursor(o, p.Cursor)
	if err != nil {
		return nil, err
	}
	args := []any{p.InstanceID, p.Queue}
	named := 0
	if p.Name != "" {
		named = 1
		args = append(args, p.Name)
	}
	pa, pb := pullArgs(p.Pull)
	args = append(args, pa, pb, key, id, limit+1)
	rows, err := s.reader(listQueries[p.State][named]).QueryContext(ctx, args...)
	if err != nil {
		return nil, interpretError(err)
	}
	tasks, err := scanTasks(rows, false)
	if err != nil {
		return nil, err
	}
	page := &store.ListPage{Tasks: tasks}
	if len(tasks) > limit {
		page.Tasks = tasks[:limit]
		page.Cursor = store.EncodeCursor(o, tasks[limit-1])
	}
	if page.Tasks == nil {
		page.Tasks = []*task.Task{}
	}
	return page, nil
}

// stateTerm selects the rows of state st so that the planner can use the
// partial index of st's group: SQLite proves a partial index's predicate
// only from the same term, so a state in a group is named as in the index
// too (tasks_done's is a two-value IN or an equality, see migration 0010).
func stateTerm(st task.State) string {
	term := `state = '` + string(st) + `'`
	switch st {
	case task.Pending:
		return `state IN ('PENDING', 'RETRY_WAIT') AND ` + term
	case task.Succeeded, task.Failed, task.Cancelled:
		return `(state IN ('SUCCEEDED', 'FAILED') OR state = 'CANCELLED') AND ` + term
	}
	return term
}
