package sqlite

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// TestMigrateTasksRebuilt fills a store at schema 9 with tasks in every
// state, then opens it with this binary: migration 0010 copies tasks into
// the rebuilt table, and every task must come back field for field, under
// its old rowid, reachable through each state's index, with the state
// CHECK still refusing an unknown state.
func TestMigrateTasksRebuilt(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := sql.Open("sqlite", dsn(path, "immediate", []string{"journal_mode(WAL)"}))
	if err != nil {
		t.Fatal(err)
	}
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	var old []store.Migration
	for _, m := range ms {
		if m.Version <= 9 {
			old = append(old, m)
		}
	}
	for {
		applied, err := migrateNext(ctx, db, old)
		if err != nil {
			t.Fatal(err)
		}
		if applied == nil {
			break
		}
	}
	var v int
	if err := db.QueryRow(`SELECT max(version) FROM schema_migrations`).Scan(&v); err != nil || v != 9 {
		t.Fatalf("old store at schema %d, %v; want 9", v, err)
	}

	q := task.NewQueue("i1", "work", task.ModePush)
	q.Target = &task.Target{Webhook: "https://example.com/hook"}
	var tasks []*task.Task
	for i, st := range task.States {
		tk, err := task.NewTask(q, task.AddInput{Payload: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))}, int64(1_000+i), task.URLRules{})
		if err != nil {
			t.Fatal(err)
		}
		tk.ID = fmt.Sprintf("t%02d", i)
		tk.State = st
		switch st {
		case task.Pending:
			tk.Name = "named"
			tk.Target = &task.Target{Function: "app/send"}
			tk.Params = json.RawMessage(`{"k":"v"}`)
		case task.Running:
			tk.Attempt, tk.StartedAt, tk.DeadlineAt = 1, 2_000, 32_000
			tk.LeaseID, tk.LeaseExpiresAt = "lease-1", 32_000
		case task.RetryWait:
			tk.Attempt, tk.RunAt, tk.LastError = 1, 9_000, "502 from the target"
			tk.Attempts = []task.Attempt{{Attempt: 1, Status: "failed", StartedAt: 2_000, EndedAt: 2_500, HTTPStatus: 502, Error: "502 from the target"}}
		case task.Succeeded:
			tk.Attempt, tk.StartedAt, tk.FinishedAt = 1, 2_000, 2_400
			tk.Result = json.RawMessage(`{"ok":true}`)
			tk.Attempts = []task.Attempt{{Attempt: 1, Status: "succeeded", StartedAt: 2_000, EndedAt: 2_400, HTTPStatus: 200}}
		case task.Failed:
			tk.Attempt, tk.FinishedAt, tk.LastError = 3, 5_000, "gave up"
			tk.DeadLetterOf, tk.Source, tk.Depth = "t99", "rule:r1", 2
		case task.Cancelled:
			tk.FinishedAt, tk.DeadlineSeconds = 4_000, 45
		}
		tasks = append(tasks, tk)
		args, err := taskInsertArgs(nil, tk)
		if err != nil {
			t.Fatal(err)
		}
		// Schema 9 has no priority (0011): the row is inserted without it.
		p := slices.Index(taskCols, "priority")
		oldCols := slices.Delete(slices.Clone(taskCols), p, p+1)
		args = slices.Delete(args, p, p+1)
		insert := `INSERT INTO tasks (` + cols("", oldCols) + `) VALUES (` + strings.Repeat("?, ", len(oldCols)-1) + `?)`
		if _, err := db.ExecContext(ctx, insert, args...); err != nil {
			t.Fatal(err)
		}
	}
	rowids := func(db *sql.DB) map[string]int64 {
		rows, err := db.QueryContext(ctx, `SELECT id, rowid FROM tasks`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		out := map[string]int64{}
		for rows.Next() {
			var id string
			var rid int64
			if err := rows.Scan(&id, &rid); err != nil {
				t.Fatal(err)
			}
			out[id] = rid
		}
		return out
	}
	before := rowids(db)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	s, err := Open(ctx, path, Options{Logger: quietLog})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.w.QueryRow(`SELECT max(version) FROM schema_migrations`).Scan(&v); err != nil || v != SchemaVersion() {
		t.Fatalf("migrated store at schema %d, %v; want %d", v, err, SchemaVersion())
	}
	if got := rowids(s.w); !reflect.DeepEqual(got, before) {
		t.Errorf("rowids after the copy %v, before %v", got, before)
	}
	var check string
	if err := s.w.QueryRow(`PRAGMA integrity_check`).Scan(&check); err != nil || check != "ok" {
		t.Fatalf("integrity_check: %q, %v", check, err)
	}
	var schema string
	if err := s.w.QueryRow(`SELECT group_concat(name, ' ') FROM (SELECT name FROM sqlite_schema WHERE tbl_name = 'tasks' ORDER BY name)`).Scan(&schema); err != nil {
		t.Fatal(err)
	}
	if want := "sqlite_autoindex_tasks_1 tasks tasks_created tasks_done tasks_due tasks_name tasks_retry tasks_running tasks_urgent"; schema != want {
		t.Errorf("tasks' schema objects %q, want %q", schema, want)
	}

	for _, want := range tasks {
		got, err := s.TaskGet(ctx, store.TaskRef{InstanceID: want.InstanceID, ID: want.ID})
		if err != nil {
			t.Fatalf("%s (%s): %v", want.ID, want.State, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s after the migration:\n got %+v\nwant %+v", want.State, got, want)
		}
		page, err := s.TaskList(ctx, &store.ListParams{InstanceID: "i1", Queue: "work", State: want.State, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Tasks) != 1 || page.Tasks[0].ID != want.ID {
			t.Errorf("listing %s after the migration: %d tasks, want %s alone", want.State, len(page.Tasks), want.ID)
		}
	}
	_, err = s.w.ExecContext(ctx, `UPDATE tasks SET state = 'DONE' WHERE id = 't00'`)
	if err == nil || !strings.Contains(err.Error(), "CHECK constraint failed") {
		t.Errorf("an unknown state after the migration: %v, want the CHECK constraint to refuse it", err)
	}
}

// TestMigrateAPIRateOrphans upgrades a store from schema 14, whose
// api_rate could hold the bucket of an instance already deleted, to 15:
// that row is removed and the live instance's bucket kept.
func TestMigrateAPIRateOrphans(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "old.db")
	s, err := Open(ctx, path, Options{Logger: quietLog})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.InstanceCreate(ctx, &task.Instance{ID: "i-live", Org: "acme", Name: "live", CreatedAt: 1, Settings: task.DefaultSettings()}); err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{
		`INSERT INTO api_rate (instance_id, tokens, at) VALUES ('i-live', 3, 7), ('i-gone', 1, 7)`,
		`DROP TABLE console_sessions`,
		`DELETE FROM schema_migrations WHERE version >= 15`,
	} {
		if _, err := s.w.ExecContext(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(ctx, path, Options{Logger: quietLog})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var got string
	if err := s.w.QueryRowContext(ctx, `SELECT coalesce(group_concat(instance_id || '=' || tokens, ' '), '')
		FROM (SELECT * FROM api_rate ORDER BY instance_id)`).Scan(&got); err != nil {
		t.Fatal(err)
	}
	if got != "i-live=3.0" {
		t.Fatalf("api_rate after the upgrade: %q, want the live instance's bucket only", got)
	}
}
