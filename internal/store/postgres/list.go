package postgres

import (
	"context"
	"strings"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// listSQL holds, by state ("" for none), the listing statement without and
// with a name filter. Each walks its index in its order from the cursor on
// (a keyset: the row comparison is an index condition), so a page costs its
// own rows and never a sort. The state is written in the statement, not
// passed: the planner can then prove a partial index's predicate in the
// generic plan it caches for a prepared statement too.
var listSQL = map[task.State][2]string{}

func init() {
	for _, st := range append([]task.State{""}, task.States...) {
		listSQL[st] = [2]string{buildListSQL(st, false), buildListSQL(st, true)}
	}
}

// buildListSQL builds the listing statement of state st. Its parameters
// are: $1 instance, $2 queue, $3 name (empty unless named), $4 pull (NULL for
// both), $5 and $6 the cursor's key and id, $7 the row limit.
func buildListSQL(st task.State, named bool) string {
	var b strings.Builder
	b.WriteString(`SELECT ` + cols("", taskListCols) + ` FROM tasks WHERE instance_id = $1 AND queue = $2`)
	key, cmp, dir := "run_at", ">", "ASC"
	switch store.OrderOf(st) {
	case store.ByFinished:
		key, cmp, dir = "finished_at", "<", "DESC"
	case store.ByCreated:
		key, cmp, dir = "created_at", "<", "DESC"
	}
	if st != "" {
		b.WriteString(` AND state = '` + string(st) + `'`)
	}
	if named {
		b.WriteString(` AND name = $3`)
	} else {
		b.WriteString(` AND $3 = ''`)
	}
	b.WriteString(` AND ($4::boolean IS NULL OR pull = $4)`)
	b.WriteString(` AND (` + key + `, id) ` + cmp + ` ($5, $6)`)
	b.WriteString(` ORDER BY ` + key + ` ` + dir + `, id ` + dir + ` LIMIT $7`)
	return b.String()
}

// TaskList returns one page of a queue's tasks, without payloads or
// results, in the listing order of store.ListParams; the cursor is a keyset (the last row's
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
	named := 0
	if p.Name != "" {
		named = 1
	}
	rows, err := s.pool.Query(ctx, listSQL[p.State][named], p.InstanceID, p.Queue, p.Name, p.Pull, key, id, limit+1)
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
	return page, nil
}
