package sqlite

import (
	"fmt"
	"testing"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// TestFinishByRowid: a claim records the rowids of the tasks it leased, a
// finish of those tasks seeks them by rowid and forgets them, and a rowid
// that holds another task (here swapped by hand, as a VACUUM or a reused
// rowid would leave it) changes nothing there: that chunk is sent again by
// key, and every task gets its own outcome. Trusting the rowid without the
// lease's fence, or dropping the fallback, fails it.
func TestFinishByRowid(t *testing.T) {
	ctx := t.Context()
	s, q := openWithQueue(t, Options{})
	var add []*task.Task
	for i := range 4 {
		tk, err := task.NewTask(q, task.AddInput{Payload: []byte(fmt.Sprintf(`{"n":%d}`, i))}, 1_000, task.URLRules{})
		if err != nil {
			t.Fatal(err)
		}
		tk.ID = fmt.Sprintf("t%d", i)
		add = append(add, tk)
	}
	if _, err := s.TaskAdd(ctx, add); err != nil {
		t.Fatal(err)
	}
	lease := 0
	claimed, err := s.TaskClaim(ctx, &store.ClaimParams{Queue: q, Now: 2_000, Limit: 4, LeaseMs: 60_000,
		NewLeaseID: func() string { lease++; return fmt.Sprintf("lease-%d", lease) }})
	if err != nil || len(claimed) != 4 {
		t.Fatalf("claim: %d, %v", len(claimed), err)
	}
	if len(s.leases) != 4 {
		t.Fatalf("%d rowids recorded, want 4", len(s.leases))
	}
	// The first two leases now name each other's rows.
	a, b := claimed[0].LeaseID, claimed[1].LeaseID
	s.leases[a], s.leases[b] = s.leases[b], s.leases[a]

	ps := make([]*store.FinishParams, len(claimed))
	for i, c := range claimed {
		fence := c.LeaseID
		if _, err := c.Finish(q, 3_000, task.Outcome{Status: task.AttemptSucceeded, HTTPStatus: 200,
			Result: []byte(fmt.Sprintf(`{"of":%q}`, c.ID))}); err != nil {
			t.Fatal(err)
		}
		ps[i] = &store.FinishParams{Task: c, LeaseID: fence}
	}
	res, err := s.TaskFinish(ctx, ps)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range res {
		if e != nil {
			t.Fatalf("finish %s: %v", claimed[i].ID, e)
		}
	}
	if len(s.leases) != 0 {
		t.Fatalf("%d rowids left after the finish, want none", len(s.leases))
	}
	if s.finishedByRow != 2 {
		t.Fatalf("%d tasks finished by rowid, want the 2 whose rowids were right", s.finishedByRow)
	}
	for _, c := range claimed {
		got, err := s.TaskGet(ctx, store.TaskRef{InstanceID: "i1", ID: c.ID})
		if err != nil {
			t.Fatal(err)
		}
		if got.State != task.Succeeded || string(got.Result) != fmt.Sprintf(`{"of":%q}`, c.ID) {
			t.Errorf("%s: %s with result %s, want its own", c.ID, got.State, got.Result)
		}
	}
}
