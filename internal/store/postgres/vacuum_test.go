package postgres

import (
	"fmt"
	"regexp"
	"strconv"
	"testing"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// TestVacuumTasksClearsTheFront checks why VacuumTasks exists: claims leave
// the entries of the tasks they took at the front of tasks_due, where the
// next claim's scan steps over them until a vacuum removes them. After
// thousands of claims the scan for the one task still waiting reads many
// index pages; after VacuumTasks it reads a few.
func TestVacuumTasksClearsTheFront(t *testing.T) {
	// A database of its own: an open transaction of another test in a
	// shared one would keep the dead rows from the vacuum.
	s, err := Open(t.Context(), FreshDatabaseURL(t), Options{Logger: Quiet})
	if err != nil {
		t.Fatal(err)
	}
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
	const churn = 20_000
	add := func(from, n int, now int64) {
		t.Helper()
		var ts []*task.Task
		for i := range n {
			tk, err := task.NewTask(q, task.AddInput{}, now, task.URLRules{})
			if err != nil {
				t.Fatal(err)
			}
			tk.ID = fmt.Sprintf("t%06d", from+i)
			ts = append(ts, tk)
		}
		if res, err := s.TaskAdd(ctx, ts); err != nil || res[0].Err != nil {
			t.Fatalf("TaskAdd: %v, %v", res, err)
		}
	}
	for i := 0; i < churn; i += 1000 {
		add(i, 1000, 10)
	}
	leases := 0
	for claimed := 0; claimed < churn; {
		got, err := s.TaskClaim(ctx, &store.ClaimParams{Queue: q, Now: 20, Limit: 1000, LeaseMs: 60_000,
			NewLeaseID: func() string { leases++; return strconv.Itoa(leases) }})
		if err != nil || len(got) == 0 {
			t.Fatalf("TaskClaim: %d, %v", len(got), err)
		}
		claimed += len(got)
	}
	add(churn, 1, 30) // the one task waiting, behind the claimed ones' entries

	// The index pages a claim's scan reads to find the waiting task.
	pages := func() int {
		t.Helper()
		rows, err := s.pool.Query(ctx, `EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF, SUMMARY OFF)
			SELECT id FROM tasks WHERE instance_id = 'i1' AND queue = 'work' AND state IN ('PENDING', 'RETRY_WAIT')
			AND run_at <= 40 ORDER BY run_at, id LIMIT 500`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		hit := regexp.MustCompile(`Buffers: shared (?:hit=(\d+))?(?: ?read=(\d+))?`)
		n := -1
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			if m := hit.FindStringSubmatch(line); m != nil && n < 0 {
				h, _ := strconv.Atoi(m[1])
				r, _ := strconv.Atoi(m[2])
				n = h + r
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := pages()

	// Far more than the dead rows here: no vacuum.
	if _, ran, err := s.VacuumTasks(ctx, 10*churn); err != nil || ran {
		t.Fatalf("VacuumTasks(%d) = ran %v, %v; want no vacuum", 10*churn, ran, err)
	}
	if _, ran, err := s.VacuumTasks(ctx, 0); err != nil || !ran {
		t.Fatalf("VacuumTasks(0) = ran %v, %v; want a vacuum", ran, err)
	}
	after := pages()
	t.Logf("index and heap pages read to find the one waiting task: %d before the vacuum, %d after", before, after)
	if before < 20 || after > 5 {
		t.Fatalf("pages read: %d before the vacuum, %d after; want ≥ 20 before and ≤ 5 after", before, after)
	}
	var vacuums int64
	if err := s.pool.QueryRow(ctx, `SELECT vacuum_count FROM pg_stat_user_tables WHERE relid = 'tasks'::regclass`).Scan(&vacuums); err != nil {
		t.Fatal(err)
	}
	if vacuums < 1 {
		t.Fatalf("vacuum_count = %d, want ≥ 1", vacuums)
	}
}
