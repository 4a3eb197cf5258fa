package postgres

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/errandhq/errand/internal/task"
)

// The package's own tests of table upkeep (statistics, vacuum) share these.

// workQueue stores instance i1 and its pull queue "work" on s.
func workQueue(t testing.TB, s *Store) *task.Queue {
	t.Helper()
	inst := &task.Instance{ID: "i1", Org: "acme", Name: "jobs", CreatedAt: 1, Settings: task.DefaultSettings()}
	if err := s.InstanceCreate(t.Context(), inst); err != nil {
		t.Fatal(err)
	}
	q := task.NewQueue("i1", "work", task.ModePull)
	if err := s.QueueCreate(t.Context(), q); err != nil {
		t.Fatal(err)
	}
	return q
}

// longQueue stores an instance whose id is as long as errand's own (21
// characters) and its pull queue "work" on s.
func longQueue(t testing.TB, s *Store) *task.Queue {
	t.Helper()
	const iid = "0kb2m3c4d5e6f7g8h9i0j"
	inst := &task.Instance{ID: iid, Org: "acme", Name: "jobs", CreatedAt: 1, Settings: task.DefaultSettings()}
	if err := s.InstanceCreate(t.Context(), inst); err != nil {
		t.Fatal(err)
	}
	q := task.NewQueue(iid, "work", task.ModePull)
	if err := s.QueueCreate(t.Context(), q); err != nil {
		t.Fatal(err)
	}
	return q
}

// addRows adds n tasks of payload to q, due at runAt (0: when added), in
// adds of 100, their ids t<from>, t<from+1>, ….
func addRows(t *testing.T, s *Store, q *task.Queue, from, n int, payload string, runAt int64) {
	t.Helper()
	for b := 0; b < n; b += 100 {
		var ts []*task.Task
		for i := b; i < min(n, b+100); i++ {
			tk, err := task.NewTask(q, task.AddInput{Payload: []byte(payload)}, 1, task.URLRules{})
			if err != nil {
				t.Fatal(err)
			}
			tk.ID = fmt.Sprint("t", from+i)
			if runAt != 0 {
				tk.RunAt = runAt
			}
			ts = append(ts, tk)
		}
		if _, err := s.TaskAdd(t.Context(), ts); err != nil {
			t.Fatal(err)
		}
	}
}

// flushStats makes every idle connection of s report its counts
// (n_live_tup, n_dead_tup) now, not at its next idle moment a second on.
func flushStats(t *testing.T, s *Store) {
	t.Helper()
	for _, c := range s.pool.AcquireAllIdle(t.Context()) {
		_, err := c.Exec(t.Context(), `SELECT pg_stat_force_next_flush()`)
		c.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
}

// addNumbered adds n tasks of payload to q in one TaskAdd, their ids
// t<*next>, … zero-padded so that they sort in the order added (as id.New
// makes them), and moves *next past them.
func addNumbered(tb testing.TB, s *Store, q *task.Queue, payload json.RawMessage, next *int, n int) {
	tb.Helper()
	ts := make([]*task.Task, n)
	for i := range ts {
		t, err := task.NewTask(q, task.AddInput{Payload: payload}, 1_000, task.URLRules{})
		if err != nil {
			tb.Fatal(err)
		}
		t.ID = fmt.Sprintf("t%020d", *next)
		*next++
		ts[i] = t
	}
	if _, err := s.TaskAdd(tb.Context(), ts); err != nil {
		tb.Fatal(err)
	}
}
