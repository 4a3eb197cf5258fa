package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

var triggerCols = store.Columns("", store.TriggerColumns)

var (
	qTriggerInsert = `INSERT INTO triggers (` + triggerCols + `) VALUES (` + placeholders(1, len(store.TriggerColumns)) + `)`
	qTriggerGet    = `SELECT ` + triggerCols + ` FROM triggers WHERE instance_id = $1 AND id = $2`
	qTriggerLock   = qTriggerGet + ` FOR UPDATE`
	qTriggerHook   = `SELECT ` + triggerCols + ` FROM triggers WHERE hook_token = $1`
	qTriggerList   = `SELECT ` + triggerCols + ` FROM triggers WHERE instance_id = $1 ORDER BY created_at, id`
	qTriggerUpdate = `UPDATE triggers SET queue = $3, enabled = $4, params = $5, payload = $6, cron = $7,
		time_zone = $8, last_tick_at = $9, next_tick_at = $10, hook_secret = $11, hook_headers = $12, on_queue = $13,
		on_succeeded = $14, on_failed = $15, fired = $16, error_count = $17, last_error = $18, last_error_at = $19,
		updated_at = $20, priority = $21, hook_signature = $22
		WHERE instance_id = $1 AND id = $2`
	qTriggerDelete = `DELETE FROM triggers WHERE instance_id = $1 AND id = $2`
	qTriggerDue    = `SELECT ` + triggerCols + ` FROM triggers
		WHERE kind = 'schedule' AND enabled AND next_tick_at > 0 AND next_tick_at <= $1 ORDER BY next_tick_at LIMIT $2`
	qTriggerNextTick = `SELECT coalesce(min(next_tick_at), 0) FROM triggers
		WHERE kind = 'schedule' AND enabled AND next_tick_at > 0`
	// qTriggersLock locks the rules whose keys $1 and $2 list, in key order.
	qTriggersLock = `SELECT t.instance_id FROM triggers AS t
		JOIN unnest($1::text[], $2::text[]) AS c(instance_id, id) ON t.instance_id = c.instance_id AND t.id = c.id
		ORDER BY t.instance_id, t.id FOR UPDATE OF t`
	// The fires' fence: a tick applies only while its rule still waits for
	// the tick the scheduler read; a second node's fire of the same tick
	// waits for the row lock, then matches nothing.
	qTriggerTicks = `UPDATE triggers AS t SET last_tick_at = c.tick, next_tick_at = c.next
		FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[], $5::bigint[]) AS c(instance_id, id, tick, next, expect)
		WHERE t.instance_id = c.instance_id AND t.id = c.id AND t.next_tick_at = c.expect AND t.enabled AND t.kind = 'schedule'
		RETURNING t.instance_id, t.id`
	// qTriggerTally counts $3 tasks added and $4 refusals on a rule, the
	// last of which ($5, at $6) becomes its last error.
	qTriggerTally = `UPDATE triggers SET fired = fired + $3::bigint, error_count = error_count + $4::bigint,
		last_error = CASE WHEN $4::bigint > 0 THEN $5::text ELSE last_error END,
		last_error_at = CASE WHEN $4::bigint > 0 THEN $6::bigint ELSE last_error_at END
		WHERE instance_id = $1 AND id = $2`
	qTaskIDByName = `SELECT id FROM tasks WHERE instance_id = $1 AND queue = $2 AND name = $3`

	// sqlChainEvents writes, inside sqlFinish (one statement), one event
	// per enabled task rule watching the queue of a task that finish ended
	// SUCCEEDED or FAILED (u: the rows it wrote, as they are now, with no
	// lease; u.chain is store.ChainState of each write). The unique key drops a second write of the same finish.
	sqlChainEvents = `INSERT INTO trigger_events (instance_id, rule_id, task_id, state, finished_at)
		SELECT r.instance_id, r.id, u.id, u.state, u.finished_at
		FROM u JOIN triggers r ON r.instance_id = u.instance_id AND r.on_queue = u.queue AND r.kind = 'task' AND r.enabled
			AND CASE u.state WHEN 'SUCCEEDED' THEN r.on_succeeded ELSE r.on_failed END
		WHERE u.chain AND u.lease_id = ''
		ON CONFLICT ON CONSTRAINT trigger_events_once DO NOTHING`
	qEventList = `SELECT ` + store.TriggerEventColumns + ` FROM trigger_events ORDER BY seq LIMIT $1`
	// qEventsOf reads one instance's pending chain events, along the key.
	qEventsOf = `SELECT ` + store.TriggerEventColumns + ` FROM trigger_events WHERE instance_id = $1 ORDER BY seq`
	// qEventAdd stores one chain event as a finish writes it.
	qEventAdd = `INSERT INTO trigger_events (instance_id, rule_id, task_id, state, finished_at) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT ON CONSTRAINT trigger_events_once DO NOTHING`
	// qEventBacklog counts the oldest $1 pending events, along seq.
	qEventBacklog = `SELECT count(*), coalesce(min(finished_at), 0)
		FROM (SELECT finished_at FROM trigger_events ORDER BY seq LIMIT $1) AS e`
	// qEventTake reads and locks the oldest chain events no other
	// transaction holds.
	qEventTake = qEventList + ` FOR UPDATE SKIP LOCKED`
	// qEventFirst reads the first pending chain event's seq, along the
	// index qEventTake walks: TriggerEventsEnd's probe.
	qEventFirst = `SELECT seq FROM trigger_events ORDER BY seq LIMIT 1`
	// qEventsDelete removes the chain events whose keys $1 and $2 list.
	qEventsDelete = `DELETE FROM trigger_events WHERE (instance_id, seq) IN (SELECT * FROM unnest($1::text[], $2::bigint[]))`
)

func placeholders(first, n int) string {
	ps := make([]string, n)
	for i := range ps {
		ps[i] = fmt.Sprintf("$%d", first+i)
	}
	return strings.Join(ps, ", ")
}

// TriggerCreate stores a new rule.
func (s *Store) TriggerCreate(ctx context.Context, p *store.TriggerCreateParams) error {
	args, err := store.TriggerArgs(p.Trigger)
	if err != nil {
		return err
	}
	_, err = s.pool.Exec(ctx, qTriggerInsert, args...)
	return interpretError(err)
}

// TriggerGet finds one rule of an instance.
func (s *Store) TriggerGet(ctx context.Context, ref store.TriggerRef) (*task.Trigger, error) {
	return scanTrigger(s.pool.QueryRow(ctx, qTriggerGet, ref.InstanceID, ref.ID))
}

// TriggerGetHook finds a hook rule by its token.
func (s *Store) TriggerGetHook(ctx context.Context, ref store.HookRef) (*task.Trigger, error) {
	// A token is a URL's path segment, any bytes: one PostgreSQL cannot
	// hold as text (invalid UTF-8, a NUL) is no rule's either.
	if ref.Token == "" || !utf8.ValidString(ref.Token) || strings.IndexByte(ref.Token, 0) >= 0 {
		return nil, task.ErrNotFound
	}
	return scanTrigger(s.pool.QueryRow(ctx, qTriggerHook, ref.Token))
}

// TriggerList lists an instance's rules, oldest first.
func (s *Store) TriggerList(ctx context.Context, p *store.TriggerListParams) ([]*task.Trigger, error) {
	return s.triggers(ctx, qTriggerList, p.InstanceID)
}

// TriggerDue returns the enabled schedule rules due at p.Now.
func (s *Store) TriggerDue(ctx context.Context, p *store.TriggerDueParams) ([]*task.Trigger, error) {
	return s.triggers(ctx, qTriggerDue, p.Now, p.Limit)
}

func (s *Store) triggers(ctx context.Context, q string, args ...any) ([]*task.Trigger, error) {
	return queryTriggers(ctx, s.pool, q, args...)
}

// queryTriggers runs q on db (the pool or a transaction) and scans the
// rules it reads.
func queryTriggers(ctx context.Context, db querier, q string, args ...any) ([]*task.Trigger, error) {
	rows, err := db.Query(ctx, q, args...)
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
	return out, rowsErr(rows)
}

// TriggerNextTick returns the earliest tick of an enabled schedule rule.
func (s *Store) TriggerNextTick(ctx context.Context) (int64, error) {
	var next int64
	if err := s.pool.QueryRow(ctx, qTriggerNextTick).Scan(&next); err != nil {
		return 0, interpretError(err)
	}
	return next, nil
}

// TriggerUpdate applies fn to a rule under a row lock and stores it.
func (s *Store) TriggerUpdate(ctx context.Context, ref store.TriggerRef, fn func(*task.Trigger) error) (*task.Trigger, error) {
	var out *task.Trigger
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		tr, err := scanTrigger(tx.QueryRow(ctx, qTriggerLock, ref.InstanceID, ref.ID))
		if err != nil {
			return err
		}
		kind, created, token := tr.Kind, tr.CreatedAt, tr.HookToken
		if err := fn(tr); err != nil {
			return err
		}
		tr.InstanceID, tr.ID, tr.Kind, tr.CreatedAt, tr.HookToken = ref.InstanceID, ref.ID, kind, created, token
		a, err := store.TriggerArgs(tr)
		if err != nil {
			return err
		}
		// TriggerColumns: queue (3) … hook_signature (24), without kind,
		// hook_token and created_at, after the key.
		if _, err := tx.Exec(ctx, qTriggerUpdate, ref.InstanceID, ref.ID, a[3], a[4], a[5], a[6], a[7], a[8], a[9],
			a[10], a[12], a[13], a[14], a[15], a[16], a[17], a[18], a[19], a[20], a[22], a[23], a[24]); err != nil {
			return interpretError(err)
		}
		out = tr
		return nil
	})
	return out, err
}

// TriggerDelete removes a rule (its pending events go with it, by the
// schema's trigger).
func (s *Store) TriggerDelete(ctx context.Context, ref store.TriggerRef) error {
	tag, err := s.pool.Exec(ctx, qTriggerDelete, ref.InstanceID, ref.ID)
	if err != nil {
		return interpretError(err)
	}
	if tag.RowsAffected() == 0 {
		return task.ErrNotFound
	}
	return nil
}

// TriggerFire records ticks of schedule rules in one transaction: their
// rules locked in key order (two nodes firing the same ticks wait on each
// other in one order), the ticks moved where each rule still waits for
// the tick read, in one statement sent with the lock, then the tasks of
// the fires that applied added and counted as addForRules does.
func (s *Store) TriggerFire(ctx context.Context, ps []*store.TriggerFireParams) ([]store.TriggerFireResult, error) {
	if len(ps) == 0 {
		return nil, nil
	}
	insts, ids := make([]string, len(ps)), make([]string, len(ps))
	ticks, nexts, expects := make([]int64, len(ps)), make([]int64, len(ps)), make([]int64, len(ps))
	for i, p := range ps {
		insts[i], ids[i], ticks[i], nexts[i], expects[i] = p.Ref.InstanceID, p.Ref.ID, p.Tick, p.Next, p.ExpectNext
	}
	var res []store.TriggerFireResult
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		res = make([]store.TriggerFireResult, len(ps))
		b := &pgx.Batch{}
		b.Queue(qTriggersLock, insts, ids)
		b.Queue(qTriggerTicks, insts, ids, ticks, nexts, expects)
		br := tx.SendBatch(ctx, b)
		if _, err := br.Exec(); err != nil {
			br.Close()
			return interpretError(err)
		}
		moved := map[store.TriggerRef]bool{}
		rows, err := br.Query()
		if err == nil {
			for rows.Next() {
				var ref store.TriggerRef
				if err = rows.Scan(&ref.InstanceID, &ref.ID); err != nil {
					break
				}
				moved[ref] = true
			}
			rows.Close()
			err = cmp.Or(err, rows.Err())
		}
		if err = cmp.Or(err, br.Close()); err != nil {
			return interpretError(err)
		}
		var adds []ruleAdd
		for i, p := range ps {
			if moved[p.Ref] {
				res[i].Applied = true
				adds = append(adds, ruleAdd{ref: p.Ref, task: p.Task, err: p.Err, now: p.Now, res: &res[i]})
			}
		}
		return addForRules(ctx, tx, adds)
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// ruleAdd is one rule's add for addForRules: its task (or nil), the
// refusal to record when there is none (at now), and where its result goes.
type ruleAdd struct {
	ref  store.TriggerRef
	task *task.Task
	err  string
	now  int64
	res  *store.TriggerFireResult
}

// ruleTally is what addForRules records on one rule.
type ruleTally struct {
	fired, errors int
	lastErr       string
	lastErrAt     int64
}

// addForRules adds each add's task (when set) for its rule and records the
// outcome on the rule — fired once more, or the add's refusal (or a queue
// that is gone) as its last error; a name already taken in the queue, by a
// task stored before or one added earlier in adds, means the task was added
// before — in one insert of the tasks and one update per rule, sent in one
// round trip in the rules' key order (so two transactions that record on
// the same rules lock them in one order).
func addForRules(ctx context.Context, tx pgx.Tx, adds []ruleAdd) error {
	var tasks []*task.Task
	for _, a := range adds {
		if a.task != nil {
			tasks = append(tasks, a.task)
		}
	}
	out, err := insertTasks(ctx, tx, tasks, false)
	if err != nil {
		return err
	}
	tally := map[store.TriggerRef]*ruleTally{}
	count := func(ref store.TriggerRef) *ruleTally {
		if tally[ref] == nil {
			tally[ref] = &ruleTally{}
		}
		return tally[ref]
	}
	k := 0
	for _, a := range adds {
		errMsg := a.err
		if t := a.task; t != nil {
			o := out[k]
			k++
			switch {
			case !o.queueOK:
				errMsg = fmt.Sprintf("queue %q not found", t.Queue)
			case o.stored:
				a.res.Added, a.res.TaskID = true, t.ID
				count(a.ref).fired++
				continue
			case t.Name == "":
				return task.Errorf(task.CodeInternal, "store: task id %s is taken", t.ID)
			default:
				a.res.Added, a.res.TaskID = true, o.holder
				if a.res.TaskID == "" {
					if err := tx.QueryRow(ctx, qTaskIDByName, t.InstanceID, t.Queue, t.Name).Scan(&a.res.TaskID); err != nil && !errors.Is(err, pgx.ErrNoRows) {
						return interpretError(err)
					}
				}
				continue // added before: fired counted then
			}
		}
		if errMsg != "" {
			a.res.Err = errMsg
			c := count(a.ref)
			c.errors++
			c.lastErr, c.lastErrAt = store.TruncateMsg(errMsg), a.now
		}
	}
	if len(tally) == 0 {
		return nil
	}
	refs := slices.SortedFunc(maps.Keys(tally), func(a, b store.TriggerRef) int {
		return cmp.Or(strings.Compare(a.InstanceID, b.InstanceID), strings.Compare(a.ID, b.ID))
	})
	b := &pgx.Batch{}
	for _, ref := range refs {
		c := tally[ref]
		b.Queue(qTriggerTally, ref.InstanceID, ref.ID, c.fired, c.errors, c.lastErr, c.lastErrAt)
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return interpretError(err)
	}
	return nil
}

// TriggerEventList returns the oldest pending chain events.
func (s *Store) TriggerEventList(ctx context.Context, p *store.TriggerEventListParams) ([]*store.TriggerEvent, error) {
	return queryEvents(ctx, s.pool, qEventList, p.Limit)
}

// queryEvents runs q on db (the pool or a transaction) and scans the chain
// events it reads.
func queryEvents(ctx context.Context, db querier, q string, args ...any) ([]*store.TriggerEvent, error) {
	rows, err := db.Query(ctx, q, args...)
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
	return out, rowsErr(rows)
}

// TriggerEventBacklog counts the pending chain events, limit at most.
func (s *Store) TriggerEventBacklog(ctx context.Context, limit int) (*store.EventBacklog, error) {
	b := &store.EventBacklog{}
	if err := s.pool.QueryRow(ctx, qEventBacklog, max(limit, 0)).Scan(&b.Pending, &b.OldestFinishedAt); err != nil {
		return nil, interpretError(err)
	}
	return b, nil
}

// TriggerEventAdd stores chain events of one instance in one transaction.
func (s *Store) TriggerEventAdd(ctx context.Context, p *store.TriggerEventAddParams) error {
	if len(p.Events) == 0 {
		return nil
	}
	return s.inTx(ctx, func(tx pgx.Tx) error {
		for _, ev := range p.Events {
			if _, err := tx.Exec(ctx, qEventAdd, p.InstanceID, ev.RuleID, ev.TaskID, string(ev.State), ev.FinishedAt); err != nil {
				return interpretError(err)
			}
		}
		return nil
	})
}

// TriggerEventsEnd ends a batch of chain events in one transaction: it
// reads and locks the oldest events no other node holds, plans them
// (Plan reads through the pool meanwhile), removes them, adds their tasks
// in one insert and records the outcomes on their rules.
func (s *Store) TriggerEventsEnd(ctx context.Context, p *store.TriggerEventsEndParams) ([]store.TriggerFireResult, error) {
	// The chainer is woken by every stored batch of finishes that ended a
	// task, and most of them wrote no event (most queues have no task rule
	// watching them): one read says so, where the transaction would cost
	// three round trips. An event committed after it wakes the chainer
	// again.
	var seq int64
	switch err := s.pool.QueryRow(ctx, qEventFirst).Scan(&seq); {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, nil
	case err != nil:
		return nil, interpretError(err)
	}
	var res []store.TriggerFireResult
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		res = nil
		evs, err := queryEvents(ctx, tx, qEventTake, p.Limit)
		if err != nil || len(evs) == 0 {
			return err
		}
		outs, err := store.PlanEvents(ctx, p, evs)
		if err != nil {
			return err
		}
		insts, seqs := make([]string, len(evs)), make([]int64, len(evs))
		for i, ev := range evs {
			insts[i], seqs[i] = ev.InstanceID, ev.Seq
		}
		// Every event is locked by this transaction: each is removed here.
		if _, err := tx.Exec(ctx, qEventsDelete, insts, seqs); err != nil {
			return interpretError(err)
		}
		res = make([]store.TriggerFireResult, len(evs))
		adds := make([]ruleAdd, len(evs))
		for i, ev := range evs {
			res[i].Applied = true
			adds[i] = ruleAdd{ref: store.TriggerRef{InstanceID: ev.InstanceID, ID: ev.RuleID}, task: outs[i].Task, err: outs[i].Err, now: p.Now, res: &res[i]}
		}
		return addForRules(ctx, tx, adds)
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

func scanTrigger(row pgx.Row) (*task.Trigger, error) {
	tr, err := store.ScanTrigger(row.Scan)
	if err != nil {
		return nil, interpretError(err)
	}
	return tr, nil
}
