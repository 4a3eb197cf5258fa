package postgres

import (
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// TestVacuumTasks: the store vacuums tasks once its dead row versions pass
// the thresholds, not before; skips while another node holds the vacuum's
// lock or another command the table; says when a snapshot held elsewhere
// kept what died from being removed; and asks whether its role may vacuum
// the table at all.
func TestVacuumTasks(t *testing.T) {
	// A database of its own: what a VACUUM may remove depends on the
	// snapshots of every transaction in the database, and other tests' run
	// in the shared one.
	ctx := t.Context()
	s, err := Open(ctx, FreshDatabase(t), Options{Logger: Quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// Autovacuum stays out of it: its VACUUM would race the test's.
	if _, err := s.pool.Exec(ctx, `ALTER TABLE tasks SET (autovacuum_enabled = off)`); err != nil {
		t.Fatal(err)
	}
	vacuum := func(wantRan, wantCleared bool, when string) {
		t.Helper()
		ran, cleared, err := s.VacuumTasks(ctx)
		if err != nil || ran != wantRan || (ran && cleared != wantCleared) {
			t.Fatalf("%s: VacuumTasks = %v, %v, %v; want %v, %v", when, ran, cleared, err, wantRan, wantCleared)
		}
	}
	counts := func() (dead, vacuums int64) {
		t.Helper()
		if err := s.pool.QueryRow(ctx, `SELECT n_dead_tup, vacuum_count FROM pg_stat_user_tables
			WHERE relid = 'tasks'::regclass`).Scan(&dead, &vacuums); err != nil {
			t.Fatal(err)
		}
		return dead, vacuums
	}
	churn := func() { // every row updated once, through an index (no HOT)
		t.Helper()
		if _, err := s.pool.Exec(ctx, `UPDATE tasks SET run_at = run_at + 1`); err != nil {
			t.Fatal(err)
		}
		flushStats(t, s)
	}
	vacuum(false, true, "empty")

	q := workQueue(t, s)
	addRows(t, s, q, 0, 12_000, `{}`, 0)
	flushStats(t, s)
	vacuum(false, true, "12,000 rows, none dead")

	churn()
	if dead, _ := counts(); dead < vacuumMinDead {
		t.Fatalf("n_dead_tup = %d after the churn; the test wants at least %d", dead, vacuumMinDead)
	}
	// Another node vacuuming now: this one skips.
	other, err := s.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Exec(ctx, `SELECT pg_advisory_lock($1::int4, 'tasks'::regclass::oid::int4)`, vacuumLockClass); err != nil {
		t.Fatal(err)
	}
	vacuum(false, false, "the lock held elsewhere")
	if _, err := other.Exec(ctx, `SELECT pg_advisory_unlock($1::int4, 'tasks'::regclass::oid::int4)`, vacuumLockClass); err != nil {
		t.Fatal(err)
	}
	other.Release()

	// An ANALYZE at work on the table (another node's stats service): the
	// VACUUM skips it and says it did not run.
	held, err := s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := held.Exec(ctx, `LOCK TABLE tasks IN SHARE UPDATE EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	vacuum(false, false, "the table held by an ANALYZE")
	if err := held.Rollback(ctx); err != nil {
		t.Fatal(err)
	}

	vacuum(true, true, "12,000 dead versions")
	timeouts(t, s, "after a vacuum")
	if dead, vacuums := counts(); dead >= vacuumMinDead || vacuums != 1 {
		t.Fatalf("after the vacuum: n_dead_tup = %d, vacuum_count = %d; want fewer than %d, 1", dead, vacuums, vacuumMinDead)
	}
	vacuum(false, true, "vacuumed, nothing dead since")

	// A snapshot held elsewhere from before the next churn: what that
	// churn leaves dead stays (still visible to it), and the store says so.
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM tasks`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	churn()
	vacuum(true, false, "a snapshot holds the dead versions")
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	vacuum(true, true, "the snapshot gone")

	// A role that does not own tasks may not vacuum it: the check says so
	// (VACUUM itself would only warn and do nothing).
	if _, err := s.pool.Exec(ctx, `DO $$ BEGIN
		IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'errand_not_owner') THEN CREATE ROLE errand_not_owner; END IF;
		EXECUTE format('GRANT USAGE ON SCHEMA %I TO errand_not_owner', current_schema());
	END $$`); err != nil {
		t.Fatal(err)
	}
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL ROLE errand_not_owner`); err != nil {
			return err
		}
		var due, owner bool
		var vacuums int64
		if err := tx.QueryRow(ctx, sqlVacuumDue, vacuumMinDead, vacuumDeadShare).Scan(&due, &owner, &vacuums); err != nil {
			return err
		}
		if owner {
			t.Errorf("sqlVacuumDue says errand_not_owner may vacuum tasks")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// timeouts fails t unless every connection of s's pool has the session's
// statement_timeout of 30 s (the vacuum lifts it for itself alone).
func timeouts(t *testing.T, s *Store, when string) {
	t.Helper()
	ctx := t.Context()
	var held []*pgxpool.Conn
	defer func() {
		for _, c := range held {
			c.Release()
		}
	}()
	for range s.pool.Stat().TotalConns() {
		c, err := s.pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	for i, c := range held {
		var v string
		if err := c.QueryRow(ctx, `SELECT current_setting('statement_timeout')`).Scan(&v); err != nil {
			t.Fatal(err)
		}
		if v != "30s" {
			t.Fatalf("%s: connection %d of %d has statement_timeout %s, want 30s", when, i+1, len(held), v)
		}
	}
}
