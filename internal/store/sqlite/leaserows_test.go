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
	claimed := addAndClaim(t, s, q, newTasks(t, q, "t", 4, nil))
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

// TestAddClaimRecordsRowids: the tasks an add inserts RUNNING (its claim)
// are recorded under their leases with the rowids SQLite gave them, so
// their finish goes by rowid too; tasks added but not claimed are not
// recorded.
func TestAddClaimRecordsRowids(t *testing.T) {
	ctx := t.Context()
	s, _ := openWithQueue(t, Options{})
	q := task.NewQueue("i1", "hooks", task.ModePush)
	q.Target = &task.Target{Webhook: "https://example.com/hook"}
	if err := s.QueueCreate(ctx, q); err != nil {
		t.Fatal(err)
	}
	add := newTasks(t, q, "h", 5, nil)
	lease := 0
	_, claimed, err := s.TaskAddClaim(ctx, add, &store.ClaimParams{Queue: q, Now: 2_000, Limit: 5, LeaseMs: 60_000,
		MaxRunning: 3,
		NewLeaseID: func() string { lease++; return fmt.Sprintf("add-lease-%d", lease) }, Due: true})
	if err != nil || len(claimed) != 3 {
		t.Fatalf("add-claim: %d claimed, %v; want the queue's cap of 3", len(claimed), err)
	}
	if len(s.leases) != 3 {
		t.Fatalf("%d rowids recorded, want 3", len(s.leases))
	}
	ps := make([]*store.FinishParams, len(claimed))
	for i, c := range claimed {
		var rid int64
		if err := s.r.QueryRow(`SELECT rowid FROM tasks WHERE instance_id = 'i1' AND id = ?`, c.ID).Scan(&rid); err != nil {
			t.Fatal(err)
		}
		if got := s.leases[c.LeaseID]; got != rid {
			t.Errorf("%s: recorded rowid %d, its row is %d", c.ID, got, rid)
		}
		fence := c.LeaseID
		if _, err := c.Finish(q, 3_000, task.Outcome{Status: task.AttemptSucceeded, HTTPStatus: 200}); err != nil {
			t.Fatal(err)
		}
		ps[i] = &store.FinishParams{Task: c, LeaseID: fence}
	}
	if res, err := s.TaskFinish(ctx, ps); err != nil || res[0] != nil || res[1] != nil || res[2] != nil {
		t.Fatalf("finish: %v, %v", res, err)
	}
	if s.finishedByRow != 3 {
		t.Fatalf("%d tasks finished by rowid, want 3", s.finishedByRow)
	}
}
