package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"strings"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

var (
	// qClaimAny asks the read pool whether anything is due, so that a
	// claim on an idle queue never takes the write lock.
	qClaimAny = define(onReader, `SELECT 1 FROM tasks
		WHERE instance_id = ? AND queue = ? AND state IN ('PENDING', 'RETRY_WAIT') AND run_at <= ?
		AND `+routeSQL+`
		LIMIT 1`)
	// qRunningQueue counts a queue's RUNNING tasks through tasks_running.
	qRunningQueue = define(onWriter, `SELECT count(*) FROM tasks
		WHERE instance_id = ? AND queue = ? AND state = 'RUNNING'`)
	// qRunningInstance counts the RUNNING tasks of an instance's push
	// queues (a queue's mode never changes, so they are its RUNNING push
	// tasks), queue by queue through tasks_running alone: the count reads
	// no task row. Asking each row's pull column instead read up to
	// maxInFlight rows from the table on every claim, on the writer. CROSS
	// JOIN keeps queues the outer loop (SQLite's rule for it) whatever the
	// statistics say.
	qRunningInstance = define(onWriter, `SELECT count(*) FROM queues AS q
		CROSS JOIN tasks AS t ON t.instance_id = q.instance_id AND t.queue = q.name AND t.state = 'RUNNING'
		WHERE q.instance_id = ? AND q.mode = 'push'`)
	// qBucketGet reads whether a queue is paused and its rate bucket;
	// qBucketSet writes the bucket.
	qBucketGet = define(onWriter, `SELECT paused, rate_tokens, rate_at FROM queues WHERE instance_id = ? AND name = ?`)
	qBucketSet = define(onWriter, `UPDATE queues SET rate_tokens = ?, rate_at = ? WHERE instance_id = ? AND name = ?`)
	// qClaimDue reads one queue's due tasks in claim order
	// (task.ClaimOrder): the prioritized ones from tasks_urgent (highest
	// priority first, each in runAt order), then those of priority 0 from
	// tasks_due in runAt order; a queue without prioritized tasks costs the
	// first part one probe of an empty index. Each row comes with its
	// rowid, by which qClaimSetN writes it back in the same transaction
	// (the write lock keeps it from moving). Its limit is a CAST, not a
	// bare parameter: SQLite's planner reads a bare LIMIT ?'s value and so
	// recompiles the statement whenever it changes, which a push claim's
	// limit (the free slots) does on nearly every call. Its parameters are
	// the instance, the queue and now (?1–?3), routeArgs' four (?4–?7) and
	// the limit (?8).
	qClaimDue = define(onFast, `SELECT * FROM (SELECT `+cols("", taskCols)+`, rowid FROM tasks
		WHERE instance_id = ?1 AND queue = ?2 AND state IN ('PENDING', 'RETRY_WAIT') AND run_at <= ?3
		AND priority > 0 AND `+routeSQLAt(4)+`
		ORDER BY priority DESC, run_at, id LIMIT CAST(?8 AS INTEGER))
	UNION ALL
	SELECT * FROM (SELECT `+cols("", taskCols)+`, rowid FROM tasks
		WHERE instance_id = ?1 AND queue = ?2 AND state IN ('PENDING', 'RETRY_WAIT') AND run_at <= ?3
		AND priority = 0 AND `+routeSQLAt(4)+`
		ORDER BY run_at, id LIMIT CAST(?8 AS INTEGER))
	LIMIT CAST(?8 AS INTEGER)`)
	// qClaimSetN holds, by chunk size, the UPDATE that stores what
	// task.Claim changed in that many tasks. Each entry names its row by
	// the rowid qClaimDue read, so the planner can only walk the entries
	// and seek each row in the table itself, without the key's index.
	qClaimSetN = defineChunked(onFast, 1+len(claimSetNames), func(rows string) string {
		var set []string
		for _, c := range claimSetNames {
			set = append(set, c+" = c."+c)
		}
		return `WITH c(rid, ` + strings.Join(claimSetNames, ", ") + `) AS (VALUES ` + rows + `)
			UPDATE tasks SET ` + strings.Join(set, ", ") + ` FROM c
			WHERE tasks.rowid = c.rid`
	})
)

// claimUniformNames are the columns of claimSetNames that task.Claim
// leaves the same in every task of a usual claim (one queue, one time,
// one lease length), and qClaimSetUniformN binds once per chunk.
var claimUniformNames = []string{"state", "max_attempts", "started_at", "deadline_at", "lease_expires_at"}

// qClaimSetUniformN is qClaimSetN for a chunk whose tasks all have the
// same claimUniformNames values (claimUniform): each entry carries only
// its rowid, attempt and lease id, and the shared values are bound once,
// after the entries.
var qClaimSetUniformN = defineChunked(onFast, 3, func(rows string) string {
	set := append([]string{"attempt = c.attempt", "lease_id = c.lease_id"},
		setOnce(claimUniformNames, 3*strings.Count(rows, "("))...) // the entries' parameters come first
	return `WITH c(rid, attempt, lease_id) AS (VALUES ` + rows + `)
			UPDATE tasks SET ` + strings.Join(set, ", ") + ` FROM c
			WHERE tasks.rowid = c.rid`
})

// routeSQL is store.RouteFilter as a condition on a task row; its four
// parameters are routeArgs'.
var routeSQL = strings.NewReplacer("?A", "?", "?B", "?", "?C", "?", "?D", "?").Replace(routeSQLTemplate)

// routeSQLAt is routeSQL with its parameters numbered from n (?n to ?n+3).
func routeSQLAt(n int) string {
	return strings.NewReplacer("?A", "?"+strconv.Itoa(n), "?B", "?"+strconv.Itoa(n+1), "?C", "?"+strconv.Itoa(n+2),
		"?D", "?"+strconv.Itoa(n+3)).Replace(routeSQLTemplate)
}

// routeSQLTemplate is routeSQL with its parameters named ?A–?D.
const routeSQLTemplate = `(?A OR created_at <= ?B OR CASE WHEN target IS NULL THEN ?C
	ELSE coalesce(json_extract(target, '$.function'), '') = ''
		OR json_extract(target, '$.function') IN (SELECT value FROM json_each(?D)) END)`

// routeArgs are routeSQL's parameters for p.
func routeArgs(p *store.ClaimParams) []any {
	f := p.Route()
	return []any{f.All, f.ExpiredBefore, f.QueueOK, f.ServedJSON}
}

// claimSetNames are the columns task.Claim changes.
var claimSetNames = []string{"state", "attempt", "max_attempts", "started_at", "deadline_at", "lease_id", "lease_expires_at"}

// TaskClaim claims up to p.Limit due tasks of p.Queue in runAt order (ties
// by id) in one write transaction: each is moved to RUNNING by task.Claim
// with a fresh lease, all are written back in a few multi-row statements,
// and they are returned with their payloads. The transaction's write lock
// keeps two claimers, in this process or another, from ever getting the
// same task. A queue with nothing due is answered from the read pool
// without taking the write lock.
func (s *Store) TaskClaim(ctx context.Context, p *store.ClaimParams) ([]*task.Task, error) {
	if p.Limit <= 0 {
		return []*task.Task{}, nil
	}
	if p.Queue == nil || p.NewLeaseID == nil {
		return nil, task.Errorf(task.CodeInternal, "store: TaskClaim needs a queue and NewLeaseID")
	}
	q := p.Queue
	var one int
	switch err := s.reader(qClaimAny).QueryRowContext(ctx, append([]any{q.InstanceID, q.Name, p.Now}, routeArgs(p)...)...).Scan(&one); {
	case errors.Is(err, sql.ErrNoRows):
		return []*task.Task{}, nil
	case err != nil:
		return nil, interpretError(err)
	}
	var out []*task.Task
	err := s.write(ctx, func(w *wtx) error {
		var err error
		out, _, err = w.claimIn(p, nil)
		return err
	})
	if err != nil {
		return nil, err
	}
	if out == nil {
		out = []*task.Task{}
	}
	return out, nil
}

// claimIn makes p's claim in w's transaction, over the queue's due tasks
// and added, tasks an add is about to insert (TaskAddClaim; nil for
// TaskClaim): up to the claim's limits (claimLimit), the first of both in
// runAt order, ties by id, trimmed to p's function slots
// (store.AddClaimPicks). The due tasks it takes are moved to RUNNING by
// task.Claim and written back (claimSet); the added ones it takes are
// returned as claimed copies by position in added, for the caller to
// insert. The rate bucket pays a token for each. It returns every task it
// claimed, in claim order.
func (w *wtx) claimIn(p *store.ClaimParams, added []*task.Task) ([]*task.Task, map[int]*task.Task, error) {
	q := p.Queue
	limit, tokens, err := w.claimLimit(p)
	if err != nil || limit <= 0 {
		return nil, nil, err
	}
	var (
		due  []*task.Task
		rids []int64
	)
	var size store.ClaimSize
	err = w.queryFast(qClaimDue, append(append([]any{q.InstanceID, q.Name, p.Now}, routeArgs(p)...), limit), func(row driverRow) error {
		if size.Past(p) {
			return nil // Keep would not take it: it is not kept in memory
		}
		var rid int64
		t, err := store.ScanTask(store.ScanWith{Scanner: row, Extra: &rid}, true)
		if err != nil {
			return err
		}
		due, rids = append(due, t), append(rids, rid)
		size.Add(t)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	picks := store.AddClaimPicks(p, due, added, limit)
	claimed := make([]*task.Task, 0, len(picks))
	var (
		takenAdded map[int]*task.Task
		takenDue   []*task.Task
		takenRids  []int64
	)
	for _, pk := range picks {
		var t *task.Task
		if pk.Due {
			t = due[pk.I]
		} else {
			c := *added[pk.I]
			t = &c
		}
		if err := t.Claim(q, p.Now, p.NewLeaseID(), p.LeaseMs); err != nil {
			return nil, nil, err
		}
		if pk.Due {
			takenDue, takenRids = append(takenDue, t), append(takenRids, rids[pk.I])
		} else {
			if takenAdded == nil {
				takenAdded = make(map[int]*task.Task, len(picks))
			}
			takenAdded[pk.I] = t
		}
		claimed = append(claimed, t)
	}
	if err := w.claimSet(takenDue, takenRids); err != nil {
		return nil, nil, err
	}
	w.s.leases.granted(takenDue, takenRids)
	if p.Rate > 0 {
		if _, err := w.exec(qBucketSet, tokens-float64(len(claimed)), p.Now, q.InstanceID, q.Name); err != nil {
			return nil, nil, err
		}
	}
	return claimed, takenAdded, nil
}

// claimSet writes back what task.Claim changed in tasks, each named by its
// rowid (rids[i] is tasks[i]'s), in a few multi-row statements: with the
// values all tasks share bound once when they share them (claimUniform).
func (w *wtx) claimSet(tasks []*task.Task, rids []int64) error {
	uniform := claimUniform(tasks)
	width := 1 + len(claimSetNames)
	args := make([]any, 0, width*min(len(tasks), chunkSizes[0]))
	for _, n := range chunks(len(tasks)) {
		args = args[:0]
		q := qClaimSetN[n]
		if uniform {
			q = qClaimSetUniformN[n]
			for i, t := range tasks[:n] {
				args = append(args, rids[i], t.Attempt, t.LeaseID)
			}
			t := tasks[0]
			args = append(args, string(t.State), t.MaxAttempts, t.StartedAt, t.DeadlineAt, t.LeaseExpiresAt)
		} else {
			for i, t := range tasks[:n] {
				args = append(args, rids[i], string(t.State), t.Attempt, t.MaxAttempts, t.StartedAt,
					t.DeadlineAt, t.LeaseID, t.LeaseExpiresAt)
			}
		}
		tasks, rids = tasks[n:], rids[n:]
		r, err := w.execFast(q, args)
		if err != nil {
			return interpretError(err)
		}
		if got, err := affected(r); err != nil {
			return err
		} else if got != n {
			return task.Errorf(task.CodeInternal, "store: claimed %d tasks but wrote %d", n, got)
		}
	}
	return nil
}

// claimUniform says whether task.Claim left every task of tasks with the
// same claimUniformNames values.
func claimUniform(tasks []*task.Task) bool {
	for _, t := range tasks[min(1, len(tasks)):] {
		f := tasks[0]
		if t.State != f.State || t.MaxAttempts != f.MaxAttempts || t.StartedAt != f.StartedAt ||
			t.DeadlineAt != f.DeadlineAt || t.LeaseExpiresAt != f.LeaseExpiresAt {
			return false
		}
	}
	return true
}

// claimLimit is how many tasks p may claim now under the queue's and the
// instance's caps and the queue's rate bucket, and the bucket's tokens now.
// A queue whose row says it is paused (or that is gone) claims none,
// whatever p.Queue, the caller's copy, says.
func (w *wtx) claimLimit(p *store.ClaimParams) (int, float64, error) {
	q, limit := p.Queue, p.Limit
	var paused bool
	var tokens float64
	var at int64
	switch err := w.queryRow(qBucketGet, q.InstanceID, q.Name).Scan(&paused, &tokens, &at); {
	case errors.Is(err, sql.ErrNoRows):
		return 0, 0, nil
	case err != nil:
		return 0, 0, err
	case paused:
		return 0, 0, nil
	}
	count := func(qq query, args ...any) (int, error) {
		var n int
		err := w.queryRow(qq, args...).Scan(&n)
		return n, err
	}
	if p.MaxRunning > 0 {
		n, err := count(qRunningQueue, q.InstanceID, q.Name)
		if err != nil {
			return 0, 0, err
		}
		limit = min(limit, p.MaxRunning-n)
	}
	if p.InstanceMaxRunning > 0 && limit > 0 {
		n, err := count(qRunningInstance, q.InstanceID)
		if err != nil {
			return 0, 0, err
		}
		limit = min(limit, p.InstanceMaxRunning-n)
	}
	if p.Rate > 0 && limit > 0 {
		tokens = store.Refill(tokens, at, p.Now, p.Rate, p.Burst)
		limit = min(limit, int(tokens))
	}
	return limit, tokens, nil
}
