package postgres

import (
	"strings"
	"testing"
)

// TestRefreshStats: the store analyzes tasks when it grew past 1 MB
// without statistics or to more than twice the rows they counted, skips
// when another node holds the check's lock, the statistics are fresh or
// only the pages grew (churn), and the dispatcher's read of the due queues
// then goes through tasks_due.
func TestRefreshStats(t *testing.T) {
	s := OpenTest(t)
	defer s.Close()
	ctx := t.Context()
	// Autovacuum stays out of it: its ANALYZE would race the test's.
	if _, err := s.pool.Exec(ctx, `ALTER TABLE tasks SET (autovacuum_enabled = off)`); err != nil {
		t.Fatal(err)
	}
	refresh := func(want bool, when string) {
		t.Helper()
		ran, err := s.RefreshStats(ctx)
		if err != nil || ran != want {
			t.Fatalf("%s: RefreshStats = %v, %v; want %v", when, ran, err, want)
		}
	}
	refresh(false, "empty")

	q := workQueue(t, s)
	add := func(from int) { // 10,000 future tasks (a backlog), ids from on
		t.Helper()
		addRows(t, s, q, from, 10_000, `{"n":"`+strings.Repeat("x", 100)+`"}`, 1e13)
		flushStats(t, s)
	}
	add(0)

	// Another node checking now: this one skips.
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var locked bool
	if err := tx.QueryRow(ctx, sqlStatsLock, statsLockClass).Scan(&locked); err != nil || !locked {
		t.Fatalf("taking the lock: %v, %v", locked, err)
	}
	refresh(false, "the lock held elsewhere")
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}

	refresh(true, "10,000 tasks, no statistics")
	var analyzed int64
	if err := s.pool.QueryRow(ctx, `SELECT analyze_count FROM pg_stat_user_tables WHERE relid = 'tasks'::regclass`).Scan(&analyzed); err != nil || analyzed != 1 {
		t.Fatalf("analyze_count = %d, %v; want 1", analyzed, err)
	}
	refresh(false, "fresh statistics")
	var target int
	if err := s.pool.QueryRow(ctx, `SELECT array_length(histogram_bounds::text::text[], 1) FROM pg_stats
		WHERE tablename = 'tasks' AND schemaname = current_schema() AND attname = 'id'`).Scan(&target); err != nil || target != statsTarget+1 {
		t.Fatalf("the ids' histogram has %d bounds, %v; want %d (statsTarget)", target, err, statsTarget+1)
	}

	// Churn: every row updated three times (as claims and finishes do),
	// through an index (no HOT), so that the table's pages more than
	// double with dead versions; its rows do not, and nothing is analyzed.
	var before, after int64
	if err := s.pool.QueryRow(ctx, `SELECT pg_relation_size('tasks')`).Scan(&before); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := s.pool.Exec(ctx, `UPDATE tasks SET run_at = run_at + 1`); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.pool.QueryRow(ctx, `SELECT pg_relation_size('tasks')`).Scan(&after); err != nil || after <= 2*before {
		t.Fatalf("the churn grew tasks from %d to %d bytes (%v); the test wants more than twice", before, after, err)
	}
	refresh(false, "churn, as many rows")

	add(10_000)
	refresh(false, "twice the rows analyzed, not more")
	add(20_000)
	refresh(true, "three times the rows analyzed")
	if err := s.pool.QueryRow(ctx, `SELECT analyze_count FROM pg_stat_user_tables WHERE relid = 'tasks'::regclass`).Scan(&analyzed); err != nil || analyzed != 2 {
		t.Fatalf("analyze_count = %d, %v; want 2", analyzed, err)
	}

	plan, err := explain(ctx, s.pool, sqlDueQueues, []any{int64(2e12)}, false, false)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(plan, "tasks_due") || strings.Contains(plan, "Sort") {
		t.Fatalf("the due queues' read after the refresh does not seek tasks_due:\n%s", plan)
	}
}
