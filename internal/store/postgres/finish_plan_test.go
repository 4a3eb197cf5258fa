package postgres

import (
	"strconv"
	"testing"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// TestFinishSeeksEachRow finishes 1,000 claimed tasks on connections that
// have never run the finish, in a table whose statistics were taken while
// no task was RUNNING: the conditions under which a custom plan hashed a
// sequential scan of tasks. Every finish must seek its rows by tasks_pkey
// instead, as pg_stat_user_tables counts.
func TestFinishSeeksEachRow(t *testing.T) {
	ctx := t.Context()
	s := OpenTest(t)
	defer s.Close()
	if _, err := s.pool.Exec(ctx, `ALTER TABLE tasks SET (autovacuum_enabled = off)`); err != nil {
		t.Fatal(err)
	}
	q := workQueue(t, s)
	addRows(t, s, q, 0, 20_000, `{}`, 0)
	if _, err := s.pool.Exec(ctx, `ANALYZE tasks`); err != nil {
		t.Fatal(err)
	}
	lease := 0
	got, err := s.TaskClaim(ctx, &store.ClaimParams{Queue: q, Now: 2_000, Limit: 1_000, LeaseMs: 60_000,
		NewLeaseID: func() string { lease++; return "lease-" + strconv.Itoa(lease) }})
	if err != nil || len(got) != 1_000 {
		t.Fatalf("claim: %d tasks, %v", len(got), err)
	}
	ps := make([]*store.FinishParams, len(got))
	for i, tk := range got {
		fence := tk.LeaseID
		if _, err := tk.Finish(q, 2_005, task.Outcome{Status: task.AttemptSucceeded, HTTPStatus: 200}); err != nil {
			t.Fatal(err)
		}
		ps[i] = &store.FinishParams{Task: tk, LeaseID: fence}
	}
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
