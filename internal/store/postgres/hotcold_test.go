package postgres

import (
	"context"
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
// claim in one statement (claimInSQL) instead of TaskClaim's two. It reports
// PostgreSQL's CPU per task (the server's, as BenchmarkWriteBreakdown reads
// it) by step and in all, and the wall time of all steps.
//
//	go test -run '^$' -bench HotCold -benchtime 300x ./internal/store/postgres/
func BenchmarkHotCold(b *testing.B) {
	variants := []struct {
		name            string
		split, oneClaim bool
	}{{"one-table", false, false}, {"split", true, false}, {"one-table-claim-in-sql", false, true}}
	for _, v := range append(variants, variants...) { // each twice, alternated
		b.Run(v.name, func(b *testing.B) {
			ctx := context.Background()
			s := OpenTest(b)
			defer s.Close()
			cpu := serverCPU(ctx, b, s)
			q := workQueue(b, s)
			next := 0
			add := func(n int) { addNumbered(b, s, q, breakdownPayload, &next, n) }
			for range 40 {
				add(500)
			}
			exec := func(sql string, args ...any) {
				if _, err := s.pool.Exec(ctx, sql, args...); err != nil {
					b.Fatalf("%s: %v", sql, err)
				}
			}
			// The finished row's columns, in tasks' order.
			rows, err := s.pool.Query(ctx, `SELECT column_name FROM information_schema.columns
				WHERE table_name = 'tasks' AND table_schema = current_schema() ORDER BY ordinal_position`)
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
			exec(`VACUUM ANALYZE tasks`)
			st := newSteps(cpu, 4) // add, claim, finish, vacuum
			timed, wall, pg := st.timed, st.wall, st.pg
			now, lease := int64(2_000), 0
			vacuums := 0
			for b.Loop() {
				timed(0, func() { add(500) })
				var got []*task.Task
				timed(1, func() {
					if v.oneClaim {
						got, err = claimInSQL(ctx, s, q, now)
					} else {
						got, err = s.TaskClaim(ctx, &store.ClaimParams{Queue: q, Now: now, Limit: 500, LeaseMs: 60_000,
							NewLeaseID: func() string { lease++; return "lease-" + strconv.Itoa(lease) }})
					}
					if err != nil || len(got) != 500 {
						b.Fatalf("claim: %d, %v", len(got), err)
					}
				})
				ids, insts := make([]string, len(got)), make([]string, len(got))
				for i, t := range got {
					ids[i], insts[i] = t.ID, t.InstanceID
				}
				timed(2, func() {
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
		})
	}
}

// claimInSQL is a claim of 500 due tasks of q in one statement, with
// task.Claim's changes written in SQL (each lease id made of the row's ctid
// and the claim's time): the variant that would spare the claim its second
// statement, at the price of the rule's second implementation.
func claimInSQL(ctx context.Context, s *Store, q *task.Queue, now int64) ([]*task.Task, error) {
	rows, err := s.pool.Query(ctx, `UPDATE tasks AS t SET state = 'RUNNING', attempt = t.attempt + 1,
		started_at = $3, lease_id = 'lease-' || c.ctid::text || '-' || $3::text, lease_expires_at = $3 + 60000,
		deadline_at = CASE WHEN t.pull THEN 0 ELSE $3 + 1000 * t.deadline_seconds END
		FROM (SELECT ctid FROM tasks WHERE instance_id = $1 AND queue = $2 AND state IN ('PENDING', 'RETRY_WAIT')
			AND run_at <= $3 ORDER BY run_at, id LIMIT 500 FOR UPDATE SKIP LOCKED) AS c
		WHERE t.ctid = c.ctid
		RETURNING `+cols("t", taskCols), q.InstanceID, q.Name, now)
	if err != nil {
		return nil, err
	}
	return scanTasks(rows, true)
}
