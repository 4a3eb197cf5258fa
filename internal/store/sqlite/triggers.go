package sqlite

import (
	"context"
	"database/sql"
	"strings"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

var triggerCols = store.Columns("", store.TriggerColumns)

var (
	qTriggerInsert = define(onWriter, `INSERT INTO triggers (`+triggerCols+`) VALUES (`+
		strings.TrimSuffix(strings.Repeat("?, ", len(store.TriggerColumns)), ", ")+`)`)
	qTriggerGet     = define(onWriter|onReader, `SELECT `+triggerCols+` FROM triggers WHERE instance_id = ? AND id = ?`)
	qTriggerGetHook = define(onReader, `SELECT `+triggerCols+` FROM triggers WHERE hook_token = ?`)
	qTriggerList    = define(onReader, `SELECT `+triggerCols+` FROM triggers WHERE instance_id = ? ORDER BY created_at, id`)
	qTriggerUpdate  = define(onWriter, `UPDATE triggers SET queue = ?, enabled = ?, params = ?, payload = ?, cron = ?,
		time_zone = ?, last_tick_at = ?, next_tick_at = ?, hook_secret = ?, hook_headers = ?, on_queue = ?,
		on_succeeded = ?, on_failed = ?, fired = ?, error_count = ?, last_error = ?, last_error_at = ?, updated_at = ?,
		priority = ?, hook_signature = ?
		WHERE instance_id = ? AND id = ?`)
	qTriggerDelete = define(onWriter, `DELETE FROM triggers WHERE instance_id = ? AND id = ?`)
	qTriggerDue    = define(onReader, `SELECT `+triggerCols+` FROM triggers INDEXED BY triggers_due
		WHERE kind = 'schedule' AND enabled = 1 AND next_tick_at > 0 AND next_tick_at <= ? ORDER BY next_tick_at LIMIT ?`)
	qTriggerNextTick = define(onReader, `SELECT coalesce(min(next_tick_at), 0) FROM triggers INDEXED BY triggers_due
		WHERE kind = 'schedule' AND enabled = 1 AND next_tick_at > 0`)
	// The fire's fence: the tick applies only while the rule still waits
	// for the tick the scheduler read.
	qTriggerTick = define(onWriter, `UPDATE triggers SET last_tick_at = ?, next_tick_at = ?
		WHERE instance_id = ? AND id = ? AND next_tick_at = ? AND enabled = 1 AND kind = 'schedule'`)
	qTriggerFired = define(onWriter, `UPDATE triggers SET fired = fired + 1 WHERE instance_id = ? AND id = ?`)
	qTriggerError = define(onWriter, `UPDATE triggers SET error_count = error_count + 1, last_error = ?, last_error_at = ?
		WHERE instance_id = ? AND id = ?`)

	// A finish that ends a task SUCCEEDED or FAILED writes one event per
	// enabled task rule watching its queue for that outcome.
	qChainEvents = define(onWriter, `INSERT OR IGNORE INTO trigger_events (instance_id, rule_id, task_id, state, finished_at)
		SELECT instance_id, id, ?, ?, ? FROM triggers INDEXED BY triggers_on
		WHERE instance_id = ? AND on_queue = ? AND kind = 'task' AND enabled = 1
			AND CASE ? WHEN 'SUCCEEDED' THEN on_succeeded ELSE on_failed END = 1`)
	// qChainRules asks whether a queue has an enabled task rule, so that a
	// finish of a queue without one writes no per-task statement.
	qChainRules = define(onWriter, `SELECT EXISTS (SELECT 1 FROM triggers INDEXED BY triggers_on
		WHERE instance_id = ? AND on_queue = ? AND kind = 'task' AND enabled = 1)`)
	qEventList = define(onReader, `SELECT `+store.TriggerEventColumns+` FROM trigger_events ORDER BY seq LIMIT ?`)
	// qEventsOf reads one instance's pending chain events.
	qEventsOf = define(onReader, `SELECT `+store.TriggerEventColumns+` FROM trigger_events WHERE instance_id = ? ORDER BY seq`)
	// qEventAdd stores one chain event as a finish writes it.
	qEventAdd = define(onWriter, `INSERT OR IGNORE INTO trigger_events (instance_id, rule_id, task_id, state, finished_at) VALUES (?, ?, ?, ?, ?)`)
	// qEventBacklog counts the oldest ? pending events, along seq.
	qEventBacklog = define(onReader, `SELECT count(*), coalesce(min(finished_at), 0)
		FROM (SELECT finished_at FROM trigger_events ORDER BY seq LIMIT ?)`)
	qEventDelete = define(onWriter, `DELETE FROM trigger_events WHERE seq = ? AND instance_id = ?`)
)

// TriggerCreate stores a new rule.
func (s *Store) TriggerCreate(ctx context.Context, p *store.TriggerCreateParams) error {
	args, err := store.TriggerArgs(p.Trigger)
	if err != nil {
		return err
	}
	return s.write(ctx, func(w *wtx) error {
		_, err := w.exec(qTriggerInsert, args...)
		return err
	})
}

// TriggerGet finds one rule of an instance.
func (s *Store) TriggerGet(ctx context.Context, ref store.TriggerRef) (*task.Trigger, error) {
	return scanTrigger(s.reader(qTriggerGet).QueryRowContext(ctx, ref.InstanceID, ref.ID))
}

// TriggerGetHook finds a hook rule by its token.
func (s *Store) TriggerGetHook(ctx context.Context, ref store.HookRef) (*task.Trigger, error) {
	if ref.Token == "" {
		return nil, task.ErrNotFound
	}
	return scanTrigger(s.reader(qTriggerGetHook).QueryRowContext(ctx, ref.Token))
}

// TriggerList lists an instance's rules, oldest first.
func (s *Store) TriggerList(ctx context.Context, p *store.TriggerListParams) ([]*task.Trigger, error) {
	return s.triggers(ctx, qTriggerList, p.InstanceID)
}

// TriggerDue returns the enabled schedule rules due at p.Now.
func (s *Store) TriggerDue(ctx context.Context, p *store.TriggerDueParams) ([]*task.Trigger, error) {
	return s.triggers(ctx, qTriggerDue, p.Now, p.Limit)
}

func (s *Store) triggers(ctx context.Context, q query, args ...any) ([]*task.Trigger, error) {
	return queryTriggers(ctx, s.reader(q), args...)
}

// queryTriggers runs st (on the read pool, or bound to a read transaction)
// and scans the rules it reads.
func queryTriggers(ctx context.Context, st *sql.Stmt, args ...any) ([]*task.Trigger, error) {
	rows, err := st.QueryContext(ctx, args...)
	if err != nil {
		return nil, interpretError(err)
	}
	defer rows.Close()
	out := []*task.Trigger{}
	for rows.Next() {
		tr, err := scanTrigger(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, tr)
	}
	if err := rows.Err(); err != nil {
		return nil, interpretError(err)
	}
	return out, nil
}

// TriggerNextTick returns the earliest tick of an enabled schedule rule.
func (s *Store) TriggerNextTick(ctx context.Context) (int64, error) {
	var next int64
	if err := s.reader(qTriggerNextTick).QueryRowContext(ctx).Scan(&next); err != nil {
		return 0, interpretError(err)
	}
	return next, nil
}

// TriggerUpdate applies fn to a rule under the write lock and stores it.
func (s *Store) TriggerUpdate(ctx context.Context, ref store.TriggerRef, fn func(*task.Trigger) error) (*task.Trigger, error) {
	var out *task.Trigger
	err := s.write(ctx, func(w *wtx) error {
		tr, err := scanTrigger(w.queryRow(qTriggerGet, ref.InstanceID, ref.ID))
		if err != nil {
			return err
		}
		kind, created, token := tr.Kind, tr.CreatedAt, tr.HookToken
		if err := fn(tr); err != nil {
			return err
		}
		tr.InstanceID, tr.ID, tr.Kind, tr.CreatedAt, tr.HookToken = ref.InstanceID, ref.ID, kind, created, token
		args, err := store.TriggerArgs(tr)
		if err != nil {
			return err
		}
		// TriggerColumns: queue (3) … hook_signature (24), without kind,
		// hook_token and created_at, then the key.
		if _, err := w.exec(qTriggerUpdate, args[3], args[4], args[5], args[6], args[7], args[8], args[9], args[10],
			args[12], args[13], args[14], args[15], args[16], args[17], args[18], args[19], args[20], args[22],
			args[23], args[24], ref.InstanceID, ref.ID); err != nil {
			return err
		}
		out = tr
		return nil
	})
	return out, err
}

// TriggerDelete removes a rule (its pending events go with it, by the
// schema's trigger).
func (s *Store) TriggerDelete(ctx context.Context, ref store.TriggerRef) error {
	return s.write(ctx, func(w *wtx) error {
		r, err := w.exec(qTriggerDelete, ref.InstanceID, ref.ID)
		if err != nil {
			return err
		}
		if n, err := affected(r); err != nil || n == 0 {
			return cmpErr(err, task.ErrNotFound)
		}
		return nil
	})
}

// TriggerFire records ticks of schedule rules and adds their tasks, in one
// write transaction, each fenced on the tick its rule waited for.
func (s *Store) TriggerFire(ctx context.Context, ps []*store.TriggerFireParams) ([]store.TriggerFireResult, error) {
	if len(ps) == 0 {
		return nil, nil
	}
	res := make([]store.TriggerFireResult, len(ps))
	err := s.write(ctx, func(w *wtx) error {
		clear(res)
		for i, p := range ps {
			fence := []any{p.Tick, p.Next, p.Ref.InstanceID, p.Ref.ID, p.ExpectNext} // fired already: nothing to do
			if err := w.addPast(qTriggerTick, fence, p.Ref, p.Task, p.Err, p.Now, &res[i]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// addPast runs fence, a write of one row that applies once (a tick's
// move, an event's removal), with args, and when it wrote the row marks res
// Applied and does addForRule.
func (w *wtx) addPast(fence query, args []any, ref store.TriggerRef, t *task.Task, errMsg string, now int64, res *store.TriggerFireResult) error {
	r, err := w.exec(fence, args...)
	if err != nil {
		return err
	}
	n, err := affected(r)
	if err != nil || n == 0 {
		return err
	}
	res.Applied = true
	return w.addForRule(ref, t, errMsg, now, res)
}

// addForRule adds t (when set) for rule ref and records the outcome on the
// rule: fired once more, or errMsg (or a queue that is gone) as its last
// error. A name already taken in the queue means the task was added before.
func (w *wtx) addForRule(ref store.TriggerRef, t *task.Task, errMsg string, now int64, res *store.TriggerFireResult) error {
	if t != nil {
		ok, err := w.queueExists(t.InstanceID, t.Queue)
		if err != nil {
			return err
		}
		if !ok {
			errMsg = "queue " + quote(t.Queue) + " not found"
		} else {
			stored, err := w.insertTasks([]*task.Task{t})
			if err != nil {
				return err
			}
			res.Added, res.TaskID = true, t.ID
			if !stored[[2]string{t.InstanceID, t.ID}] {
				if t.Name == "" {
					return task.Errorf(task.CodeInternal, "store: task id %s is taken", t.ID)
				}
				if err := w.queryRow(qTaskByName, t.InstanceID, t.Queue, t.Name).Scan(&res.TaskID); err != nil {
					return interpretError(err)
				}
				return nil // added before: fired counted then
			}
			_, err = w.exec(qTriggerFired, ref.InstanceID, ref.ID)
			return err
		}
	}
	if errMsg != "" {
		res.Err = errMsg
		_, err := w.exec(qTriggerError, store.TruncateMsg(errMsg), now, ref.InstanceID, ref.ID)
		return err
	}
	return nil
}

// TriggerEventList returns the oldest pending chain events.
func (s *Store) TriggerEventList(ctx context.Context, p *store.TriggerEventListParams) ([]*store.TriggerEvent, error) {
	return queryEvents(ctx, s.reader(qEventList), p.Limit)
}

// TriggerEventBacklog counts the pending chain events, limit at most.
func (s *Store) TriggerEventBacklog(ctx context.Context, limit int) (*store.EventBacklog, error) {
	b := &store.EventBacklog{}
	if err := s.reader(qEventBacklog).QueryRowContext(ctx, max(limit, 0)).Scan(&b.Pending, &b.OldestFinishedAt); err != nil {
		return nil, interpretError(err)
	}
	return b, nil
}

// TriggerEventAdd stores chain events of one instance in one write
// transaction.
func (s *Store) TriggerEventAdd(ctx context.Context, p *store.TriggerEventAddParams) error {
	if len(p.Events) == 0 {
		return nil
	}
	return s.write(ctx, func(w *wtx) error {
		for _, ev := range p.Events {
			if _, err := w.exec(qEventAdd, p.InstanceID, ev.RuleID, ev.TaskID, string(ev.State), ev.FinishedAt); err != nil {
				return err
			}
		}
		return nil
	})
}

// queryEvents runs st (on the read pool, or bound to a read transaction)
// and scans the chain events it reads.
func queryEvents(ctx context.Context, st *sql.Stmt, args ...any) ([]*store.TriggerEvent, error) {
	rows, err := st.QueryContext(ctx, args...)
	if err != nil {
		return nil, interpretError(err)
	}
	defer rows.Close()
	out := []*store.TriggerEvent{}
	for rows.Next() {
		ev, err := store.ScanTriggerEvent(rows.Scan)
		if err != nil {
			return nil, interpretError(err)
		}
		out = append(out, ev)
	}
	if err := rows.Err(); err != nil {
		return nil, interpretError(err)
	}
	return out, nil
}

// TriggerEventsEnd ends a batch of chain events: it reads the oldest on
// the read pool and plans them, then in one write transaction removes each
// still pending and adds its task (SQLite has one writer, which Plan's
// reads do not hold).
func (s *Store) TriggerEventsEnd(ctx context.Context, p *store.TriggerEventsEndParams) ([]store.TriggerFireResult, error) {
	evs, err := queryEvents(ctx, s.reader(qEventList), p.Limit)
	if err != nil || len(evs) == 0 {
		return nil, err
	}
	outs, err := store.PlanEvents(ctx, p, evs)
	if err != nil {
		return nil, err
	}
	res := make([]store.TriggerFireResult, len(evs))
	err = s.write(ctx, func(w *wtx) error {
		clear(res)
		for i, ev := range evs {
			fence := []any{ev.Seq, ev.InstanceID} // gone: another call ended it
			ref := store.TriggerRef{InstanceID: ev.InstanceID, ID: ev.RuleID}
			if err := w.addPast(qEventDelete, fence, ref, outs[i].Task, outs[i].Err, p.Now, &res[i]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// chainEvents writes the chain events of a finish that applied. Whether
// the task's queue has an enabled task rule is read once a transaction
// (the write lock keeps it from changing meanwhile), and a queue without
// one costs no statement per task.
func (w *wtx) chainEvents(t *task.Task) error {
	if !store.ChainState(t.State) {
		return nil
	}
	key := [2]string{t.InstanceID, t.Queue}
	has, seen := w.chainRules[key]
	if !seen {
		if err := w.queryRow(qChainRules, t.InstanceID, t.Queue).Scan(&has); err != nil {
			return interpretError(err)
		}
		if w.chainRules == nil {
			w.chainRules = map[[2]string]bool{}
		}
		w.chainRules[key] = has
	}
	if !has {
		return nil
	}
	_, err := w.exec(qChainEvents, t.ID, string(t.State), t.FinishedAt, t.InstanceID, t.Queue, string(t.State))
	return err
}

func scanTrigger(sc scanner) (*task.Trigger, error) {
	tr, err := store.ScanTrigger(sc.Scan)
	if err != nil {
		return nil, interpretError(err)
	}
	return tr, nil
}

// cmpErr returns err, or else missing.
func cmpErr(err, missing error) error {
	if err != nil {
		return err
	}
	return missing
}
