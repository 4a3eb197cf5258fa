package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
	"github.com/errandhq/errand/internal/testkit"
)

// The per-write breakdown (BENCHMARKS.md): the store's own three write
// statements — the 100-row INSERT of an add, the 100-row UPDATE of a claim
// and the fenced 100-row UPDATE of a finish — timed in a scratch database
// with the store's schema and a backlog, each in its own transaction, once
// with every index and once with each index of tasks dropped. What an index
// costs a write is the difference; what the commit costs is an empty write
// transaction; what the row itself costs (record encoding, the table's
// b-tree) is the same INSERT into a copy of tasks with no key and no index.
//
//	go test -run '^$' -bench WriteBreakdown -benchtime 200x ./internal/store/sqlite/

// breakdownVariants are the index sets measured: "all" is the schema as
// migrated; each other drops the indexes it names.
var breakdownVariants = []struct {
	name string
	drop []string
}{
	{"all", nil},
	{"no-tasks_due", []string{"tasks_due"}},
	{"no-tasks_running", []string{"tasks_running"}},
	{"no-tasks_done", []string{"tasks_done"}},
	{"no-tasks_created", []string{"tasks_created"}},
	{"no-tasks_retry", []string{"tasks_retry"}},
	{"no-tasks_name", []string{"tasks_name"}},
	{"key-only", []string{"tasks_due", "tasks_running", "tasks_done", "tasks_created", "tasks_retry", "tasks_name"}},
}

var breakdownPayload = json.RawMessage(`{"to":"someone@example.com","template":"receipt","order":123456,"lines":[{"sku":"A-1","qty":2},{"sku":"B-7","qty":1}]}`)

// breakdownBacklog is how many tasks wait in the queue throughout, so that
// the b-trees have the depth of a store under load.
const breakdownBacklog = 20_000

func BenchmarkWriteBreakdown(b *testing.B) {
	for _, v := range breakdownVariants {
		b.Run(v.name, func(b *testing.B) {
			ctx := context.Background()
			s, q := openWithQueue(b, Options{})
			next := 0
			batch := func() []*task.Task {
				ts := make([]*task.Task, 100)
				for i := range ts {
					t, err := task.NewTask(q, task.AddInput{Payload: breakdownPayload}, 1_000, task.URLRules{})
					if err != nil {
						b.Fatal(err)
					}
					// Ids in time order, as id.New makes them: a new row
					// lands at the right edge of the key's b-tree.
					t.ID = fmt.Sprintf("t%012d", next)
					next++
					ts[i] = t
				}
				return ts
			}
			for range breakdownBacklog / 100 {
				if _, err := s.TaskAdd(ctx, batch()); err != nil {
					b.Fatal(err)
				}
			}
			for _, idx := range v.drop {
				if _, err := s.w.ExecContext(ctx, "DROP INDEX "+idx); err != nil {
					b.Fatal(err)
				}
			}
			// The heap: tasks' columns, no key, no index.
			if _, err := s.w.ExecContext(ctx, `CREATE TABLE heap AS SELECT * FROM tasks WHERE 0`); err != nil {
				b.Fatal(err)
			}
			heapInsert, err := s.w.PrepareContext(ctx, strings.Replace(qTaskInsertN[100].text, "INSERT INTO tasks", "INSERT INTO heap", 1))
			if err != nil {
				b.Fatal(err)
			}
			defer heapInsert.Close()

			// tx runs fn in one write transaction, as the store does, and
			// returns the process CPU time it took, commit included: on a
			// shared machine CPU time is steadier than wall time, and the
			// one writer is one thread.
			tx := func(fn func(w *wtx) error) time.Duration {
				start := testkit.CPUTime()
				if err := s.write(ctx, fn); err != nil {
					b.Fatal(err)
				}
				return testkit.CPUTime() - start
			}
			var add, heap, claim, finish, commit, encode time.Duration
			var storeAdd, storeClaim, storeFinish time.Duration
			now := int64(2_000)
			lease := 0
			for b.Loop() {
				ts := batch()
				var args []any
				start := testkit.CPUTime()
				for range 100 { // 100 times: once is ~0.1 ms, near the clock's grain
					args = args[:0]
					for _, t := range ts {
						if args, err = taskInsertArgs(args, t); err != nil {
							b.Fatal(err)
						}
					}
				}
				encode += (testkit.CPUTime() - start) / 100
				add += tx(func(w *wtx) error {
					_, err := w.exec(qTaskInsertN[100], args...)
					return err
				})
				heap += tx(func(w *wtx) error {
					_, err := w.tx.StmtContext(w.ctx, heapInsert).ExecContext(w.ctx, args...)
					return err
				})
				args = args[:0]
				for _, t := range ts {
					lease++
					if err := t.Claim(q, now, fmt.Sprint("lease-", lease), 60_000); err != nil {
						b.Fatal(err)
					}
					var rid int64 // the claim's read returns it; here it is read untimed
					if err := s.w.QueryRowContext(ctx, `SELECT rowid FROM tasks WHERE instance_id = ? AND id = ?`, t.InstanceID, t.ID).Scan(&rid); err != nil {
						b.Fatal(err)
					}
					args = append(args, rid, string(t.State), t.Attempt, t.MaxAttempts, t.StartedAt,
						t.DeadlineAt, t.LeaseID, t.LeaseExpiresAt)
				}
				claim += tx(func(w *wtx) error {
					_, err := w.execFast(qClaimSetN[100], args)
					return err
				})
				args = args[:0]
				for _, t := range ts {
					fence := t.LeaseID
					if _, err := t.Finish(q, now+5, task.Outcome{Status: task.AttemptSucceeded, HTTPStatus: 200}); err != nil {
						b.Fatal(err)
					}
					args = taskSetArgs(append(args, t.InstanceID, t.ID, fence, int64(math.MinInt64)), t)
				}
				finish += tx(func(w *wtx) error {
					rows, err := w.query(qTaskFinishN[100], args...)
					if err != nil {
						return err
					}
					n := 0
					for rows.Next() {
						n++
					}
					if n != 100 {
						return fmt.Errorf("finished %d of 100", n)
					}
					return rows.Close()
				})
				// The same three writes through the store's methods, as the
				// engine calls them: what they add to the statements is the
				// Go side (arguments, the driver, scanning rows into tasks)
				// and the claim's read of the due tasks.
				start = testkit.CPUTime()
				if _, err := s.TaskAdd(ctx, batch()); err != nil {
					b.Fatal(err)
				}
				storeAdd += testkit.CPUTime() - start
				start = testkit.CPUTime()
				got, err := s.TaskClaim(ctx, &store.ClaimParams{Queue: q, Now: now, Limit: 100, LeaseMs: 60_000,
					NewLeaseID: func() string { lease++; return fmt.Sprint("lease-", lease) }})
				if err != nil || len(got) != 100 {
					b.Fatalf("claim: %d, %v", len(got), err)
				}
				storeClaim += testkit.CPUTime() - start
				ps := make([]*store.FinishParams, len(got))
				for i, t := range got {
					fence := t.LeaseID
					if _, err := t.Finish(q, now+5, task.Outcome{Status: task.AttemptSucceeded, HTTPStatus: 200}); err != nil {
						b.Fatal(err)
					}
					ps[i] = &store.FinishParams{Task: t, LeaseID: fence}
				}
				start = testkit.CPUTime()
				if _, err := s.TaskFinish(ctx, ps); err != nil {
					b.Fatal(err)
				}
				storeFinish += testkit.CPUTime() - start
				commit += tx(func(w *wtx) error {
					_, err := w.exec(qBucketSet, 0.0, now, q.InstanceID, q.Name) // one small row: the commit's cost
					return err
				})
				now += 10
			}
			per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(b.N*100) }
			b.ReportMetric(per(add), "add-ns/task")
			b.ReportMetric(per(claim), "claim-ns/task")
			b.ReportMetric(per(finish), "finish-ns/task")
			b.ReportMetric(per(heap), "heap-insert-ns/task")
			b.ReportMetric(per(storeAdd), "store-add-ns/task")
			b.ReportMetric(per(storeClaim), "store-claim-ns/task")
			b.ReportMetric(per(storeFinish), "store-finish-ns/task")
			b.ReportMetric(per(encode), "go-args-ns/task")
			b.ReportMetric(float64(commit.Nanoseconds())/float64(b.N), "commit-ns/tx")
		})
	}
}

// TestWritePlans reads EXPLAIN of the three writes for the b-trees each
// opens for writing: the table and every index whose entry a write may
// change (a partial index's WHERE then decides, row by row, whether an
// entry is added or removed). An add opens them all; a claim and a finish
// only the state indexes (tasks_urgent's WHERE names the state too), since
// they change no column of the key, tasks_created or tasks_name.
func TestWritePlans(t *testing.T) {
	ctx := t.Context()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "plan.db"), Options{Logger: quietLog})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	roots := map[int]string{}
	rows, err := s.w.QueryContext(ctx, `SELECT rootpage, name FROM sqlite_schema WHERE tbl_name = 'tasks' AND rootpage > 0`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var root int
		var name string
		if err := rows.Scan(&root, &name); err != nil {
			t.Fatal(err)
		}
		roots[root] = name
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	const stateIndexes = "tasks tasks_done tasks_due tasks_retry tasks_running tasks_urgent"
	for _, c := range []struct{ name, text, want string }{
		{"add", qTaskInsertN[1].text, "sqlite_autoindex_tasks_1 tasks tasks_created tasks_done tasks_due tasks_name tasks_retry tasks_running tasks_urgent"},
		{"claim", qClaimSetN[1].text, stateIndexes},
		{"claim, uniform", qClaimSetUniformN[1].text, stateIndexes},
		{"finish", qTaskFinishN[1].text, stateIndexes},
		{"finish by rowid", qTaskFinishByRowN[1].text, stateIndexes},
		{"finish, shared", qTaskFinishSharedN[1].text, stateIndexes},
		{"finish by rowid, shared", qTaskFinishByRowSharedN[1].text, stateIndexes},
	} {
		rows, err := s.w.QueryContext(ctx, "EXPLAIN "+c.text, make([]any, strings.Count(c.text, "?"))...)
		if err != nil {
			t.Fatal(err)
		}
		var opened []string
		for rows.Next() {
			var addr, p1, p2, p3, p5 int
			var opcode string
			var p4, comment sql.NullString
			if err := rows.Scan(&addr, &opcode, &p1, &p2, &p3, &p4, &p5, &comment); err != nil {
				t.Fatal(err)
			}
			if opcode == "OpenWrite" {
				opened = append(opened, roots[p2])
			}
		}
		if err := rows.Close(); err != nil {
			t.Fatal(err)
		}
		slices.Sort(opened)
		if got := strings.Join(slices.Compact(opened), " "); got != c.want {
			t.Errorf("%s opens %q for writing, want %q", c.name, got, c.want)
		}
	}
}
