package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

var quietLog = slog.New(slog.NewTextHandler(io.Discard, nil))

// TestQueryPlans checks with EXPLAIN QUERY PLAN that every hot statement
// reaches tasks through an index seek (SEARCH, never SCAN), and that
// claims and listings never sort in a temporary b-tree: on an empty
// database, and again after ANALYZE over a realistic mix of rows (PRAGMA
// optimize, run at Close, gathers such statistics in production).
func TestQueryPlans(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "plan.db")
	s, err := Open(ctx, path, Options{Logger: quietLog})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	type check struct {
		name   string
		q      query
		args   []any
		noSort bool
		index  string // the index tasks must be reached by
	}
	pa, pb := pullArgs(nil)
	checks := []check{
		{"claim any", qClaimAny, []any{"i1", "q1", 1000, true, int64(math.MinInt64), true, "[]"}, true, "tasks_due"},
		{"claim", qClaimDue, []any{"i1", "q1", 1000, true, int64(math.MinInt64), true, "[]", 100}, true, "tasks_due"},
		{"claim routed", qClaimDue, []any{"i1", "q1", 1000, false, int64(math.MinInt64), false, `["app/x"]`, 100}, true, "tasks_due"},
		{"counts", qQueueCounts, []any{"i1", "q1", 10000}, true, "tasks_done"},
		{"get", qTaskGet, []any{"i1", "t1"}, true, "(instance_id=? AND id=?)"},
		{"get many", qTaskGetMany, []any{"i1", `["t1","t2"]`}, true, "(instance_id=? AND id=?)"},
		{"by name", qTaskByName, []any{"i1", "q1", "n"}, true, "tasks_name"},
		{"update", qTaskUpdate, append(make([]any, 13), "i1", "t1"), true, "(instance_id=? AND id=?)"},
		{"finish", qTaskFinishN[10], make([]any, 160), true, "(instance_id=? AND id=?)"},
		{"claim set", qClaimSetN[10], make([]any, 80), true, "INTEGER PRIMARY KEY (rowid=?)"},
		{"purge", qQueuePurge, []any{"i1", "q1"}, true, "tasks_created (instance_id=? AND queue=?)"},
		{"instance tasks", qInstanceTasks, []any{"i1"}, true, "sqlite_autoindex_tasks_1 (instance_id=?)"},
		{"running in push queues", qRunningInstance, []any{"i1"}, true, "COVERING INDEX tasks_running (instance_id=? AND queue=?)"},
		{"running in a queue", qRunningQueue, []any{"i1", "q1"}, true, "COVERING INDEX tasks_running (instance_id=? AND queue=?)"},
		{"expired", qExpired, []any{1000, 100}, true, "tasks_running"},
		{"next due", qNextDue, nil, true, "tasks_due"},
		{"backlog", qBacklog, []any{1000, 100000}, false, "tasks_due (instance_id=? AND queue=? AND run_at<?)"},
		{"queue next run at", qQueueNextRunAt, []any{"i1", "q1", 1000}, true, "tasks_due (instance_id=? AND queue=? AND run_at>?)"},
		// The chart's read: adds through tasks_created, ends through
		// tasks_done, each a range of one queue (GROUP BY sorts the
		// minutes, at most one per row read).
		{"activity adds", qQueueActivity, []any{"i1", "q1", 0, 1000, 100000}, false, "tasks_created (instance_id=? AND queue=? AND created_at>? AND created_at<?)"},
		{"activity ends", qQueueActivity, []any{"i1", "q1", 0, 1000, 100000}, false, "tasks_done (instance_id=? AND queue=? AND state=? AND finished_at>? AND finished_at<?)"},
		{"delete finished", qDeleteFinished, []any{1000, 100}, false, "tasks_done (instance_id=? AND queue=? AND state=? AND finished_at<?)"},
	}
	for st, qs := range listQueries {
		for named, q := range qs {
			args := []any{"i1", "q1"}
			if named == 1 {
				args = append(args, "n")
			}
			args = append(args, pa, pb, 0, "", 51)
			index := map[task.State]string{"": "tasks_created", task.Pending: "tasks_due", task.RetryWait: "tasks_retry",
				task.Running: "tasks_running", task.Succeeded: "tasks_done", task.Failed: "tasks_done", task.Cancelled: "tasks_done"}[st]
			if named == 1 {
				index = "tasks_name"
			}
			checks = append(checks, check{fmt.Sprintf("list %q named=%d", st, named), q, args, true, index})
		}
	}

	run := func(stage string) {
		for _, c := range checks {
			rows, err := s.w.QueryContext(ctx, "EXPLAIN QUERY PLAN "+c.q.text, c.args...)
			if err != nil {
				t.Fatalf("%s: %s: %v", stage, c.name, err)
			}
			var plan []string
			for rows.Next() {
				var id, parent, unused int
				var detail string
				if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
					t.Fatal(err)
				}
				plan = append(plan, detail)
			}
			rows.Close()
			text := strings.Join(plan, "\n")
			t.Logf("%s: %s:\n%s", stage, c.name, text)
			reached := false
			for _, line := range plan {
				if (strings.HasPrefix(line, "SEARCH tasks ") || strings.HasPrefix(line, "SEARCH t ")) && strings.Contains(line, c.index) {
					reached = true
				}
				if strings.HasPrefix(line, "SCAN tasks") || strings.HasPrefix(line, "SCAN t ") || line == "SCAN t" {
					t.Errorf("%s: %s scans tasks: %q\n%s", stage, c.name, line, text)
				}
				if c.noSort && strings.Contains(line, "TEMP B-TREE") {
					t.Errorf("%s: %s sorts: %q\n%s", stage, c.name, line, text)
				}
			}
			if !reached {
				t.Errorf("%s: %s does not reach tasks by %s:\n%s", stage, c.name, c.index, text)
			}
		}
	}
	run("empty")
	seed(t, s)
	if _, err := s.w.ExecContext(ctx, "ANALYZE"); err != nil {
		t.Fatal(err)
	}
	run("analyzed")
}

// seed fills s with a mix of queues and states: many pending, some
// running, many finished.
func seed(t *testing.T, s *Store) {
	ctx := t.Context()
	n := 0
	for i := range 3 {
		inst := &task.Instance{ID: fmt.Sprint("i", i), Org: "o", Name: fmt.Sprint("n", i), Settings: task.DefaultSettings()}
		if err := s.InstanceCreate(ctx, inst); err != nil {
			t.Fatal(err)
		}
		for j := range 3 {
			q := task.NewQueue(inst.ID, fmt.Sprint("q", j), task.ModePull)
			if err := s.QueueCreate(ctx, q); err != nil {
				t.Fatal(err)
			}
			var batch []*task.Task
			for k := range 300 {
				tk, err := task.NewTask(q, task.AddInput{Name: fmt.Sprint("name", k%50, "-", k)}, int64(k), task.URLRules{})
				if err != nil {
					t.Fatal(err)
				}
				n++
				tk.ID = fmt.Sprintf("t%06d", n)
				batch = append(batch, tk)
				if len(batch) == 100 {
					if _, err := s.TaskAdd(ctx, batch); err != nil {
						t.Fatal(err)
					}
					batch = nil
				}
			}
			claimed, err := s.TaskClaim(ctx, &store.ClaimParams{Queue: q, Now: 1000, Limit: 250, LeaseMs: 1000,
				NewLeaseID: func() string { n++; return fmt.Sprint("l", n) }})
			if err != nil {
				t.Fatal(err)
			}
			var ps []*store.FinishParams
			for _, c := range claimed[:200] {
				lease := c.LeaseID
				if _, err := c.Finish(q, 2000, task.Outcome{Status: task.AttemptSucceeded}); err != nil {
					t.Fatal(err)
				}
				ps = append(ps, &store.FinishParams{Task: c, LeaseID: lease})
			}
			if _, err := s.TaskFinish(ctx, ps); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestNewerSchemaRefused checks that a database whose schema is newer than
// this binary is refused with a clear message, and left as it was.
func TestNewerSchemaRefused(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "errand.db")
	s, err := Open(ctx, path, Options{Logger: quietLog})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	var v int
	if err := db.QueryRow(`SELECT max(version) FROM schema_migrations`).Scan(&v); err != nil || v != SchemaVersion() {
		t.Fatalf("schema version %d, %v; want %d", v, err, SchemaVersion())
	}
	if _, err := db.Exec(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, 'future.sql', 0)`, SchemaVersion()+7); err != nil {
		t.Fatal(err)
	}
	db.Close()

	_, err = Open(ctx, path, Options{Logger: quietLog})
	want := fmt.Sprintf("store schema version %d is newer than this errand (%d); upgrade errand", SchemaVersion()+7, SchemaVersion())
	if err == nil || err.Error() != want {
		t.Fatalf("Open(newer) = %v, want %q", err, want)
	}
}

// TestMigrationsNumbered checks the embedded migrations load in order.
func TestMigrationsNumbered(t *testing.T) {
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) == 0 || ms[0].Version != 1 {
		t.Fatalf("migrations = %+v", ms)
	}
}

// TestInterpretError checks the translation of backend errors.
func TestInterpretError(t *testing.T) {
	if err := interpretError(sql.ErrNoRows); err != task.ErrNotFound {
		t.Fatalf("ErrNoRows → %v", err)
	}
	if err := interpretError(context.Canceled); err != context.Canceled {
		t.Fatalf("context.Canceled → %v", err)
	}
	te := task.Errorf(task.CodeLeaseLost, "x")
	if err := interpretError(te); err != te {
		t.Fatalf("domain error → %v", err)
	}
	if code := task.ErrorCode(interpretError(io.ErrUnexpectedEOF)); code != task.CodeInternal {
		t.Fatalf("other error → %s", code)
	}
}

// TestPragmas checks that the connections are set up as intended: WAL,
// the synchronous level asked for, a busy timeout, and read-only readers.
func TestPragmas(t *testing.T) {
	for _, sync := range []string{"", "FULL"} {
		s, err := Open(t.Context(), filepath.Join(t.TempDir(), "p.db"), Options{Synchronous: sync, Logger: quietLog})
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"journal_mode": "wal", "synchronous": "1", "busy_timeout": "5000", "foreign_keys": "0", "query_only": "0"}
		if sync == "FULL" {
			want["synchronous"] = "2"
		}
		for _, db := range []*sql.DB{s.w, s.r} {
			if db == s.r {
				want["query_only"] = "1"
			}
			for p, v := range want {
				var got string
				if err := db.QueryRow("PRAGMA " + p).Scan(&got); err != nil || got != v {
					t.Errorf("synchronous %q: PRAGMA %s = %q, %v; want %q", sync, p, got, err, v)
				}
			}
		}
		if _, err := s.r.Exec("DELETE FROM tasks"); err == nil {
			t.Error("a reader connection could write")
		}
		s.Close()
	}
}
