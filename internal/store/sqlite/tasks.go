package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"slices"
	"strings"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// qTaskInsertN holds, by chunk size, the multi-row INSERT of that many
// tasks. A row whose id or name is taken is skipped (DO NOTHING), and
// RETURNING names the rows stored.
var qTaskInsertN = defineChunked(onWriter, len(taskCols), func(rows string) string {
	return `INSERT INTO tasks (` + cols("", taskCols) + `) VALUES ` + rows +
		` ON CONFLICT DO NOTHING RETURNING instance_id, id`
})

// qTaskInsertPlainN is qTaskInsertN without ON CONFLICT and RETURNING, for
// a chunk of unnamed tasks whose ids are all expected to be new: any taken
// id fails the statement, which then writes nothing (SQLite undoes the
// statement, not the transaction), and insertTasks sends that chunk again
// with qTaskInsertN.
var qTaskInsertPlainN = defineChunked(onFast, len(taskCols), func(rows string) string {
	return `INSERT INTO tasks (` + cols("", taskCols) + `) VALUES ` + rows
})

// qTaskFinishN holds, by chunk size, the fenced UPDATE of that many tasks:
// a row changes only while it is RUNNING under the lease its entry carries
// (fence) and that lease expires after the entry's live_at
// (store.FinishParams.LiveAfter), and RETURNING names the rows changed. Each entry brings its own
// instance, so the planner can only walk the entries and seek each task by
// its key.
var qTaskFinishN = defineChunked(onWriter, 4+len(taskSetNames), func(rows string) string {
	return finishSQL(rows) + ` RETURNING tasks.instance_id, tasks.id`
})

// qTaskFinishPlainN is qTaskFinishN without RETURNING, for a chunk whose
// writes are all expected to apply: the count of changed rows tells
// whether they did, without a row to read back for each (finishRound).
var qTaskFinishPlainN = defineChunked(onFast, 4+len(taskSetNames), finishSQL)

// qTaskFinishByRowN is qTaskFinishPlainN with each task named by the
// rowid its claim read (leaseRows) instead of its key.
var qTaskFinishByRowN = defineChunked(onFast, 3+len(taskSetNames), func(rows string) string {
	return finishSQLBy(rows, finishByRow, taskSetNames, nil)
})

// finishSharedNames are the columns of taskSetNames that task.Finish
// leaves the same in every task of a usual batch (its lease and attempt
// times cleared; the same end and error). qTaskFinishSharedN and
// qTaskFinishByRowSharedN bind them once per chunk whose entries share
// them (finishShared).
var finishSharedNames = []string{"state", "started_at", "deadline_at", "lease_id", "lease_expires_at", "last_error"}

// finishOwnNames are the other columns of taskSetNames, which each entry
// carries.
var finishOwnNames = slices.DeleteFunc(slices.Clone(taskSetNames), func(c string) bool {
	return slices.Contains(finishSharedNames, c)
})

// qTaskFinishSharedN and qTaskFinishByRowSharedN are qTaskFinishPlainN
// and qTaskFinishByRowN for a chunk whose entries share the
// finishSharedNames values: those are bound once, after the entries.
var (
	qTaskFinishSharedN = defineChunked(onFast, 4+len(finishOwnNames), func(rows string) string {
		return finishSQLBy(rows, finishByKey, finishOwnNames, finishSharedNames)
	})
	qTaskFinishByRowSharedN = defineChunked(onFast, 3+len(finishOwnNames), func(rows string) string {
		return finishSQLBy(rows, finishByRow, finishOwnNames, finishSharedNames)
	})
)

// finishSQL is the fenced UPDATE of the entries in rows, each naming its
// task by key.
func finishSQL(rows string) string {
	return finishSQLBy(rows, finishByKey, taskSetNames, nil)
}

// finishBy says how a finish's entries name their tasks: the names of
// their first columns and the condition that finds the row.
type finishBy struct{ names, match string }

var (
	finishByKey = finishBy{"instance_id, id", "tasks.instance_id = c.instance_id AND tasks.id = c.id"}
	finishByRow = finishBy{"rid", "tasks.rowid = c.rid"}
)

// finishSQLBy is the fenced UPDATE of the entries in rows, which name
// their tasks by by and carry the values of own; the values of shared are
// bound once, after the entries.
func finishSQLBy(rows string, by finishBy, own, shared []string) string {
	width := strings.Count(by.names, ",") + 3 + len(own) // names, fence, live_at, own
	after := width * strings.Count(rows, "(")
	var set []string
	for _, c := range own {
		set = append(set, c+" = c."+c)
	}
	set = append(set, setOnce(shared, after)...)
	return `WITH c(` + by.names + `, fence, live_at, ` + strings.Join(own, ", ") + `) AS (VALUES ` + rows + `)
		UPDATE tasks SET ` + strings.Join(set, ", ") + ` FROM c
		WHERE ` + by.match + ` AND tasks.state = 'RUNNING' AND tasks.lease_id = c.fence
		AND tasks.lease_expires_at > c.live_at`
}

var (
	// qFinishSavepoint, qFinishRollbackTo and qFinishRelease bracket a
	// chunk's plain finish, so that a chunk in which some write did not
	// apply is undone and sent again with RETURNING.
	qFinishSavepoint  = define(onWriter, `SAVEPOINT finish_chunk`)
	qFinishRollbackTo = define(onWriter, `ROLLBACK TO finish_chunk`)
	qFinishRelease    = define(onWriter, `RELEASE finish_chunk`)
)

var (
	qTaskGet = define(onWriter|onReader, `SELECT `+cols("", taskCols)+` FROM tasks WHERE instance_id = ? AND id = ?`)
	// qTaskGetMany reads the tasks whose ids the JSON array in the second
	// argument lists, each by its key.
	qTaskGetMany = define(onReader, `SELECT `+cols("", taskCols)+` FROM tasks
		WHERE instance_id = ? AND id IN (SELECT value FROM json_each(?))`)
	qTaskByName = define(onWriter, `SELECT id FROM tasks WHERE instance_id = ? AND queue = ? AND name = ?`)
	// qTaskUpdate stores every field a domain method may change.
	// qTaskUpdate stores what a domain method made of a task
	// (taskUpdateArgs): the lifecycle's columns and the priority.
	qTaskUpdate = define(onWriter, `UPDATE tasks SET `+taskSetCols+`, priority = ? WHERE instance_id = ? AND id = ?`)
)

// taskSetNames are the columns the lifecycle methods change; the others
// (queue, name, payload, params, target, source, …) are fixed at add.
var taskSetNames = []string{"state", "attempt", "max_attempts", "run_at", "started_at", "deadline_at",
	"finished_at", "lease_id", "lease_expires_at", "last_error", "result", "attempts"}

// taskSetCols is taskSetNames as the SET list of an UPDATE.
var taskSetCols = strings.Join(taskSetNames, " = ?, ") + " = ?"

// taskSetArgs appends the values of taskSetNames for t.
func taskSetArgs(args []any, t *task.Task) []any {
	return append(args, string(t.State), t.Attempt, t.MaxAttempts, t.RunAt, t.StartedAt, t.DeadlineAt,
		t.FinishedAt, t.LeaseID, t.LeaseExpiresAt, t.LastError, nullBytes(t.Result), attemptsJSON(t.Attempts))
}

// taskUpdateArgs are qTaskUpdate's arguments for t.
func taskUpdateArgs(t *task.Task) []any {
	return append(taskSetArgs(make([]any, 0, len(taskSetNames)+3), t), t.Priority, t.InstanceID, t.ID)
}

// taskInsertArgs appends the values of taskCols for t.
func taskInsertArgs(args []any, t *task.Task) ([]any, error) {
	target, err := targetJSON(t.Target)
	if err != nil {
		return nil, err
	}
	return append(args, t.InstanceID, t.ID, t.Queue, nullStr(t.Name), string(t.State), boolInt(t.Pull),
		t.Attempt, t.MaxAttempts, t.RunAt, t.CreatedAt, t.StartedAt, t.DeadlineAt, t.FinishedAt, t.LeaseID,
		t.LeaseExpiresAt, t.DeadlineSeconds, t.Source, t.Depth, t.Priority, nullStr(t.DeadLetterOf), t.LastError, target,
		nullBytes(t.Params), attemptsJSON(t.Attempts), payloadBytes(t.Payload), nullBytes(t.Result)), nil
}

// insertTasks stores tasks with as few statements as the chunk sizes allow
// and reports which were stored; a task whose id or name is taken is not.
// A chunk without names is sent first as a plain insert, which costs SQLite
// less than one that checks each row for a conflict and returns the rows
// stored.
func (w *wtx) insertTasks(tasks []*task.Task) (map[[2]string]bool, error) {
	stored := make(map[[2]string]bool, len(tasks))
	args := make([]any, 0, len(taskCols)*min(len(tasks), chunkSizes[0]))
	for _, n := range chunks(len(tasks)) {
		args = args[:0]
		for _, t := range tasks[:n] {
			var err error
			if args, err = taskInsertArgs(args, t); err != nil {
				return nil, err
			}
		}
		if plain(tasks[:n]) {
			r, err := w.execFast(qTaskInsertPlainN[n], args)
			if err == nil {
				for _, t := range tasks[:n] {
					stored[[2]string{t.InstanceID, t.ID}] = true
				}
				w.insertedRunning(tasks[:n], r)
				tasks = tasks[n:]
				continue
			}
			if !isKeyTaken(err) {
				return nil, interpretError(err)
			}
		}
		rows, err := w.query(qTaskInsertN[n], args...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var key [2]string
			if err := rows.Scan(&key[0], &key[1]); err != nil {
				rows.Close()
				return nil, interpretError(err)
			}
			stored[key] = true
		}
		if err := rows.Close(); err != nil {
			return nil, interpretError(err)
		}
		if err := rows.Err(); err != nil {
			return nil, interpretError(err)
		}
		tasks = tasks[n:]
	}
	return stored, nil
}

// TaskAdd stores tasks in one transaction, each on its own: a name already
// used in its queue gets TASK_EXISTS with the existing id, a queue that does
// not exist gets NOT_FOUND, and the others are stored.
func (s *Store) TaskAdd(ctx context.Context, tasks []*task.Task) ([]store.AddResult, error) {
	if len(tasks) == 0 {
		return []store.AddResult{}, nil
	}
	res := make([]store.AddResult, len(tasks))
	err := s.write(ctx, func(w *wtx) error {
		queues := map[[2]string]bool{}
		ids := make(map[[2]string]bool, len(tasks))
		valid := make([]*task.Task, 0, len(tasks))
		for i, t := range tasks {
			res[i] = store.AddResult{}
			id := [2]string{t.InstanceID, t.ID}
			if ids[id] {
				res[i].Err = &task.Error{Code: task.CodeTaskExists, ID: t.ID, Message: "the batch holds id " + quote(t.ID) + " twice"}
				continue
			}
			ids[id] = true
			key := [2]string{t.InstanceID, t.Queue}
			ok, seen := queues[key]
			if !seen {
				var err error
				if ok, err = w.queueExists(t.InstanceID, t.Queue); err != nil {
					return err
				}
				queues[key] = ok
			}
			if !ok {
				res[i].Err = queueMissing(t)
				continue
			}
			valid = append(valid, t)
		}
		stored, err := w.insertTasks(valid)
		if err != nil {
			return err
		}
		for i, t := range tasks {
			if res[i].Err != nil {
				continue
			}
			if stored[[2]string{t.InstanceID, t.ID}] {
				res[i].Task = t
				continue
			}
			// Skipped: its name is taken in the queue, or else its id.
			res[i].Err = &task.Error{Code: task.CodeTaskExists, ID: t.ID, Message: "task id " + quote(t.ID) + " is taken"}
			if t.Name != "" {
				var id string
				err := w.queryRow(qTaskByName, t.InstanceID, t.Queue, t.Name).Scan(&id)
				if err != nil && !errors.Is(err, sql.ErrNoRows) {
					return interpretError(err)
				}
				if err == nil {
					res[i].Err = &task.Error{Code: task.CodeTaskExists, ID: id,
						Message: "a task named " + quote(t.Name) + " already exists in queue " + quote(t.Queue)}
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

func quote(s string) string { return `"` + s + `"` }

// queueMissing is an add's refusal of t, whose queue does not exist.
func queueMissing(t *task.Task) *task.Error {
	return task.Errorf(task.CodeNotFound, "queue %q not found", t.Queue)
}

// plain reports whether none of tasks is named: only an id can then be
// taken.
func plain(tasks []*task.Task) bool {
	for _, t := range tasks {
		if t.Name != "" {
			return false
		}
	}
	return true
}

// TaskGet returns one task with payload, result and attempts.
func (s *Store) TaskGet(ctx context.Context, ref store.TaskRef) (*task.Task, error) {
	instanceID, id := ref.InstanceID, ref.ID
	return scanTask(s.reader(qTaskGet).QueryRowContext(ctx, instanceID, id), true)
}

// TaskGetMany reads the tasks of instanceID with the given ids in one
// statement on the read pool.
func (s *Store) TaskGetMany(ctx context.Context, instanceID string, ids []string) (map[string]*task.Task, error) {
	if len(ids) == 0 {
		return map[string]*task.Task{}, nil
	}
	list, err := json.Marshal(ids)
	if err != nil {
		return nil, task.Errorf(task.CodeInternal, "store: encode ids: %v", err)
	}
	rows, err := s.reader(qTaskGetMany).QueryContext(ctx, instanceID, string(list))
	if err != nil {
		return nil, interpretError(err)
	}
	tasks, err := scanTasks(rows, true)
	return store.ByID(tasks), err
}

// TaskUpdate reads the task inside a write transaction, applies fn and
// stores what fn changed if fn returned nil. fn's error is returned
// unchanged and nothing is written.
func (s *Store) TaskUpdate(ctx context.Context, ref store.TaskRef, fn func(*task.Task) error) (*task.Task, error) {
	instanceID, id := ref.InstanceID, ref.ID
	var out *task.Task
	err := s.write(ctx, func(w *wtx) error {
		t, err := scanTask(w.queryRow(qTaskGet, instanceID, id), true)
		if err != nil {
			return err
		}
		if err := fn(t); err != nil {
			return err
		}
		t.InstanceID, t.ID = instanceID, id
		if _, err := w.exec(qTaskUpdate, taskUpdateArgs(t)...); err != nil {
			return err
		}
		out = t
		return nil
	})
	return out, err
}

// TaskFinish stores attempts' outcomes in one transaction, each fenced by
// its lease: a row that is no longer RUNNING under p.LeaseID, or whose
// lease expires at or before a p.LiveAt set, is left as it is and answers
// LEASE_LOST (or, its task purged, is removed: store.FinishPurged). The
// writes go out in multi-row statements; a task that appears twice in ps
// is written in order, in a later round. A dead-letter copy is added only
// with a write that applied, and only while its queue exists.
func (s *Store) TaskFinish(ctx context.Context, ps []*store.FinishParams) ([]error, error) {
	return store.FinishPurged(ctx, ps, s.taskFinish, s.removePurged)
}

// qRemovePurged removes a task purged during its attempt, still RUNNING
// under its purged lease (store.FinishPurged).
var qRemovePurged = define(onWriter, `DELETE FROM tasks WHERE instance_id = ? AND id = ? AND state = 'RUNNING' AND lease_id = ?`)

// removePurged removes the purged tasks refs name, in one write
// transaction, and reports which it removed.
func (s *Store) removePurged(ctx context.Context, refs []store.LeaseRef) ([]bool, error) {
	gone := make([]bool, len(refs))
	err := s.write(ctx, func(w *wtx) error {
		for i, r := range refs {
			res, err := w.exec(qRemovePurged, r.InstanceID, r.ID, r.LeaseID)
			if err != nil {
				return err
			}
			n, err := affected(res)
			if err != nil {
				return err
			}
			gone[i] = n == 1
		}
		return nil
	})
	return gone, err
}

// taskFinish is TaskFinish's fenced writes.
func (s *Store) taskFinish(ctx context.Context, ps []*store.FinishParams) ([]error, error) {
	res := make([]error, len(ps))
	if len(ps) == 0 {
		return res, nil
	}
	// The writes' arguments (the attempts' JSON among them) are made before
	// the transaction: the one writer, which every write transaction waits
	// for, only sends them.
	rounds := store.FinishRounds(ps)
	args := make([][]any, len(rounds))
	for r, round := range rounds {
		args[r] = finishArgs(ps, round)
	}
	err := s.write(ctx, func(w *wtx) error {
		var dead []*task.Task
		queues := map[[2]string]bool{}
		for r, round := range rounds {
			applied, err := w.finishRound(ps, round, args[r])
			if err != nil {
				return err
			}
			for _, i := range round {
				p := ps[i]
				res[i] = nil
				if !applied[[2]string{p.Task.InstanceID, p.Task.ID}] {
					res[i] = task.Errorf(task.CodeLeaseLost, "the lease is no longer held: it expired, was released, or the task was finished or leased again")
					continue
				}
				if err := w.chainEvents(p.Task); err != nil {
					return err
				}
				dl := p.DeadLetter
				if dl == nil {
					continue
				}
				key := [2]string{dl.InstanceID, dl.Queue}
				ok, seen := queues[key]
				if !seen {
					if ok, err = w.queueExists(dl.InstanceID, dl.Queue); err != nil {
						return err
					}
					queues[key] = ok
				}
				if !ok {
					s.log.Warn("dead-letter queue is gone; no copy kept", "instance", dl.InstanceID, "queue", dl.Queue, "task", p.Task.ID)
					continue
				}
				dead = append(dead, dl)
			}
		}
		stored, err := w.insertTasks(dead)
		if err != nil {
			return err
		}
		for _, dl := range dead {
			if !stored[[2]string{dl.InstanceID, dl.ID}] {
				return task.Errorf(task.CodeInternal, "store: dead-letter copy %s: its id is taken", dl.ID)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// finishWidth is how many arguments one entry of a finish carries.
var finishWidth = 4 + len(taskSetNames)

// finishArgs are the arguments of the fenced updates of ps[round...], in
// round's order, finishWidth a task.
func finishArgs(ps []*store.FinishParams, round []int) []any {
	args := make([]any, 0, finishWidth*len(round))
	for _, i := range round {
		t := ps[i].Task
		args = taskSetArgs(append(args, t.InstanceID, t.ID, ps[i].LeaseID, ps[i].LiveAfter()), t)
	}
	return args
}

// finishSharedAt and finishOwnAt are the positions in taskSetNames of
// finishSharedNames and finishOwnNames, in their orders.
var finishSharedAt, finishOwnAt = func() (shared, own []int) {
	for _, c := range finishSharedNames {
		shared = append(shared, slices.Index(taskSetNames, c))
	}
	for _, c := range finishOwnNames {
		own = append(own, slices.Index(taskSetNames, c))
	}
	return shared, own
}()

// finishShared says whether the n entries of keyed (finishArgs' form)
// share their finishSharedNames values.
func finishShared(keyed []any, n int) bool {
	for e := 1; e < n; e++ {
		for _, i := range finishSharedAt {
			if keyed[e*finishWidth+4+i] != keyed[4+i] {
				return false
			}
		}
	}
	return true
}

// finishChunkArgs builds in buf's storage the arguments of a finish chunk
// of the n entries of keyed (finishArgs' form): each entry named by its
// rowid (rids[e], byRow) or its key, and with the shared values bound once
// after the entries (shared), as the chosen statement takes them.
func finishChunkArgs(buf, keyed []any, n int, rids []int64, byRow, shared bool) []any {
	buf = buf[:0]
	for e := range n {
		entry := keyed[e*finishWidth : (e+1)*finishWidth]
		if byRow {
			buf = append(buf, rids[e])
		} else {
			buf = append(buf, entry[0], entry[1])
		}
		buf = append(buf, entry[2], entry[3]) // fence, live_at
		if !shared {
			buf = append(buf, entry[4:]...)
			continue
		}
		for _, i := range finishOwnAt {
			buf = append(buf, entry[4+i])
		}
	}
	if shared {
		for _, i := range finishSharedAt {
			buf = append(buf, keyed[4+i])
		}
	}
	return buf
}

// finishRound writes the fenced updates of ps[round...], whose arguments
// all are (finishArgs), and returns the tasks whose write applied.
func (w *wtx) finishRound(ps []*store.FinishParams, round []int, all []any) (map[[2]string]bool, error) {
	applied := make(map[[2]string]bool, len(round))
	for _, n := range chunks(len(round)) {
		args := all[:n*finishWidth]
		all = all[n*finishWidth:]
		chunk := round[:n]
		round = round[n:]
		// Most chunks apply whole: the plain UPDATE's count says so, and
		// RETURNING's rows (a temporary table filled and read back, two
		// columns a row through the driver) are not needed.
		if _, err := w.exec(qFinishSavepoint); err != nil {
			return nil, err
		}
		rids, byRow := w.s.leases.rowids(w.s.rids, args, n)
		w.s.rids = rids
		shared := finishShared(args, n)
		var q query
		switch {
		case byRow && shared:
			q = qTaskFinishByRowSharedN[n]
		case byRow:
			q = qTaskFinishByRowN[n]
		case shared:
			q = qTaskFinishSharedN[n]
		default:
			q = qTaskFinishPlainN[n]
		}
		sent := args
		if byRow || shared {
			w.s.rowArgs = finishChunkArgs(w.s.rowArgs, args, n, rids, byRow, shared)
			sent = w.s.rowArgs
		}
		res, err := w.execFast(q, sent)
		clear(w.s.rowArgs)
		if err != nil {
			return nil, interpretError(err)
		}
		w.s.leases.forget(args, n) // finished, or lost: no later finish comes with these leases
		changed, err := affected(res)
		if err != nil {
			return nil, err
		}
		if changed == n {
			if byRow {
				w.s.finishedByRow += n
			}
			if _, err := w.exec(qFinishRelease); err != nil {
				return nil, err
			}
			for _, i := range chunk {
				applied[[2]string{ps[i].Task.InstanceID, ps[i].Task.ID}] = true
			}
			continue
		}
		if _, err := w.exec(qFinishRollbackTo); err != nil {
			return nil, err
		}
		if _, err := w.exec(qFinishRelease); err != nil {
			return nil, err
		}
		rows, err := w.query(qTaskFinishN[n], args...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var key [2]string
			if err := rows.Scan(&key[0], &key[1]); err != nil {
				rows.Close()
				return nil, interpretError(err)
			}
			applied[key] = true
		}
		if err := rows.Close(); err != nil {
			return nil, interpretError(err)
		}
		if err := rows.Err(); err != nil {
			return nil, interpretError(err)
		}
	}
	return applied, nil
}
