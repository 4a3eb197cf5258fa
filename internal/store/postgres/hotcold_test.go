package postgres

import (
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// BenchmarkHotCold measures a design not adopted (BENCHMARKS.md, the
// twentieth session): finished tasks kept in a table of their own, so that
// the vacuum of tasks scans only the live rows' indexes. Each iteration
// adds 500 tasks, claims 500 (TaskClaim) and finishes them, then runs
// VacuumTasks when its thresholds are met, over a backlog of 20,000; the
// finished rows pile up as they would under retention. "one-table"
// finishes with an UPDATE, as today; "split" moves each row with a DELETE
// … RETURNING into an INSERT of tasks_fin (its own key, tasks_done's and
// tasks_created's indexes), and tasks loses tasks_done. Both finishes are
// the same bare statement (no fence, no chain events), so the difference
// is the design's. "one-table-claim-in-sql" is today's table with the
// claim in one statement (claimInSQL) instead of TaskClaim's two.
// "cursor-claim" claims without writing a task row (claimByCursor): each
// task gets a place in its queue's order when added, a claim moves the
// queue's cursor past the next 500 and records their lease in one batch
// row, and the finish writes the task's second version and ends the batch
// (tasks_due gives way to an index of PENDING tasks by that place).
// "hot-claim-ahead" claims without changing the state (claimHot): a live
// lease on a PENDING row marks it claimed, no indexed column changes, and
// with a fillfactor of 45 every claim is a HOT update; it keeps one batch
// claimed and unfinished, as a burn-down does, so each claim's read walks
// past it, and is read beside "claim-in-sql-ahead", the same loop with
// today's states. "int-key-claim-in-sql" is "one-table-claim-in-sql" with
// the state indexes keyed by an integer for the queue in place of
// (instance_id, queue): qid, a hash of the two that PostgreSQL stores with
// each row (a generated column), which the claim names and then checks the
// strings on the row; "int-key-plain" the same with a constant key and no
// check, the most such a key could give. The queue's instance has an id as
// long as errand's own (longQueue). ERRAND_HOTCOLD=a,b runs only the
// variants named. It reports PostgreSQL's CPU per task (the server's, as
// BenchmarkWriteBreakdown reads it) by step and in all, the wall time of all
// steps, and the share of the table's updates that were HOT.
//
//	go test -run '^$' -bench HotCold -benchtime 300x ./internal/store/postgres/
func BenchmarkHotCold(b *testing.B) {
	type variant = struct {
		name                    string
		split, oneClaim, cursor bool
		hot, ahead              bool
		intKey, constKey        bool
	}
	variants := []variant{{"one-table", false, false, false, false, false, false, false}, {"split", true, false, false, false, false, false, false},
		{"one-table-claim-in-sql", false, true, false, false, false, false, false}, {"cursor-claim", false, false, true, false, false, false, false},
		{"claim-in-sql-ahead", false, true, false, false, true, false, false}, {"hot-claim-ahead", false, false, false, true, true, false, false},
		{"int-key-claim-in-sql", false, true, false, false, false, true, false}, {"int-key-plain", false, true, false, false, false, true, true}}
	if f := os.Getenv("ERRAND_HOTCOLD"); f != "" { // a comma-separated choice of variants
		var keep []variant
		for _, v := range variants {
			if slices.Contains(strings.Split(f, ","), v.name) {
				keep = append(keep, v)
			}
		}
		variants = keep
	}
	for _, v := range append(variants, variants...) { // each twice, alternated
		b.Run(v.name, func(b *testing.B) {
			ctx := context.Background()
			s := OpenTest(b)
			defer s.Close()
			cpu := serverCPU(ctx, b, s)
			q := longQueue(b, s)
			exec := func(sql string, args ...any) {
				if _, err := s.pool.Exec(ctx, sql, args...); err != nil {
					b.Fatalf("%s: %v", sql, err)
				}
			}
			if v.intKey { // the queue's integer key in place of (instance_id, queue) in every index but the key
				if v.constKey { // one queue: its key a constant, no check of the strings
					exec(`ALTER TABLE tasks ADD COLUMN qid bigint NOT NULL DEFAULT 1`)
				} else {
					exec(`ALTER TABLE tasks ADD COLUMN qid bigint GENERATED ALWAYS AS (hashtextextended(queue, hashtextextended(instance_id, 0))) STORED`)
				}
				for _, ix := range []string{"tasks_name", "tasks_due", "tasks_retry", "tasks_running", "tasks_done", "tasks_created", "tasks_urgent"} {
					exec(`DROP INDEX ` + ix)
				}
				exec(`CREATE UNIQUE INDEX tasks_name ON tasks (qid, name) WHERE name IS NOT NULL`)
				exec(`CREATE INDEX tasks_due ON tasks (qid, run_at, id) INCLUDE (state) WHERE state IN ('PENDING', 'RETRY_WAIT')`)
				exec(`CREATE INDEX tasks_retry ON tasks (qid, run_at, id) WHERE state = 'RETRY_WAIT'`)
				exec(`CREATE INDEX tasks_running ON tasks (qid, run_at, id) WHERE state = 'RUNNING'`)
				exec(`CREATE INDEX tasks_done ON tasks (qid, state, finished_at, id) WHERE state IN ('SUCCEEDED', 'FAILED', 'CANCELLED')`)
				exec(`CREATE INDEX tasks_created ON tasks (qid, created_at, id) WHERE state <> 'RUNNING'`)
				exec(`CREATE INDEX tasks_urgent ON tasks (qid, priority DESC, run_at, id) WHERE state IN ('PENDING', 'RETRY_WAIT') AND priority > 0`)
			}
			next := 0
			add := func(n int) { addNumbered(b, s, q, breakdownPayload, &next, n) }
			if v.hot { // room on each page for each row's claimed version
				if _, err := s.pool.Exec(ctx, `ALTER TABLE tasks SET (fillfactor = 45)`); err != nil {
					b.Fatal(err)
				}
			}
			for range 40 {
				add(500)
			}
			// The finished row's columns, in tasks' order.
			rows, err := s.pool.Query(ctx, `SELECT column_name FROM information_schema.columns
				WHERE table_name = 'tasks' AND table_schema = current_schema() AND is_generated = 'NEVER' ORDER BY ordinal_position`)
			if err != nil {
				b.Fatal(err)
			}
			var names, exprs []string
			for rows.Next() {
				var c string
				if err := rows.Scan(&c); err != nil {
					b.Fatal(err)
				}
				names = append(names, c)
				e := "d." + c
				switch c {
				case "state":
					e = "'SUCCEEDED'"
				case "finished_at":
					e = "$3"
				case "lease_id":
					e = "''"
				case "lease_expires_at":
					e = "0"
				case "attempts":
					e = `d.attempts || '[{"status":"succeeded","httpStatus":200}]'::jsonb`
				}
				exprs = append(exprs, e)
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				b.Fatal(err)
			}
			finishSQL := `UPDATE tasks AS t SET state = 'SUCCEEDED', finished_at = $3, lease_id = '', lease_expires_at = 0,
				attempts = t.attempts || '[{"status":"succeeded","httpStatus":200}]'::jsonb
				FROM unnest($1::text[], $2::text[]) AS c(instance_id, id)
				WHERE t.instance_id = c.instance_id AND t.id = c.id AND t.state = (SELECT 'RUNNING')`
			if v.split {
				exec(`CREATE TABLE tasks_fin (LIKE tasks INCLUDING DEFAULTS INCLUDING CONSTRAINTS)`)
				exec(`ALTER TABLE tasks_fin ADD PRIMARY KEY (instance_id, id)`)
				exec(`CREATE INDEX tasks_fin_done ON tasks_fin (instance_id, queue, state, finished_at, id)`)
				exec(`CREATE INDEX tasks_fin_created ON tasks_fin (instance_id, queue, created_at, id)`)
				exec(`DROP INDEX tasks_done`)
				finishSQL = `WITH d AS (DELETE FROM tasks AS t USING unnest($1::text[], $2::text[]) AS c(instance_id, id)
					WHERE t.instance_id = c.instance_id AND t.id = c.id AND t.state = (SELECT 'RUNNING') RETURNING t.*)
					INSERT INTO tasks_fin (` + strings.Join(names, ", ") + `) SELECT ` + strings.Join(exprs, ", ") + ` FROM d`
			}
			if v.cursor {
				// Each task a place in its queue's order when added (a
				// sequence); the claim moves the queue's cursor past the
				// next 500 and records the batch in one row, writing no
				// task row; the finish writes the one version after the
				// added one and ends the batch.
				exec(`ALTER TABLE tasks ADD COLUMN seq bigint`)
				exec(`CREATE SEQUENCE tasks_seq`)
				exec(`UPDATE tasks SET seq = nextval('tasks_seq')`)
				exec(`ALTER TABLE tasks ALTER COLUMN seq SET DEFAULT nextval('tasks_seq')`)
				exec(`DROP INDEX tasks_due`)
				exec(`CREATE INDEX tasks_ready ON tasks (instance_id, queue, seq) WHERE state = 'PENDING'`)
				exec(`CREATE TABLE claim_cursor (instance_id text COLLATE "C", queue text COLLATE "C", pos bigint NOT NULL,
					PRIMARY KEY (instance_id, queue)) WITH (fillfactor = 50)`)
				exec(`INSERT INTO claim_cursor VALUES ($1, $2, 0)`, q.InstanceID, q.Name)
				exec(`CREATE TABLE claim_batches (id bigserial PRIMARY KEY, instance_id text COLLATE "C" NOT NULL,
					queue text COLLATE "C" NOT NULL, lo bigint NOT NULL, hi bigint NOT NULL, lease_id text NOT NULL, expires bigint NOT NULL)`)
				finishSQL = `WITH f AS (UPDATE tasks AS t SET state = 'SUCCEEDED', finished_at = $3, lease_id = '', lease_expires_at = 0,
					attempt = t.attempt + 1, attempts = t.attempts || '[{"status":"succeeded","httpStatus":200}]'::jsonb
					FROM unnest($1::text[], $2::text[]) AS c(instance_id, id)
					WHERE t.instance_id = c.instance_id AND t.id = c.id AND t.state = (SELECT 'PENDING') RETURNING 1),
					d AS (DELETE FROM claim_batches WHERE id = $4)
					SELECT count(*) FROM f`
			}
			if v.hot {
				finishSQL = strings.Replace(finishSQL, "(SELECT 'RUNNING')", "(SELECT 'PENDING') AND t.lease_id <> ''", 1)
			}
			exec(`VACUUM ANALYZE tasks`)
			st := newSteps(cpu, 4) // add, claim, finish, vacuum
			timed, wall, pg := st.timed, st.wall, st.pg
			now, lease := int64(2_000), 0
			vacuums := 0
			var inFlight []*task.Task
			if v.ahead {
				var err error
				if v.hot {
					inFlight, err = claimHot(ctx, s, q, now)
				} else {
					inFlight, err = claimInSQL(ctx, s, q, now, false, false)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			for b.Loop() {
				timed(0, func() { add(500) })
				var got []*task.Task
				var batch int64
				timed(1, func() {
					if v.hot {
						got, err = claimHot(ctx, s, q, now)
					} else if v.oneClaim {
						got, err = claimInSQL(ctx, s, q, now, v.intKey, v.constKey)
					} else if v.cursor {
						got, batch, err = claimByCursor(ctx, s, q, now)
					} else {
						got, err = s.TaskClaim(ctx, &store.ClaimParams{Queue: q, Now: now, Limit: 500, LeaseMs: 60_000,
							NewLeaseID: func() string { lease++; return "lease-" + strconv.Itoa(lease) }})
					}
					if err != nil || len(got) != 500 {
						b.Fatalf("claim: %d, %v", len(got), err)
					}
				})
				if v.ahead { // finish the batch claimed before, keep this one in flight
					got, inFlight = inFlight, got
				}
				ids, insts := make([]string, len(got)), make([]string, len(got))
				for i, t := range got {
					ids[i], insts[i] = t.ID, t.InstanceID
				}
				timed(2, func() {
					if v.cursor {
						var n int
						if err := s.pool.QueryRow(ctx, finishSQL, insts, ids, now+5, batch).Scan(&n); err != nil || n != 500 {
							b.Fatalf("finish: %d %v", n, err)
						}
						return
					}
					tag, err := s.pool.Exec(ctx, finishSQL, insts, ids, now+5)
					if err != nil || tag.RowsAffected() != 500 {
						b.Fatalf("finish: %v %v", tag, err)
					}
				})
				now += 10
				timed(3, func() {
					ran, _, err := s.VacuumTasks(ctx)
					if err != nil {
						b.Fatal(err)
					}
					if ran {
						vacuums++
					}
				})
			}
			per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(b.N*500) }
			total := 0.0
			for i, n := range []string{"add", "claim", "finish", "vacuum"} {
				b.ReportMetric(per(pg[i]), n+"-pg-ns/task")
				total += per(pg[i])
			}
			b.ReportMetric(total, "pg-ns/task")
			b.ReportMetric(per(wall[0]+wall[1]+wall[2]+wall[3]), "wall-ns/task")
			b.ReportMetric(float64(vacuums), "vacuums")
			var upd, hot int64
			if err := s.pool.QueryRow(ctx, `SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables WHERE relname = 'tasks'`).Scan(&upd, &hot); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(hot)/float64(max(upd, 1)), "hot-share")
		})
	}
}

// claimInSQL is a claim of 500 due tasks of q in one statement, with
// task.Claim's changes written in SQL (each lease id made of the row's ctid
// and the claim's time): the variant that would spare the claim its second
// statement, at the price of the rule's second implementation. byQid finds
// the queue's tasks by the int-key variants' qid, and constKey by their one
// queue's constant key alone.
func claimInSQL(ctx context.Context, s *Store, q *task.Queue, now int64, byQid, constKey bool) ([]*task.Task, error) {
	where := "instance_id = $1 AND queue = $2"
	switch {
	case constKey:
		where = "qid = 1 AND $1::text <> $2::text" // $1 and $2 still typed
	case byQid:
		where = "qid = hashtextextended($2, hashtextextended($1, 0)) AND instance_id = $1 AND queue = $2"
	}
	rows, err := s.pool.Query(ctx, `UPDATE tasks AS t SET state = 'RUNNING', attempt = t.attempt + 1,
		started_at = $3, lease_id = 'lease-' || c.ctid::text || '-' || $3::text, lease_expires_at = $3 + 60000,
		deadline_at = CASE WHEN t.pull THEN 0 ELSE $3 + 1000 * t.deadline_seconds END
		FROM (SELECT ctid FROM tasks WHERE `+where+` AND state IN ('PENDING', 'RETRY_WAIT')
			AND run_at <= $3 ORDER BY run_at, id LIMIT 500 FOR UPDATE SKIP LOCKED) AS c
		WHERE t.ctid = c.ctid
		RETURNING `+cols("t", taskCols), q.InstanceID, q.Name, now)
	if err != nil {
		return nil, err
	}
	return scanTasks(rows, true)
}

// claimHot is claimInSQL's claim that leaves the state PENDING: a live
// lease marks the row claimed, so no indexed column changes and the write
// can be a HOT update; the claim's read skips the rows whose lease is live.
func claimHot(ctx context.Context, s *Store, q *task.Queue, now int64) ([]*task.Task, error) {
	rows, err := s.pool.Query(ctx, `UPDATE tasks AS t SET attempt = t.attempt + 1,
		started_at = $3, lease_id = 'lease-' || c.ctid::text || '-' || $3::text, lease_expires_at = $3 + 60000,
		deadline_at = CASE WHEN t.pull THEN 0 ELSE $3 + 1000 * t.deadline_seconds END
		FROM (SELECT ctid FROM tasks WHERE instance_id = $1 AND queue = $2 AND state IN ('PENDING', 'RETRY_WAIT')
			AND run_at <= $3 AND lease_expires_at <= $3 ORDER BY run_at, id LIMIT 500 FOR UPDATE SKIP LOCKED) AS c
		WHERE t.ctid = c.ctid
		RETURNING `+cols("t", taskCols), q.InstanceID, q.Name, now)
	if err != nil {
		return nil, err
	}
	return scanTasks(rows, true)
}

// claimByCursor is a claim of the next 500 tasks of q in its order of adds
// that writes no task row: it moves the queue's cursor (one HOT update of a
// small row) and records the batch's lease in one row, in one statement. The
// tasks it returns carry only their ids.
func claimByCursor(ctx context.Context, s *Store, q *task.Queue, now int64) ([]*task.Task, int64, error) {
	rows, err := s.pool.Query(ctx, `WITH cur AS (SELECT pos FROM claim_cursor WHERE instance_id = $1 AND queue = $2 FOR UPDATE),
		t AS (SELECT t.instance_id, t.id, t.seq FROM tasks AS t, cur WHERE t.instance_id = $1 AND t.queue = $2
			AND t.state = 'PENDING' AND t.seq > cur.pos ORDER BY t.seq LIMIT 500),
		m AS (SELECT min(seq) AS lo, max(seq) AS hi FROM t),
		u AS (UPDATE claim_cursor SET pos = m.hi FROM m WHERE instance_id = $1 AND queue = $2),
		b AS (INSERT INTO claim_batches (instance_id, queue, lo, hi, lease_id, expires)
			SELECT $1, $2, m.lo, m.hi, 'lease-' || $3::bigint::text, $3::bigint + 60000 FROM m RETURNING id)
		SELECT t.instance_id, t.id, b.id FROM t, b`, q.InstanceID, q.Name, now)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	var ts []*task.Task
	var batch int64
	for rows.Next() {
		t := &task.Task{}
		if err := rows.Scan(&t.InstanceID, &t.ID, &batch); err != nil {
			return nil, 0, err
		}
		ts = append(ts, t)
	}
	return ts, batch, rows.Err()
}
