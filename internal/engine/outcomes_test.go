package engine

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/errandhq/errand/internal/clock"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
	"github.com/errandhq/errand/internal/testkit/stores"
)

// flakyFinish fails TaskFinish with err the first n times.
type flakyFinish struct {
	store.Store
	n     int
	err   error
	calls int
}

func (f *flakyFinish) TaskFinish(ctx context.Context, ps []*store.FinishParams) ([]error, error) {
	f.calls++
	if f.calls <= f.n {
		return nil, f.err
	}
	return f.Store.TaskFinish(ctx, ps)
}

// TestStoreOutcomesTriesAgain: a batch the store answered UNAVAILABLE (a
// deadlock, a dropped connection, a database restarting) is written again,
// not dropped, since a dropped batch's tasks would be delivered again when
// their leases run out: for about 2.5 s when a caller waits, and for as
// long as a push lease may hold when nobody does (a database back after an
// outage of 20 s still gets them). Any other error is returned at once.
func TestStoreOutcomesTriesAgain(t *testing.T) {
	t.Parallel()
	st, c := succeededClaim(t)
	ps := []*store.FinishParams{{Task: c, LeaseID: "l1"}}
	down := task.Errorf(task.CodeUnavailable, "down")

	other := &flakyFinish{Store: st, n: 1, err: task.Errorf(task.CodeInternal, "broken")}
	if _, _, err := outcomesOnFakeClock(other, ps, pushPatience); !task.IsCode(err, task.CodeInternal) || other.calls != 1 {
		t.Fatalf("INTERNAL: err %v after %d calls; want it at once", err, other.calls)
	}
	for _, patience := range []time.Duration{callerPatience, pushPatience} {
		always := &flakyFinish{Store: st, n: 1 << 30, err: down}
		_, took, err := outcomesOnFakeClock(always, ps, patience)
		if !task.IsCode(err, task.CodeUnavailable) || took > patience || took < patience-outcomeMaxPause {
			t.Fatalf("always UNAVAILABLE, patience %v: err %v after %v (%d calls)", patience, err, took, always.calls)
		}
	}
	// Down for about 20 s: a caller is told, a push outcome is stored.
	outage := &flakyFinish{Store: st, n: 28, err: down}
	if _, _, err := outcomesOnFakeClock(outage, ps, callerPatience); !task.IsCode(err, task.CodeUnavailable) {
		t.Fatalf("a 20 s outage with a caller waiting: %v", err)
	}
	outage.calls = 0
	errs, took, err := outcomesOnFakeClock(outage, ps, pushPatience)
	if err != nil || errs[0] != nil || outage.calls != 29 || took < 20*time.Second {
		t.Fatalf("a 20 s outage: %v %v after %d calls, %v; want stored on the 29th", errs, err, outage.calls, took)
	}
	got, err := st.TaskGet(context.Background(), store.TaskRef{InstanceID: "i1", ID: "t1"})
	if err != nil || got.State != task.Succeeded {
		t.Fatalf("stored: %v %v", got, err)
	}
}

// TestOutcomeDeadlineWhileStopping: a push outcome is tried for
// pushPatience while the node runs, and no longer than callerPatience
// after it began to stop, so that a stop during an outage ends in
// seconds; a write under way is never cut (storeOutcomes takes no
// deadline into the store).
func TestOutcomeDeadlineWhileStopping(t *testing.T) {
	d := &Dispatcher{}
	start := time.UnixMilli(1_000_000)
	if got := d.outcomeDeadline(start); !got.Equal(start.Add(pushPatience)) {
		t.Fatalf("running: %v", got.Sub(start))
	}
	d.stoppingAt.Store(start.Add(10 * time.Second).UnixMilli())
	if got := d.outcomeDeadline(start); !got.Equal(start.Add(10*time.Second + callerPatience)) {
		t.Fatalf("stopping 10 s in: %v", got.Sub(start))
	}
	if got := d.outcomeDeadline(start.Add(-time.Minute)); !got.Equal(start.Add(-time.Minute + pushPatience)) {
		t.Fatalf("a batch whose patience ran out before the stop: %v", got.Sub(start))
	}
}

// outcomesOnFakeClock runs storeOutcomes with patience on a fake clock,
// moving it to each pause's end as soon as the pause begins, and returns
// its answer and how long it took on that clock.
func outcomesOnFakeClock(st store.Store, ps []*store.FinishParams, patience time.Duration) ([]error, time.Duration, error) {
	deadline := func(start time.Time) time.Time { return start.Add(patience) }
	clk := clock.NewFake(time.UnixMilli(0))
	ctx, done := context.WithCancel(context.Background())
	var errs []error
	var err error
	go func() {
		defer done()
		errs, err = storeOutcomes(context.Background(), st, ps, slog.New(slog.NewTextHandler(io.Discard, nil)), clk, deadline)
	}()
	for clk.WaitForSleepers(ctx, 1) == nil {
		if at := clk.Sleepers(); len(at) > 0 {
			clk.Advance(at[0].Sub(clk.Now()))
		}
	}
	return errs, clk.Now().Sub(time.UnixMilli(0)), err
}

// lostAnswer writes TaskFinish's first batch for real and then answers
// UNAVAILABLE, as a PostgreSQL that crashes after the commit but before
// its answer does.
type lostAnswer struct {
	store.Store
	calls int
}

func (l *lostAnswer) TaskFinish(ctx context.Context, ps []*store.FinishParams) ([]error, error) {
	l.calls++
	errs, err := l.Store.TaskFinish(ctx, ps)
	if l.calls == 1 && err == nil {
		return nil, task.Errorf(task.CodeUnavailable, "connection reset by peer")
	}
	return errs, err
}

// TestStoreOutcomesLostAnswer: an outcome whose first write committed
// although the store answered UNAVAILABLE is refused LEASE_LOST by the
// next try (its own commit finished the task); the caller is told
// UNAVAILABLE — it may have been recorded — never LEASE_LOST, which would
// tell a worker that its stored ack was refused.
func TestStoreOutcomesLostAnswer(t *testing.T) {
	t.Parallel()
	st, c := succeededClaim(t)
	ctx := context.Background()
	lost := &lostAnswer{Store: st}
	errs, err := storeOutcomes(ctx, lost, []*store.FinishParams{{Task: c, LeaseID: "l1"}}, slog.New(slog.NewTextHandler(io.Discard, nil)), clock.Real{}, callerDeadline)
	if err != nil || lost.calls != 2 {
		t.Fatalf("storeOutcomes: %v after %d calls; want an answer on the second", err, lost.calls)
	}
	if !task.IsCode(errs[0], task.CodeUnavailable) {
		t.Fatalf("the outcome's answer is %v; want UNAVAILABLE (it may have been recorded), not LEASE_LOST", errs[0])
	}
	got, err := st.TaskGet(ctx, store.TaskRef{InstanceID: "i1", ID: "t1"})
	if err != nil || got.State != task.Succeeded {
		t.Fatalf("stored: %v %v", got, err)
	}
}

// succeededClaim stores one pull task on a fresh SQLite store, claims it
// under lease l1 and marks the claimed copy succeeded, ready for
// storeOutcomes.
func succeededClaim(t *testing.T) (store.Store, *task.Task) {
	t.Helper()
	st := stores.Open(t, "sqlite")
	t.Cleanup(func() { _ = st.Close() })
	ctx := context.Background()
	inst := &task.Instance{ID: "i1", Org: "o", Name: "jobs", CreatedAt: 1, Settings: task.DefaultSettings()}
	if err := st.InstanceCreate(ctx, inst); err != nil {
		t.Fatal(err)
	}
	q := task.NewQueue("i1", "q", task.ModePull)
	if err := st.QueueCreate(ctx, q); err != nil {
		t.Fatal(err)
	}
	tk, err := task.NewTask(q, task.AddInput{}, 1, task.URLRules{})
	if err != nil {
		t.Fatal(err)
	}
	tk.ID = "t1"
	if _, err := st.TaskAdd(ctx, []*task.Task{tk}); err != nil {
		t.Fatal(err)
	}
	claimed, err := st.TaskClaim(ctx, &store.ClaimParams{Queue: q, Now: 2, Limit: 1, LeaseMs: 60_000, NewLeaseID: func() string { return "l1" }})
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim: %v %v", claimed, err)
	}
	c := claimed[0]
	if _, err := c.Finish(q, 3, task.Outcome{Status: task.AttemptSucceeded}); err != nil {
		t.Fatal(err)
	}
	return st, c
}
