package postgres

import (
	"context"
	"encoding/base64"
	"math"
	"strconv"
	"strings"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// listOrder is one of the three orders of a listing.
type listOrder byte

const (
	// byRunAt: PENDING (tasks_due), RUNNING (tasks_running) or RETRY_WAIT
	// (tasks_retry), soonest runAt first.
	byRunAt listOrder = 'r'
	// byFinished: SUCCEEDED, FAILED or CANCELLED (tasks_done), latest
	// finishedAt first.
	byFinished listOrder = 'f'
	// byCreated: no state filter (tasks_created), newest createdAt first.
	byCreated listOrder = 'c'
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
	switch orderOf(st) {
	case byFinished:
		key, cmp, dir = "finished_at", "<", "DESC"
	case byCreated:
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

// orderOf returns the order of a listing of state s ("" for all).
func orderOf(s task.State) listOrder {
	switch {
	case s == "":
		return byCreated
	case s.Terminal():
		return byFinished
	}
	return byRunAt
}

// keyOf is t's sort key in order o.
func keyOf(o listOrder, t *task.Task) int64 {
	switch o {
	case byFinished:
		return t.FinishedAt
	case byCreated:
		return t.CreatedAt
	}
	return t.RunAt
}

// encodeCursor makes the opaque cursor after t.
func encodeCursor(o listOrder, t *task.Task) string {
	raw := string(o) + strconv.FormatInt(keyOf(o, t), 10) + ":" + t.ID
	return base64.RawURLEncoding.EncodeToString([]byte(raw))
}

// decodeCursor reads a cursor of order o; an empty cursor starts before the
// first row.
func decodeCursor(o listOrder, c string) (key int64, id string, err error) {
	if c == "" {
		if o == byRunAt {
			return math.MinInt64, "", nil
		}
		return math.MaxInt64, "", nil
	}
	bad := task.FieldErrorf(task.CodeInvalidArgument, "cursor", "is not a cursor of this listing")
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || len(raw) < 3 || listOrder(raw[0]) != o {
		return 0, "", bad
	}
	num, id, ok := strings.Cut(string(raw[1:]), ":")
	if !ok || id == "" {
		return 0, "", bad
	}
	key, err = strconv.ParseInt(num, 10, 64)
	if err != nil {
		return 0, "", bad
	}
	return key, id, nil
}

// TaskList returns one page of a queue's tasks, without payloads or
// results, in the contract's order; the cursor is a keyset (the last row's
// sort key and id), so rows added between pages never shift a page.
func (s *Store) TaskList(ctx context.Context, p *store.ListParams) (*store.ListPage, error) {
	if p.State != "" && !p.State.Valid() {
		return nil, task.FieldErrorf(task.CodeInvalidArgument, "state", "unknown state %q", p.State)
	}
	limit := min(max(p.Limit, 1), 200)
	o := orderOf(p.State)
	key, id, err := decodeCursor(o, p.Cursor)
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
		page.Cursor = encodeCursor(o, tasks[limit-1])
	}
	return page, nil
}
