package engine_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/errandhq/errand/internal/clock"
	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/store/postgres"
	"github.com/errandhq/errand/internal/task"
	"github.com/errandhq/errand/internal/testkit/stores"
)

// addBacklog stores a queue (instance i1) with n future tasks of payload
// on st, in adds of 100.
func addBacklog(t *testing.T, st store.Store, queue string, n int, payload string) {
	t.Helper()
	ctx := context.Background()
	inst := &task.Instance{ID: "i1", Org: "dev", Name: "jobs", CreatedAt: 1, Settings: task.DefaultSettings()}
	if err := st.InstanceCreate(ctx, inst); err != nil {
		t.Fatal(err)
	}
	q := task.NewQueue("i1", queue, task.ModePull)
	if err := st.QueueCreate(ctx, q); err != nil {
		t.Fatal(err)
	}
	for b := range n / 100 {
		var ts []*task.Task
		for i := range 100 {
			tk, err := task.NewTask(q, task.AddInput{Payload: []byte(payload)}, 1, task.URLRules{})
			if err != nil {
				t.Fatal(err)
			}
			tk.ID = fmt.Sprint("t", b*100+i)
			tk.RunAt = 1e13
			ts = append(ts, tk)
		}
		if _, err := st.TaskAdd(ctx, ts); err != nil {
			t.Fatal(err)
		}
	}
}

// startKeeping starts an engine on st with a fake clock (its services
// check once, at start), and returns its signals and its Stop.
func startKeeping(t *testing.T, st store.Store) (*engine.Signals, func()) {
	t.Helper()
	eng := engine.New(engine.Config{Store: st, Clock: clock.NewFake(time.UnixMilli(1_000_000)),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	sig := engine.WithSignals(eng)
	if err := eng.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return sig, eng.Stop
}

// TestStatsKeeperAnalyzesAGrownTable: on PostgreSQL the engine runs the
// stats keeper, whose first check (at start) analyzes a tasks table that
// holds a backlog and no statistics.
func TestStatsKeeperAnalyzesAGrownTable(t *testing.T) {
	st := stores.Open(t, "postgres")
	defer st.Close()
	addBacklog(t, st, "backlog", 10_000, `{"padding":"`+fmt.Sprint(make([]byte, 60))+`"}`)
	sig, stop := startKeeping(t, st)
	defer stop()
	sig.StatsRefreshed(t, 1)
}

// TestVacuumKeeperVacuumsADeadTable: on PostgreSQL the engine runs the
// vacuum keeper, whose first check (at start) vacuums a tasks table whose
// rows were all updated since they were added.
func TestVacuumKeeperVacuumsADeadTable(t *testing.T) {
	dbURL := stores.PostgresDatabase(t)
	ctx := context.Background()
	st, err := postgres.Open(ctx, dbURL, postgres.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// A connection of the test's own: autovacuum stays out of the table (a
	// fresh database's first visit would race the service's VACUUM, which
	// skips a table autovacuum holds), and the churn below is reported
	// (n_dead_tup) before the statement after it returns.
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `ALTER TABLE tasks SET (autovacuum_enabled = off)`); err != nil {
		t.Fatal(err)
	}
	addBacklog(t, st, "churn", 12_000, `{}`)
	// Every row updated once; the statistics taken, so that the stats
	// service has nothing to do (its ANALYZE would hold the table).
	for _, sql := range []string{`UPDATE tasks SET run_at = run_at + 1`, `ANALYZE tasks`, `SELECT pg_stat_force_next_flush()`} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	sig, stop := startKeeping(t, st)
	defer stop()
	sig.Vacuumed(t, 1)
	var vacuums int64
	if err := conn.QueryRow(ctx, `SELECT vacuum_count FROM pg_stat_user_tables WHERE relid = 'tasks'::regclass`).Scan(&vacuums); err != nil || vacuums != 1 {
		t.Fatalf("vacuum_count = %d, %v; want 1", vacuums, err)
	}
}
