package postgres

import (
	"context"
	"fmt"
	"testing"

	"github.com/errandhq/errand/internal/task"
)

// TestLeaseRenewalsAreHOT checks what the schema is built for: a heartbeat
// and an extend change no indexed column, so PostgreSQL updates the row
// within its page (a heap-only tuple) and touches no index. The tasks are
// few, so their page has room for the new versions whatever other
// sessions of the server hold back from pruning.
func TestLeaseRenewalsAreHOT(t *testing.T) {
	s := OpenTest(t)
	defer s.Close()
	ctx := t.Context()
	inst := &task.Instance{ID: "i1", Org: "acme", Name: "jobs", CreatedAt: 1, Settings: task.DefaultSettings()}
	if err := s.InstanceCreate(ctx, inst); err != nil {
		t.Fatal(err)
	}
	q := task.NewQueue("i1", "work", task.ModePull)
	if err := s.QueueCreate(ctx, q); err != nil {
		t.Fatal(err)
	}
	// Running tasks as a claim leaves them, stored as they are.
	var claimed []*task.Task
	for i := range 4 {
		tk, err := task.NewTask(q, task.AddInput{}, 1, task.URLRules{})
		if err != nil {
			t.Fatal(err)
		}
		tk.ID = fmt.Sprint("t", i)
		if err := tk.Claim(q, 1, fmt.Sprint("L", i), 1000); err != nil {
			t.Fatal(err)
		}
		claimed = append(claimed, tk)
	}
	if res, err := s.TaskAdd(ctx, claimed); err != nil || res[0].Err != nil {
		t.Fatalf("TaskAdd: %v, %v", res, err)
	}
	var ids, insts, leases []string
	for _, c := range claimed {
		ids, insts, leases = append(ids, c.ID), append(insts, c.InstanceID), append(leases, c.LeaseID)
	}

	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck
	// The counts include this session's earlier transactions not yet
	// reported: compare before and after.
	counts := func() (upd, hot int) {
		t.Helper()
		if err := tx.QueryRow(ctx, `SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_xact_user_tables
			WHERE relid = 'tasks'::regclass`).Scan(&upd, &hot); err != nil {
			t.Fatal(err)
		}
		return upd, hot
	}
	upd0, hot0 := counts()
	if _, err := tx.Exec(ctx, sqlHeartbeat, insts, ids, leases, int64(5000)); err != nil {
		t.Fatal(err)
	}
	// An extend, as TaskUpdate writes it: every lifecycle column again,
	// only the lease's expiry changed.
	c := claimed[0]
	if err := c.Extend(c.LeaseID, 2, 60); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, sqlTaskUpdate, taskUpdateArgs(c, c.Result, c.Attempts)...); err != nil {
		t.Fatal(err)
	}
	upd, hot := counts()
	if upd-upd0 != 5 || hot-hot0 != 5 {
		t.Fatalf("%d updates, %d of them HOT; want 5 and 5", upd-upd0, hot-hot0)
	}
}
