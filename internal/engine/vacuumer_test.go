package engine_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/errandhq/errand/internal/clock"
	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/task"
	"github.com/errandhq/errand/internal/testkit/stores"
)

// TestVacuumerVacuumsDeadRows: on PostgreSQL the engine runs a vacuumer
// that reads the task table's dead row count every interval and vacuums
// once it reaches the threshold, and not before; on SQLite it runs none.
func TestVacuumerVacuumsDeadRows(t *testing.T) {
	t.Parallel()
	lite := stores.Open(t, "sqlite")
	t.Cleanup(func() { lite.Close() })
	if e := engine.New(engine.Config{Store: lite, Dev: true, Logger: discardLog}); engine.HasVacuumer(e) {
		t.Fatal("an engine on SQLite runs a vacuumer")
	}
	open, schema, url := stores.OpenPostgresSharedSchema(t)
	st := open()
	t.Cleanup(func() { st.Close() })
	e := engine.New(engine.Config{Store: st, Dev: true, Logger: discardLog})
	fc := clock.NewFake(T0)
	const minDead = 50
	sig := engine.VacuumerSet(t, e, fc, minDead)
	ctx := context.Background()
	if err := e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Stop)
	ref := engine.QueueRef{Org: "dev", Instance: "jobs", Queue: "q"}
	if _, err := e.QueueCreate(ctx, ref, &task.QueuePatch{Mode: ptr(task.ModePull)}); err != nil {
		t.Fatal(err)
	}
	ins := make([]task.AddInput, 100)
	for i := range ins {
		ins[i] = task.AddInput{Payload: []byte(`{}`), Delay: ptr(3600.0)}
	}
	for range 10 {
		if _, err := e.TaskAdd(ctx, ref, ins); err != nil {
			t.Fatal(err)
		}
	}

	// Dead rows, reported to the statistics at once: a session of the
	// test's own deletes rows behind the engine's back and flushes its
	// counts.
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	kill := func(n int) {
		t.Helper()
		stmts := []string{`SET search_path = ` + pgx.Identifier{schema}.Sanitize(),
			`DELETE FROM tasks WHERE ctid = ANY (ARRAY(SELECT ctid FROM tasks LIMIT ` + strconv.Itoa(n) + `))`,
			`SELECT pg_stat_force_next_flush()`, `SELECT 1`}
		for _, s := range stmts {
			if _, err := conn.Exec(ctx, s); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
		}
	}

	kill(10) // under the threshold
	fc.Advance(2 * engine.VacuumEvery)
	if dead, vacuums := sig.Passes(t, 1); dead != 10 || vacuums != 0 {
		t.Fatalf("first pass read %d dead rows and vacuumed %d times; want 10 and none", dead, vacuums)
	}
	// 900 more: over 50 plus a hundredth of the live rows. (Reading a
	// page may prune the first ten and take them off the count.)
	kill(900)
	fc.Advance(2 * engine.VacuumEvery)
	if dead, vacuums := sig.Passes(t, 2); dead < 900 || vacuums != 1 {
		t.Fatalf("second pass read %d dead rows and vacuumed %d times; want ≥ 900 and one vacuum", dead, vacuums)
	}
	var count int64
	if err := conn.QueryRow(ctx, `SELECT vacuum_count FROM pg_stat_user_tables WHERE relid = 'tasks'::regclass`).Scan(&count); err != nil {
		t.Fatal(err)
	}
	if count < 1 {
		t.Fatalf("vacuum_count = %d after the vacuumer's vacuum, want ≥ 1", count)
	}
}
