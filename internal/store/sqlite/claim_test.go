package sqlite

import (
	"fmt"
	"testing"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// TestClaimWritesWhatClaimMade: a claim stores exactly what task.Claim
// made of each task, both when the tasks share their claim's times and
// budget (qClaimSetUniformN, the values bound once) and when one has a
// deadline of its own (qClaimSetN). Binding a shared value to the wrong
// column, or treating tasks with different deadlines as uniform, fails it.
func TestClaimWritesWhatClaimMade(t *testing.T) {
	for _, c := range []struct {
		name    string
		ownLast bool // the last task has its own deadline
	}{{"uniform", false}, {"mixed", true}} {
		t.Run(c.name, func(t *testing.T) {
			ctx := t.Context()
			s, _ := openWithQueue(t, Options{})
			q := task.NewQueue("i1", "hooks", task.ModePush)
			q.Target = &task.Target{Webhook: "https://example.com/hook"}
			q.DeadlineSeconds = 30
			if err := s.QueueCreate(ctx, q); err != nil {
				t.Fatal(err)
			}
			claimed := addAndClaim(t, s, q, newTasks(t, q, "h", 12, func(i int) task.AddInput { // chunks of 10 and of 1
				in := task.AddInput{Payload: []byte(`{}`)}
				if c.ownLast && i == 11 {
					own := 5
					in.DeadlineSeconds = &own
				}
				return in
			}))
			if got := claimUniform(claimed); got == c.ownLast {
				t.Fatalf("claimUniform = %v for %s tasks", got, c.name)
			}
			for _, want := range claimed {
				got, err := s.TaskGet(ctx, store.TaskRef{InstanceID: "i1", ID: want.ID})
				if err != nil {
					t.Fatal(err)
				}
				if got.State != want.State || got.Attempt != want.Attempt || got.MaxAttempts != want.MaxAttempts ||
					got.StartedAt != want.StartedAt || got.DeadlineAt != want.DeadlineAt ||
					got.LeaseID != want.LeaseID || got.LeaseExpiresAt != want.LeaseExpiresAt {
					t.Errorf("%s stored %s attempt %d/%d started %d deadline %d lease %s until %d; claimed %s attempt %d/%d started %d deadline %d lease %s until %d",
						want.ID, got.State, got.Attempt, got.MaxAttempts, got.StartedAt, got.DeadlineAt, got.LeaseID, got.LeaseExpiresAt,
						want.State, want.Attempt, want.MaxAttempts, want.StartedAt, want.DeadlineAt, want.LeaseID, want.LeaseExpiresAt)
				}
			}
		})
	}
}

// TestFinishWritesWhatFinishMade: a finish stores exactly what
// task.Finish made of each task, by rowid or by key, with the values the
// batch shares bound once (all succeeded) or each entry carrying all of
// them (one failed). Binding a shared value to the wrong column, or
// calling a mixed batch shared, fails it.
func TestFinishWritesWhatFinishMade(t *testing.T) {
	for _, c := range []struct {
		name       string
		forget     bool // drop the rowids: by key
		failOne    bool // the sixth attempt fails: its chunk of ten is not shared
		wantShared bool
	}{
		{"shared by rowid", false, false, true},
		{"shared by key", true, false, true},
		{"mixed by rowid", false, true, false},
		{"mixed by key", true, true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := t.Context()
			s, q := openWithQueue(t, Options{})
			claimed := addAndClaim(t, s, q, newTasks(t, q, "p", 12, nil))
			if c.forget {
				s.leases = nil
			}
			ps := make([]*store.FinishParams, len(claimed))
			for i, tk := range claimed {
				fence := tk.LeaseID
				o := task.Outcome{Status: task.AttemptSucceeded, HTTPStatus: 200, Result: []byte(fmt.Sprintf(`{"i":%d}`, i))}
				if c.failOne && i == 5 {
					o = task.Outcome{Status: task.AttemptFailed, HTTPStatus: 500, Error: "HTTP 500"}
				}
				if _, err := tk.Finish(q, 3_000+int64(i), o); err != nil {
					t.Fatal(err)
				}
				ps[i] = &store.FinishParams{Task: tk, LeaseID: fence}
			}
			args := finishArgs(ps, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11})
			if got := finishShared(args, 10); got != c.wantShared { // the first chunk's
				t.Fatalf("finishShared = %v, want %v", got, c.wantShared)
			}
			res, err := s.TaskFinish(ctx, ps)
			if err != nil {
				t.Fatal(err)
			}
			for i, e := range res {
				if e != nil {
					t.Fatalf("finish %d: %v", i, e)
				}
			}
			for _, want := range claimed {
				got, err := s.TaskGet(ctx, store.TaskRef{InstanceID: "i1", ID: want.ID})
				if err != nil {
					t.Fatal(err)
				}
				if got.State != want.State || got.Attempt != want.Attempt || got.MaxAttempts != want.MaxAttempts ||
					got.RunAt != want.RunAt || got.StartedAt != want.StartedAt || got.DeadlineAt != want.DeadlineAt ||
					got.FinishedAt != want.FinishedAt || got.LeaseID != want.LeaseID || got.LeaseExpiresAt != want.LeaseExpiresAt ||
					got.LastError != want.LastError || string(got.Result) != string(want.Result) || len(got.Attempts) != len(want.Attempts) {
					t.Errorf("%s stored %+v\nfinished %+v", want.ID, *got, *want)
				}
			}
		})
	}
}
