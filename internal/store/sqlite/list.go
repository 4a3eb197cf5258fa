package sqlite

import (
	"context"
	"strings"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// listQueries holds the statement of each order, without and with a name
// filter. Every one walks an index in its order from the cursor on, so a
// page costs its own rows and never a sort.
var listQueries = map[store.ListOrder][2]query{}

func init() {
	for _, o := range []store.ListOrder{store.ByRunAt, store.ByFinished, store.ByCreated} {
		var q [2]query
		for i, named := range []bool{false, true} {
			q[i] = define(onReader, listSQL(o, named))
		}
		listQueries[o] = q
	}
}

// listSQL builds the statement of order o. Its arguments are: instance,
// queue, [state], [name], pull twice (see pullArgs), the cursor's key and
// id, the row limit.
func listSQL(o store.ListOrder, named bool) string {
	var b strings.Builder
	b.WriteString(`SELECT ` + cols("", taskListCols) + ` FROM tasks WHERE instance_id = ? AND queue = ?`)
	key, cmp, dir := "sort_at", ">", "ASC"
	switch o {
	case store.ByFinished:
		cmp, dir = "<", "DESC"
	case store.ByCreated:
		key, cmp, dir = "created_at", "<", "DESC"
	}
	if o != store.ByCreated {
		b.WriteString(` AND state = ?`)
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
// results, in the contract's order; the cursor is keyset (the last row's
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
	if o != store.ByCreated {
		args = append(args, string(p.State))
	}
	named := 0
	if p.Name != "" {
		named = 1
		args = append(args, p.Name)
	}
	pa, pb := pullArgs(p.Pull)
	args = append(args, pa, pb, key, id, limit+1)
	rows, err := s.reader(listQueries[o][named]).QueryContext(ctx, args...)
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
