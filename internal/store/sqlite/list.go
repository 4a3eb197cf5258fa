package sqlite

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
	// byRunAt: PENDING, RUNNING, RETRY_WAIT, soonest runAt first.
	byRunAt listOrder = 'r'
	// byFinished: SUCCEEDED, FAILED, CANCELLED, latest finishedAt first.
	byFinished listOrder = 'f'
	// byCreated: no state filter, newest createdAt first.
	byCreated listOrder = 'c'
)

// listQueries holds the statement of each order, without and with a name
// filter. Every one walks an index in its order from the cursor on, so a
// page costs its own rows and never a sort.
var listQueries = map[listOrder][2]query{}

func init() {
	for _, o := range []listOrder{byRunAt, byFinished, byCreated} {
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
func listSQL(o listOrder, named bool) string {
	var b strings.Builder
	b.WriteString(`SELECT ` + cols("", taskListCols) + ` FROM tasks WHERE instance_id = ? AND queue = ?`)
	key, cmp, dir := "sort_at", ">", "ASC"
	switch o {
	case byFinished:
		cmp, dir = "<", "DESC"
	case byCreated:
		key, cmp, dir = "created_at", "<", "DESC"
	}
	if o != byCreated {
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
// results, in the contract's order; the cursor is keyset (the last row's
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
	args := []any{p.InstanceID, p.Queue}
	if o != byCreated {
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
		page.Cursor = encodeCursor(o, tasks[limit-1])
	}
	if page.Tasks == nil {
		page.Tasks = []*task.Task{}
	}
	return page, nil
}
