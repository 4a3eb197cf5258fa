package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// taskRowSpec are the stored columns of a task as the arrays of the
// set-based INSERT carry them ("name type"); taskRows holds them.
var taskRowSpec = []string{
	"instance_id text", "id text", "queue text", "name text", "state text", "pull bool",
	"attempt int4", "max_attempts int4", "run_at int8", "created_at int8", "started_at int8",
	"deadline_at int8", "finished_at int8", "lease_id text", "lease_expires_at int8",
	"deadline_seconds int4", "source text", "depth int4", "priority int2", "dead_letter_of text", "last_error text",
	"target text", "attempts text", "params bytea", "payload bytea", "result bytea",
}

// taskRows holds tasks column by column, in taskRowSpec's order.
type taskRows struct {
	instanceID, id, queue, name, state        []string
	pull                                      []bool
	attempt, maxAttempts                      []int32
	runAt, createdAt, startedAt, deadlineAt   []int64
	finishedAt                                []int64
	leaseID                                   []string
	leaseExpiresAt                            []int64
	deadlineSeconds                           []int32
	source                                    []string
	depth                                     []int32
	priority                                  []int16
	deadLetterOf, lastError, target, attempts []string
	params, payload, result                   [][]byte
}

// add appends t.
func (r *taskRows) add(t *task.Task) error {
	target, err := targetJSON(t.Target)
	if err != nil {
		return err
	}
	attempts := attemptsJSON(t.Attempts)
	r.instanceID = append(r.instanceID, t.InstanceID)
	r.id = append(r.id, t.ID)
	r.queue = append(r.queue, t.Queue)
	r.name = append(r.name, t.Name)
	r.state = append(r.state, string(t.State))
	r.pull = append(r.pull, t.Pull)
	r.attempt = append(r.attempt, int32(t.Attempt))
	r.maxAttempts = append(r.maxAttempts, int32(t.MaxAttempts))
	r.runAt = append(r.runAt, t.RunAt)
	r.createdAt = append(r.createdAt, t.CreatedAt)
	r.startedAt = append(r.startedAt, t.StartedAt)
	r.deadlineAt = append(r.deadlineAt, t.DeadlineAt)
	r.finishedAt = append(r.finishedAt, t.FinishedAt)
	r.leaseID = append(r.leaseID, t.LeaseID)
	r.leaseExpiresAt = append(r.leaseExpiresAt, t.LeaseExpiresAt)
	r.deadlineSeconds = append(r.deadlineSeconds, int32(t.DeadlineSeconds))
	r.source = append(r.source, t.Source)
	r.depth = append(r.depth, int32(t.Depth))
	r.priority = append(r.priority, int16(t.Priority))
	r.deadLetterOf = append(r.deadLetterOf, t.DeadLetterOf)
	r.lastError = append(r.lastError, t.LastError)
	r.target = append(r.target, target)
	r.attempts = append(r.attempts, attempts)
	r.params = append(r.params, nullBytes(t.Params))
	r.payload = append(r.payload, payloadBytes(t.Payload))
	r.result = append(r.result, nullBytes(t.Result))
	return nil
}

// args returns the arrays in taskRowSpec's order.
func (r *taskRows) args() []any {
	return []any{
		r.instanceID, r.id, r.queue, r.name, r.state, r.pull, r.attempt, r.maxAttempts, r.runAt,
		r.createdAt, r.startedAt, r.deadlineAt, r.finishedAt, r.leaseID, r.leaseExpiresAt,
		r.deadlineSeconds, r.source, r.depth, r.priority, r.deadLetterOf, r.lastError, r.target, r.attempts,
		r.params, r.payload, r.result,
	}
}

// qTaskInsert stores a batch of tasks in one statement, each on its own:
//   - c is the batch, one row per task with its position (ord);
//   - q holds (key share) the batch's queues that exist, so that none is
//     deleted before commit and a task never lands in a deleted queue;
//   - ins inserts the tasks of existing queues in batch order, skipping
//     (DO NOTHING) any whose id or name is taken, by a stored task or by
//     an earlier one of the batch;
//
// and the final SELECT reports, per task: whether its queue exists, whether
// it was stored, and otherwise the id of the task holding its name (stored
// before, or earlier in the batch).
var qTaskInsert = taskInsertSQL(true)

// qTaskInsertPlain is qTaskInsert without ON CONFLICT, for a batch of
// unnamed tasks whose ids are all expected to be new (taskAdd's first
// try): a plain insert costs PostgreSQL less per row than a speculative one
// (no pre-check of the unique indexes, no confirmation record), and any
// taken id fails the whole statement, which writes nothing, with a unique
// violation; taskAdd then sends the batch again with qTaskInsert.
var qTaskInsertPlain = taskInsertSQL(false)

// qTaskInsertOneQueue is qTaskInsertPlain for a batch whose tasks are all
// of one queue, the queue's key in the two parameters after the arrays:
// the queue is held (key share) by a one-row sub-select that every task is
// joined to, so the statement stores every task or, when the queue does
// not exist, none, and its row count says which. Without the CTEs, the
// RETURNING and the joins back to the batch it costs PostgreSQL less per
// statement: after an idle pause, a one-task add's transaction took ~0.16
// ms less (docs/benchmarks-history.md, the thirteenth session).
var qTaskInsertOneQueue = func() string {
	names, values := taskInsertColumns()
	n := len(taskRowSpec)
	return `INSERT INTO tasks (` + strings.Join(names, ", ") + `)
		SELECT ` + strings.Join(values, ", ") + `
		FROM ` + unnestSQL(1, "c", taskRowSpec) + `,
		(SELECT FROM queues WHERE instance_id = $` + strconv.Itoa(n+1) + ` AND name = $` + strconv.Itoa(n+2) + ` FOR KEY SHARE) AS q
		ORDER BY c.ord`
}()

// qTaskInsertOne is qTaskInsertOneQueue for a batch of one task, its
// columns as plain parameters rather than arrays of one, and the queue's
// key in the two after them. Executing it costs PostgreSQL less than half
// of qTaskInsertOneQueue's for the same row (0.11–0.12 ms against
// 0.23–0.29 in pg_stat_statements, four callers adding one task each):
// there is no set-returning function over 26 arrays, no sort and no join
// to set up and run, and the parameters bind as scalars. A single add is
// the common call (a web handler adding its one task).
var qTaskInsertOne = func() string {
	names, values := taskInsertColumns()
	for i, s := range taskRowSpec {
		_, typ, _ := strings.Cut(s, " ")
		values[i] = strings.Replace(values[i], "c."+names[i], "$"+strconv.Itoa(i+1)+"::"+typ, 1)
	}
	n := len(taskRowSpec)
	return `INSERT INTO tasks (` + strings.Join(names, ", ") + `)
		SELECT ` + strings.Join(values, ", ") + `
		FROM (SELECT FROM queues WHERE instance_id = $` + strconv.Itoa(n+1) + ` AND name = $` + strconv.Itoa(n+2) + ` FOR KEY SHARE) AS q`
}()

// oneQueueInsert is the statement that inserts r's tasks, all of the
// queue instanceID/queue, and its arguments: qTaskInsertOne for one task,
// qTaskInsertOneQueue for more. Its row count is the tasks stored: all of
// them, or none when the queue does not exist.
func (r *taskRows) oneQueueInsert(instanceID, queue string) (string, []any) {
	args := r.args()
	if len(r.id) != 1 {
		return qTaskInsertOneQueue, append(args, instanceID, queue)
	}
	for i, a := range args {
		args[i] = firstOf(a)
	}
	return qTaskInsertOne, append(args, instanceID, queue)
}

// firstOf is the first element of one of taskRows' columns.
func firstOf(column any) any {
	switch c := column.(type) {
	case []string:
		return c[0]
	case []bool:
		return c[0]
	case []int16:
		return c[0]
	case []int32:
		return c[0]
	case []int64:
		return c[0]
	case [][]byte:
		return c[0]
	}
	panic(fmt.Sprintf("postgres: taskRows holds a column of %T", column))
}

// taskInsertColumns are the columns an insert of taskRowSpec's batch
// names, and the value it stores in each, read off the batch row c.
func taskInsertColumns() (names, values []string) {
	for _, s := range taskRowSpec {
		name, _, _ := strings.Cut(s, " ")
		names = append(names, name)
		switch name {
		case "name", "dead_letter_of":
			values = append(values, "NULLIF(c."+name+", '')")
		case "target":
			values = append(values, "NULLIF(c.target, '')::jsonb")
		case "attempts":
			values = append(values, "c.attempts::jsonb")
		default:
			values = append(values, "c."+name)
		}
	}
	return names, values
}

// taskInsertSQL is qTaskInsert, or qTaskInsertPlain without onConflict.
func taskInsertSQL(onConflict bool) string {
	names, values := taskInsertColumns()
	conflict := ""
	if onConflict {
		conflict = "ON CONFLICT DO NOTHING"
	}
	return `WITH c AS (
		SELECT * FROM ` + unnestSQL(1, "c", taskRowSpec) + `
	), q AS (
		SELECT instance_id, name FROM queues
		WHERE (instance_id, name) IN (SELECT instance_id, queue FROM c)
		FOR KEY SHARE
	), ins AS (
		INSERT INTO tasks (` + strings.Join(names, ", ") + `)
		SELECT ` + strings.Join(values, ", ") + `
		FROM c JOIN q ON q.instance_id = c.instance_id AND q.name = c.queue
		ORDER BY c.ord
		` + conflict + `
		RETURNING instance_id, id, queue, name
	)
	SELECT c.ord, q.name IS NOT NULL, ins.id IS NOT NULL,
		CASE WHEN ins.id IS NULL AND c.name <> '' THEN coalesce(
			(SELECT t.id FROM tasks AS t WHERE t.instance_id = c.instance_id AND t.queue = c.queue AND t.name = c.name),
			(SELECT i.id FROM ins AS i WHERE i.instance_id = c.instance_id AND i.queue = c.queue AND i.name = c.name))
		END
	FROM c
	LEFT JOIN q ON q.instance_id = c.instance_id AND q.name = c.queue
	LEFT JOIN ins ON ins.instance_id = c.instance_id AND ins.id = c.id
	ORDER BY c.ord`
}

// querier is a pool or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// inserted is the outcome of one task of insertTasks.
type inserted struct {
	queueOK bool   // its queue exists
	stored  bool   // it was stored
	holder  string // when not stored: the id of the task holding its name, if seen
}

// insertTasks stores tasks (whose ids must differ) with qTaskInsert and
// returns each one's outcome, in order. With plain, a batch without names
// is first sent with qTaskInsertPlain; only a pool may be given then, not
// a transaction, which the plain statement's unique violation would abort.
func insertTasks(ctx context.Context, db querier, tasks []*task.Task, plain bool) ([]inserted, error) {
	out := make([]inserted, len(tasks))
	if len(tasks) == 0 {
		return out, nil
	}
	var r taskRows
	for _, t := range tasks {
		plain = plain && t.Name == ""
		if err := r.add(t); err != nil {
			return nil, err
		}
	}
	if pool, ok := db.(*pgxpool.Pool); ok && plain && oneQueue(tasks) {
		err := insertOneQueue(ctx, pool, &r, tasks[0], out)
		if err == nil {
			return out, nil
		}
		if !isUniqueViolation(err) {
			return nil, err
		}
		clear(out)
	} else if plain {
		err := readInserted(ctx, db, qTaskInsertPlain, r.args(), out)
		if err == nil {
			return out, nil
		}
		if !isUniqueViolation(err) {
			return nil, err
		}
		clear(out)
	}
	if err := readInserted(ctx, db, qTaskInsert, r.args(), out); err != nil {
		return nil, err
	}
	return out, nil
}

// readInserted runs sql, qTaskInsert or qTaskInsertPlain, and reads each
// task's outcome into out. A unique violation is returned as it is, the
// other errors translated. On the pool it runs in a transaction of its own
// with its generic plan (insertGeneric).
func readInserted(ctx context.Context, db querier, sql string, args []any, out []inserted) error {
	if pool, ok := db.(*pgxpool.Pool); ok {
		return insertGeneric(ctx, pool, sql, args, out)
	}
	rows, err := db.Query(ctx, sql, args...)
	if err != nil {
		return insertError(err)
	}
	defer rows.Close()
	return scanInserted(rows, out)
}

// insertGeneric runs the insert sql in a transaction of its own, sent
// with its BEGIN and COMMIT in one round trip, that asks PostgreSQL for
// the statement's generic plan. Planning it for its values, as PostgreSQL
// does for the first five runs of a statement on a connection and then
// whenever the generic plan's estimate is higher (it is: the plan cannot
// know the arrays' lengths), costs more than a small batch's insert itself
// (0.4–1 ms against 0.2–0.4 in the server's statement log), on the path
// from an add to its delivery; the plan is the same for every batch. SET
// LOCAL ends with this transaction (the claim sets it in its own).
func insertGeneric(ctx context.Context, pool *pgxpool.Pool, sql string, args []any, out []inserted) error {
	return insertTx(ctx, pool, sql, args, func(br pgx.BatchResults) error {
		rows, err := br.Query()
		if err != nil {
			return insertError(err)
		}
		defer rows.Close()
		return scanInserted(rows, out)
	})
}

// insertTx sends the insert sql with its BEGIN, its generic plan's
// setting and its COMMIT in one round trip, and reads the insert's result
// with read, which must return a unique violation as it is (insertError).
// The transaction is rolled back if anything fails.
func insertTx(ctx context.Context, pool *pgxpool.Pool, sql string, args []any, read func(pgx.BatchResults) error) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return interpretError(err)
	}
	defer conn.Release()
	b := &pgx.Batch{}
	b.Queue(`BEGIN`)
	b.Queue(`SET LOCAL plan_cache_mode = force_generic_plan`)
	b.Queue(sql, args...)
	b.Queue(`COMMIT`)
	br := conn.SendBatch(ctx, b)
	err = func() error {
		for range 2 {
			if _, err := br.Exec(); err != nil {
				return interpretError(err)
			}
		}
		if err := read(br); err != nil {
			return err
		}
		if _, err := br.Exec(); err != nil {
			return interpretError(err)
		}
		return nil
	}()
	if cerr := br.Close(); err == nil && cerr != nil {
		err = insertError(cerr)
	}
	if err != nil {
		abort(ctx, conn)
	}
	return err
}

// oneQueue reports whether tasks are all of the first one's queue.
func oneQueue(tasks []*task.Task) bool {
	for _, t := range tasks[1:] {
		if t.InstanceID != tasks[0].InstanceID || t.Queue != tasks[0].Queue {
			return false
		}
	}
	return true
}

// insertOneQueue inserts the batch r, whose tasks are all of first's
// queue (oneQueueInsert), in a transaction of its own (insertTx), and
// records in out each task stored, or each task's queue missing. A unique
// violation is returned as it is.
func insertOneQueue(ctx context.Context, pool *pgxpool.Pool, r *taskRows, first *task.Task, out []inserted) error {
	sql, args := r.oneQueueInsert(first.InstanceID, first.Queue)
	return insertTx(ctx, pool, sql, args, func(br pgx.BatchResults) error {
		tag, err := br.Exec()
		if err != nil {
			return insertError(err)
		}
		return markOneQueue(tag.RowsAffected(), out)
	})
}

// markOneQueue records in out what qTaskInsertOneQueue's row count n says
// of the batch: every task stored, or (none stored) their queue missing.
func markOneQueue(n int64, out []inserted) error {
	switch n {
	case int64(len(out)):
		for i := range out {
			out[i] = inserted{queueOK: true, stored: true}
		}
	case 0:
		clear(out) // the queue does not exist
	default:
		return task.Errorf(task.CodeInternal, "store: inserted %d tasks of %d", n, len(out))
	}
	return nil
}

// scanInserted reads the rows of qTaskInsert or qTaskInsertPlain into out,
// a task's outcome at its position; it does not close rows.
func scanInserted(rows pgx.Rows, out []inserted) error {
	tasks := out
	n := 0
	for rows.Next() {
		var (
			ord    int64
			holder *string
			res    inserted
		)
		if err := rows.Scan(&ord, &res.queueOK, &res.stored, &holder); err != nil {
			return insertError(err)
		}
		if holder != nil {
			res.holder = *holder
		}
		if ord < 1 || int(ord) > len(tasks) {
			return task.Errorf(task.CodeInternal, "store: insert answered for task %d of %d", ord, len(tasks))
		}
		out[ord-1] = res
		n++
	}
	if err := rows.Err(); err != nil {
		return insertError(err)
	}
	if n != len(tasks) {
		return task.Errorf(task.CodeInternal, "store: insert answered for %d tasks of %d", n, len(tasks))
	}
	return nil
}

// addRounds bounds how often TaskAdd sends again a task refused for a name
// whose holder its statement could not see (added concurrently, after the
// statement began, or deleted since).
const addRounds = 3

// TaskAdd stores tasks in one statement (a batch of unnamed tasks: with
// COPY when it is large, see copyTasks, or else first as a plain insert,
// see qTaskInsertPlain; either is sent again as the statement below if it
// meets a taken id or a missing queue), each on its own: a name already
// used in its queue gets TASK_EXISTS with the existing id (duplicates within
// the batch included: the first is stored), an id already used gets
// TASK_EXISTS with that id, a queue that does not exist gets NOT_FOUND, and
// the others are stored.
func (s *Store) TaskAdd(ctx context.Context, tasks []*task.Task) ([]store.AddResult, error) {
	tryCopy := len(tasks) >= copyMinBatch && copyable(tasks)
	if tryCopy {
		switch ok, err := copyTasks(ctx, s.pool, tasks); {
		case err != nil:
			return nil, err
		case ok:
			res := make([]store.AddResult, len(tasks))
			for i, t := range tasks {
				res[i].Task = t
			}
			return res, nil
		}
	}
	// After a COPY that met a taken id or a missing queue, a plain insert
	// would fail too.
	return taskAdd(ctx, s.pool, tasks, !tryCopy)
}

// copyable reports whether copyTasks may take tasks: none is named, and
// their ids differ.
func copyable(tasks []*task.Task) bool {
	ids := make(map[[2]string]bool, len(tasks))
	for _, t := range tasks {
		id := [2]string{t.InstanceID, t.ID}
		if t.Name != "" || ids[id] {
			return false
		}
		ids[id] = true
	}
	return true
}

// TaskAddTx is TaskAdd inside the caller's transaction tx (the embedded
// engine's AddTx): the tasks exist if and only if tx commits. With them it
// queues a notification, which PostgreSQL delivers at the commit, so that
// every node wakes for them then.
func (s *Store) TaskAddTx(ctx context.Context, tx pgx.Tx, tasks []*task.Task) ([]store.AddResult, error) {
	res, err := taskAdd(ctx, tx, tasks, false)
	if err != nil {
		return nil, err
	}
	if _, err := tx.Exec(ctx, "SELECT pg_notify('"+wakeChannel+"', '')"); err != nil {
		return nil, interpretError(err)
	}
	return res, nil
}

// taskAdd is TaskAdd over db, a pool or a transaction (then without
// plain: see insertTasks).
func taskAdd(ctx context.Context, db querier, tasks []*task.Task, plain bool) ([]store.AddResult, error) {
	res := make([]store.AddResult, len(tasks))
	ids := make(map[[2]string]bool, len(tasks))
	send := make([]int, 0, len(tasks)) // indexes of tasks to send
	for i, t := range tasks {
		id := [2]string{t.InstanceID, t.ID}
		if ids[id] {
			res[i].Err = &task.Error{Code: task.CodeTaskExists, ID: t.ID, Message: "the batch holds id " + quote(t.ID) + " twice"}
			continue
		}
		ids[id] = true
		send = append(send, i)
	}
	for round := 1; len(send) > 0; round++ {
		batch := make([]*task.Task, len(send))
		for j, i := range send {
			batch[j] = tasks[i]
		}
		out, err := insertTasks(ctx, db, batch, plain && round == 1)
		if err != nil {
			return nil, err
		}
		var again []int
		for j, i := range send {
			t, r := tasks[i], out[j]
			switch {
			case !r.queueOK:
				res[i].Err = queueMissing(t)
			case r.stored:
				res[i].Task = t
			case r.holder != "":
				res[i].Err = &task.Error{Code: task.CodeTaskExists, ID: r.holder,
					Message: "a task named " + quote(t.Name) + " already exists in queue " + quote(t.Queue)}
			case t.Name != "" && round < addRounds:
				again = append(again, i)
			default:
				res[i].Err = &task.Error{Code: task.CodeTaskExists, ID: t.ID, Message: "task id " + quote(t.ID) + " is taken"}
			}
		}
		send = again
	}
	return res, nil
}

// insertError is interpretError, but a unique violation (of a plain
// insert) is returned as it is.
func insertError(err error) error {
	if isUniqueViolation(err) {
		return err
	}
	return interpretError(err)
}

// isUniqueViolation reports whether err is PostgreSQL's unique_violation.
func isUniqueViolation(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == sqlUniqueViolation
}

func quote(s string) string { return `"` + s + `"` }

// queueMissing is an add's refusal of t, whose queue does not exist.
func queueMissing(t *task.Task) *task.Error {
	return task.Errorf(task.CodeNotFound, "queue %q not found", t.Queue)
}
