package postgres

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// TestMigrateConcurrently opens several stores on one new schema at once,
// as nodes starting together would: the advisory lock lets each migration
// run once, and every node opens.
func TestMigrateConcurrently(t *testing.T) {
	schema := FreshSchema(t)
	const nodes = 4
	stores := make([]*Store, nodes)
	var wg sync.WaitGroup
	for i := range nodes {
		wg.Go(func() {
			s, err := Open(t.Context(), DatabaseURL(t), Options{Logger: Quiet, Schema: schema})
			if err != nil {
				t.Errorf("node %d: Open: %v", i, err)
				return
			}
			stores[i] = s
		})
	}
	wg.Wait()
	for _, s := range stores {
		if s != nil {
			defer s.Close()
		}
	}
	if t.Failed() {
		return
	}
	var n, version int
	if err := stores[0].pool.QueryRow(t.Context(), `SELECT count(*), max(version) FROM schema_migrations`).Scan(&n, &version); err != nil {
		t.Fatal(err)
	}
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	if n != len(ms) || version != SchemaVersion() {
		t.Fatalf("schema_migrations has %d rows up to version %d; want %d up to %d", n, version, len(ms), SchemaVersion())
	}
	// The tables are in the schema, not in public.
	var where string
	if err := stores[0].pool.QueryRow(t.Context(), `SELECT relnamespace::regnamespace::text FROM pg_class WHERE oid = 'tasks'::regclass`).Scan(&where); err != nil {
		t.Fatal(err)
	}
	if where != schema {
		t.Fatalf("tasks is in schema %s, want %s", where, schema)
	}
}

// TestNewerSchemaRefused: a database migrated by a newer errand is refused
// with a message that says what to do.
func TestNewerSchemaRefused(t *testing.T) {
	schema := FreshSchema(t)
	s := OpenTestSchema(t, schema)
	newer := SchemaVersion() + 1
	_, err := s.pool.Exec(t.Context(), `INSERT INTO schema_migrations (version, name) VALUES ($1, 'from the future')`, newer)
	s.Close()
	if err != nil {
		t.Fatal(err)
	}
	_, err = Open(t.Context(), DatabaseURL(t), Options{Logger: Quiet, Schema: schema})
	want := fmt.Sprintf("store schema version %d is newer than this errand (%d); upgrade errand", newer, SchemaVersion())
	if err == nil || err.Error() != want {
		t.Fatalf("Open on a newer schema: %v; want %q", err, want)
	}
}

// TestSessionSettings: every connection runs with the safety timeouts,
// without JIT compilation and without parallel maintenance workers, unless
// the URL sets its own.
func TestSessionSettings(t *testing.T) {
	s := OpenTest(t)
	defer s.Close()
	show := func(s *Store, name string) string {
		t.Helper()
		var v string
		if err := s.pool.QueryRow(t.Context(), `SELECT current_setting($1)`, name).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	for name, want := range map[string]string{
		"statement_timeout":                   "30s",
		"idle_in_transaction_session_timeout": "1min",
		"application_name":                    "errand",
		"jit":                                 "off",
		"max_parallel_maintenance_workers":    "0",
	} {
		if got := show(s, name); got != want {
			t.Fatalf("%s = %q, want %q", name, got, want)
		}
	}
	schema := FreshSchema(t)
	o, err := Open(t.Context(), WithParam(WithParam(WithParam(DatabaseURL(t), "statement_timeout", "5000"), "jit", "on"), "max_parallel_maintenance_workers", "2"), Options{Logger: Quiet, Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if got := show(o, "statement_timeout"); got != "5s" {
		t.Fatalf("statement_timeout from the URL = %q, want 5s", got)
	}
	if got := show(o, "jit"); got != "on" {
		t.Fatalf("jit from the URL = %q, want on", got)
	}
	if got := show(o, "max_parallel_maintenance_workers"); got != "2" {
		t.Fatalf("max_parallel_maintenance_workers from the URL = %q, want 2", got)
	}
}

// TestOptions: a schema that is not a plain identifier and a malformed URL
// are refused; Close is safe twice.
func TestOptions(t *testing.T) {
	url := DatabaseURL(t)
	for _, bad := range []string{"public; DROP TABLE x", "a-b", "1abc", strings.Repeat("x", 64)} {
		if s, err := Open(t.Context(), url, Options{Logger: Quiet, Schema: bad}); err == nil {
			s.Close()
			t.Fatalf("Open with schema %q succeeded", bad)
		}
	}
	if _, err := Open(t.Context(), "postgres://%zz", Options{Logger: Quiet}); err == nil {
		t.Fatal("Open with a malformed URL succeeded")
	}
	s := OpenTest(t)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// TestReopen checks that the data survive closing and opening the schema
// again, with no migration applied twice.
func TestReopen(t *testing.T) {
	schema := FreshSchema(t)
	s := OpenTestSchema(t, schema)
	if _, err := s.pool.Exec(t.Context(), `INSERT INTO api_keys (id, org, created_at, revoked_at, digest, prefix, grants)
		VALUES ('k', 'acme', 1, 0, '\x01', 'p', '[]')`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = OpenTestSchema(t, schema)
	defer s.Close()
	if n, err := s.KeyCount(context.Background()); err != nil || n != 1 {
		t.Fatalf("KeyCount after reopen = %d, %v", n, err)
	}
}

// TestMigrateCreatedNotRunning upgrades a store holding PENDING, RUNNING and
// SUCCEEDED tasks from schema 7 (tasks_created whole) to 8 (without the
// RUNNING versions): every task is kept, and the listing without a state,
// which now takes the RUNNING tasks from tasks_running, still shows them all
// newest first.
func TestMigrateCreatedNotRunning(t *testing.T) {
	ctx := t.Context()
	schema := FreshSchema(t)
	s := OpenTestSchema(t, schema)
	q := workQueue(t, s)
	addRows(t, s, q, 0, 6, `{}`, 0)
	running, err := s.TaskClaim(ctx, &store.ClaimParams{Queue: q, Now: 2, Limit: 4, LeaseMs: 60_000,
		NewLeaseID: func() string { return "lease" }})
	if err != nil || len(running) != 4 {
		t.Fatalf("claim: %d, %v", len(running), err)
	}
	done := running[0]
	if _, err := done.Finish(q, 3, task.Outcome{Status: task.AttemptSucceeded, HTTPStatus: 200}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.TaskFinish(ctx, []*store.FinishParams{{Task: done, LeaseID: "lease"}}); err != nil {
		t.Fatal(err)
	}
	// Back to schema 7, as a store written by the previous errand.
	for _, stmt := range []string{
		`DROP TABLE console_sessions`,
		`DROP TABLE api_rate`,
		`ALTER TABLE triggers DROP COLUMN hook_signature`,
		`ALTER TABLE triggers DROP COLUMN priority`,
		`DROP INDEX tasks_urgent`,
		`ALTER TABLE tasks DROP COLUMN priority`,
		`DROP INDEX tasks_created`,
		`CREATE INDEX tasks_created ON tasks (instance_id, queue, created_at, id)`,
		`DELETE FROM schema_migrations WHERE version >= 8`,
	} {
		if _, err := s.pool.Exec(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()

	s = OpenTestSchema(t, schema)
	defer s.Close()
	var def string
	if err := s.pool.QueryRow(ctx, `SELECT pg_get_indexdef('tasks_created'::regclass)`).Scan(&def); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(def, "WHERE (state <> 'RUNNING'") {
		t.Fatalf("tasks_created after the upgrade: %s", def)
	}
	page, err := s.TaskList(ctx, &store.ListParams{InstanceID: q.InstanceID, Queue: q.Name, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	states := map[task.State]int{}
	for _, tk := range page.Tasks {
		got = append(got, tk.ID)
		states[tk.State]++
	}
	// addRows gives t0…t5 one created_at: newest first is id order, descending.
	if want := "t5 t4 t3 t2 t1 t0"; strings.Join(got, " ") != want {
		t.Fatalf("listed %v, want %s", got, want)
	}
	if states[task.Pending] != 2 || states[task.Running] != 3 || states[task.Succeeded] != 1 {
		t.Fatalf("states after the upgrade: %v", states)
	}
}

// TestMigrateAPIRateInstance upgrades a store from schema 12, whose
// api_rate could hold the bucket of an instance already deleted, to 13:
// that row is removed, the live instance's bucket is kept, and the foreign
// key then removes a bucket with its instance.
func TestMigrateAPIRateInstance(t *testing.T) {
	ctx := t.Context()
	schema := FreshSchema(t)
	s := OpenTestSchema(t, schema)
	if err := s.InstanceCreate(ctx, &task.Instance{ID: "i-live", Org: "acme", Name: "live", CreatedAt: 1, Settings: task.DefaultSettings()}); err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{
		`DROP TABLE console_sessions`,
		`ALTER TABLE api_rate DROP CONSTRAINT api_rate_instance`,
		`INSERT INTO api_rate (instance_id, tokens, at) VALUES ('i-live', 3, 7), ('i-gone', 1, 7)`,
		`DELETE FROM schema_migrations WHERE version >= 13`,
	} {
		if _, err := s.pool.Exec(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()

	s = OpenTestSchema(t, schema)
	defer s.Close()
	rows := func() string {
		t.Helper()
		var got string
		if err := s.pool.QueryRow(ctx, `SELECT coalesce(string_agg(instance_id || '=' || tokens, ' ' ORDER BY instance_id), '')
			FROM api_rate`).Scan(&got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := rows(); got != "i-live=3" {
		t.Fatalf("api_rate after the upgrade: %q, want the live instance's bucket only", got)
	}
	if err := s.InstanceDelete(ctx, store.InstanceRef{Org: "acme", Name: "live"}); err != nil {
		t.Fatal(err)
	}
	if got := rows(); got != "" {
		t.Fatalf("api_rate after the instance's delete: %q", got)
	}
}
