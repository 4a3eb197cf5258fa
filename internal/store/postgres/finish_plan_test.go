package postgres

import (
	"strconv"
	"testing"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// TestFinishSeeksEachRow finishes 1,000 claimed tasks of a 20,000-task
// table, and every finish must seek its rows by tasks_pkey, as
// pg_stat_user_tables counts: on connections that have never run the
// finish, over statistics taken while no task was RUNNING (a custom plan
// hashed a sequential scan of tasks there), and on connections that ran
// the finish many times while the table was nearly empty, before the
// statistics service's ANALYZE of the grown table (without that ANALYZE
// the plan kept from the small table scans it whole).
func TestFinishSeeksEachRow(t *testing.T) {
	t.Run("StaleStatistics", func(t *testing.T) { finishSeeks(t, false) })
	t.Run("PlannedWhileEmpty", func(t *testing.T) { finishSeeks(t, true) })
}

func finishSeeks(t *testing.T, plannedEmpty bool) {
	ctx := t.Context()
	s := OpenTest(t)
	defer s.Close()
	if _, err := s.pool.Exec(ctx, `ALTER TABLE tasks SET (autovacuum_enabled = off)`); err != nil {
		t.Fatal(err)
	}
	q := workQueue(t, s)
	lease := 0
	claim := func(n int) []*store.FinishParams {
		t.Helper()
		got, err := s.TaskClaim(ctx, &store.ClaimParams{Queue: q, Now: 2_000, Limit: n, LeaseMs: 60_000,
			NewLeaseID: func() string { lease++; return "lease-" + strconv.Itoa(lease) }})
		if err != nil || len(got) != n {
			t.Fatalf("claim: %d tasks, %v; want %d", len(got), err, n)
		}
		ps := make([]*store.FinishParams, len(got))
		for i, tk := range got {
			fence := tk.LeaseID
			if _, err := tk.Finish(q, 2_005, task.Outcome{Status: task.AttemptSucceeded, HTTPStatus: 200}); err != nil {
				t.Fatal(err)
			}
			ps[i] = &store.FinishParams{Task: tk, LeaseID: fence}
		}
		return ps
	}
	if plannedEmpty {
		// Every connection of the pool runs the finish more than five
		// times (the custom plans PostgreSQL tries before it may keep a
		// generic one) while tasks holds a handful of rows.
		for i := range 4 * 8 {
			addRows(t, s, q, 1_000_000+i, 1, `{}`, 0)
			if _, err := s.TaskFinish(ctx, claim(1)); err != nil {
				t.Fatal(err)
			}
		}
	}
	addRows(t, s, q, 0, 20_000, `{}`, 0)
	if plannedEmpty {
		// The statistics service's ANALYZE, as the table has grown.
		if ran, err := s.RefreshStats(ctx); err != nil || !ran {
			t.Fatalf("RefreshStats = %v, %v; want an ANALYZE", ran, err)
		}
	} else if _, err := s.pool.Exec(ctx, `ANALYZE tasks`); err != nil {
		t.Fatal(err)
	}
	ps := claim(1_000)
	scans := func() (seq, idx int64) {
		t.Helper()
		flushStats(t, s)
		if err := s.pool.QueryRow(ctx, `SELECT seq_scan, coalesce(idx_scan, 0) FROM pg_stat_user_tables
			WHERE relid = 'tasks'::regclass`).Scan(&seq, &idx); err != nil {
			t.Fatal(err)
		}
		return seq, idx
	}
	seq0, idx0 := scans()
	errs, err := s.TaskFinish(ctx, ps)
	if err != nil {
		t.Fatal(err)
	}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("finish of %s: %v", ps[i].Task.ID, err)
		}
	}
	seq1, idx1 := scans()
	if seq1 != seq0 || idx1-idx0 < int64(len(ps)) {
		t.Errorf("the finish of %d tasks made %d sequential scans of tasks and %d index scans; want none and one a task",
			len(ps), seq1-seq0, idx1-idx0)
	}
}
