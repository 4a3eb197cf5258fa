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
//
// Without a state or a name, the newest tasks come from two indexes:
// tasks_created holds every row version but the RUNNING ones, which
// tasks_running holds (a claim then writes no tasks_created entry); the
// statement takes a page from each, the RUNNING rows sorted (they are the
// work in flight), and keeps the newest.
func buildListSQL(st task.State, named bool) string {
	if st == "" && !named {
		return `(` + buildListPart(`state <> 'RUNNING'`, store.ByCreated, false) + `) UNION ALL (` +
			buildListPart(`state = 'RUNNING'`, store.ByCreated, false) + `) ORDER BY created_at DESC, id DESC LIMIT $7`
	}
	cond := ""
	if st != "" {
		cond = `state = '` + string(st) + `'`
	}
	return buildListPart(cond, store.OrderOf(st), named)
}

// buildListPart builds the listing statement of the rows that meet cond
// (all if empty) in order o.
func buildListPart(cond string, o store.ListOrder, named bool) string {
	var b strings.Builder
	b.WriteString(`SELECT ` + cols("", taskListCols) + ` FROM tasks WHERE instance_id = $1 AND queue = $2`)
	key, cmp, dir := "run_at", ">", "ASC"
	switch o {
	case store.ByFinished:
		key, cmp, dir = "finished_at", "<", "DESC"
	case store.ByCreated:
		key, cmp, dir = "created_at", "<", "DESC"
	}
	if cond != "" {
		b.WriteString(` AND ` + cond)
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
