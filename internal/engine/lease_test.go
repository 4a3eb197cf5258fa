package engine_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/errandhq/errand/internal/clock"
	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/store/sqlite"
	"github.com/errandhq/errand/internal/task"
)

// TestConcurrentLeasersNeverShare: many workers lease and ack thousands of
// tasks; no task is ever held under two valid leases and each is acked
// exactly once.
func TestConcurrentLeasersNeverShare(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.queue("work", &task.QueuePatch{Mode: ptr(task.ModePull)})
	const n = 2000
	for i := 0; i < n; i += 100 {
		ins := make([]task.AddInput, 100)
		res, err := b.eng.TaskAdd(b.ctx, engine.QueueRef{Org: "dev", Instance: "jobs", Queue: "work"}, ins)
		if err != nil || len(res) != 100 {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	held := map[string]string{} // task → lease currently valid
	acked := map[string]int{}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				ts, err := b.eng.Lease(b.ctx, engine.QueueRef{Org: "dev", Instance: "jobs", Queue: "work"}, engine.LeaseParams{Count: 1 + w*7%20, LeaseSeconds: 300})
				if err != nil {
					errs <- err
					return
				}
				if len(ts) == 0 {
					return
				}
				mu.Lock()
				for _, tk := range ts {
					if other, ok := held[tk.ID]; ok {
						mu.Unlock()
						errs <- fmt.Errorf("task %s leased twice: %s and %s", tk.ID, other, tk.LeaseID)
						return
					}
					held[tk.ID] = tk.LeaseID
				}
				mu.Unlock()
				for _, tk := range ts {
					if _, err := b.eng.Ack(b.ctx, engine.TaskRef{Org: "dev", Instance: "jobs", ID: tk.ID}, engine.AckParams{LeaseID: tk.LeaseID, Result: nil}); err != nil {
						errs <- err
						return
					}
					mu.Lock()
					acked[tk.ID]++
					delete(held, tk.ID)
					mu.Unlock()
					// A second ack with the same lease is done, not stored
					// again: the task keeps its one attempt.
					if again, err := b.eng.Ack(b.ctx, engine.TaskRef{Org: "dev", Instance: "jobs", ID: tk.ID}, engine.AckParams{LeaseID: tk.LeaseID, Result: nil}); err != nil ||
						again.State != task.Succeeded || len(again.Attempts) != 1 {
						errs <- fmt.Errorf("second ack: %v, %v", again, err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if len(acked) != n {
		t.Fatalf("acked %d distinct tasks, want %d", len(acked), n)
	}
	for id, c := range acked {
		if c != 1 {
			t.Fatalf("task %s acked %d times", id, c)
		}
	}
}

// TestLongPollWakesOnAdd: a lease with waitSeconds returns as soon as a task
// is added, without the clock moving.
func TestLongPollWakesOnAdd(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.queue("work", &task.QueuePatch{Mode: ptr(task.ModePull)})
	got := make(chan []*task.Task, 1)
	go func() {
		ts, err := b.eng.Lease(b.ctx, engine.QueueRef{Org: "dev", Instance: "jobs", Queue: "work"}, engine.LeaseParams{Count: 5, LeaseSeconds: 30, WaitSeconds: 30})
		if err != nil {
			t.Error(err)
		}
		got <- ts
	}()
	b.sig.Parked(t, 1) // it found nothing and waits
	select {
	case <-got:
		t.Fatal("returned before any task")
	default:
	}
	id := b.add("work", task.AddInput{})
	select {
	case ts := <-got:
		if len(ts) != 1 || ts[0].ID != id {
			t.Fatalf("%+v", ts)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("long poll did not wake on add")
	}
	// With nothing to lease, the wait ends when the (fake) clock passes it.
	// Its timer is armed before it parks (a timer of another service may
	// be armed for the same time: the chainer polls every 5 s).
	parked := b.sig.Parked(t, 1)
	done := make(chan int, 1)
	go func() {
		ts, _ := b.eng.Lease(b.ctx, engine.QueueRef{Org: "dev", Instance: "jobs", Queue: "work"}, engine.LeaseParams{Count: 1, LeaseSeconds: 30, WaitSeconds: 5})
		done <- len(ts)
	}()
	b.sig.Parked(t, parked+1)
	b.clock.Advance(5 * time.Second)
	select {
	case n := <-done:
		if n != 0 {
			t.Fatalf("leased %d", n)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("wait did not end with the clock")
	}
}

// TestLongPollAsksAgainAfterItsWait: a lease that waited asks Admitted
// again before it claims: once the caller is no longer admitted (its key
// revoked meanwhile) it ends with that refusal and leases nothing, though
// a task came.
func TestLongPollAsksAgainAfterItsWait(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.queue("work", &task.QueuePatch{Mode: ptr(task.ModePull)})
	var revoked atomic.Bool
	asked := atomic.Int32{}
	admitted := func() error {
		asked.Add(1)
		if revoked.Load() {
			return task.Errorf(task.CodeUnauthenticated, "revoked")
		}
		return nil
	}
	done := make(chan error, 1)
	go func() {
		ts, err := b.eng.Lease(b.ctx, engine.QueueRef{Org: "dev", Instance: "jobs", Queue: "work"},
			engine.LeaseParams{Count: 5, LeaseSeconds: 30, WaitSeconds: 30, Admitted: admitted})
		if err == nil && len(ts) > 0 {
			err = fmt.Errorf("leased %d tasks", len(ts))
		}
		done <- err
	}()
	b.sig.Parked(t, 1)
	if n := asked.Load(); n != 0 {
		t.Fatalf("asked %d times before any wait; the call's own check stands for the first claim", n)
	}
	revoked.Store(true)
	id := b.add("work", task.AddInput{})
	select {
	case err := <-done:
		if !task.IsCode(err, task.CodeUnauthenticated) {
			t.Fatalf("the lease ended with %v; want UNAUTHENTICATED", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the long poll did not wake on the add")
	}
	tk, err := b.eng.TaskGet(b.ctx, engine.TaskRef{Org: "dev", Instance: "jobs", ID: id})
	if err != nil || tk.State != task.Pending || tk.Attempt != 0 {
		t.Fatalf("the task after the refused lease: %+v %v; want it still due, unattempted", tk, err)
	}
}

// TestLongPollWakesWhenATaskComesDue: a waiting lease takes a task that
// comes due by the clock alone (a delay, a backoff), with no add or other
// change to wake it; and a task due as the wait runs out is still taken.
func TestLongPollWakesWhenATaskComesDue(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.queue("work", &task.QueuePatch{Mode: ptr(task.ModePull)})
	ref := engine.QueueRef{Org: "dev", Instance: "jobs", Queue: "work"}
	for _, c := range []struct {
		name        string
		delay, wait int
	}{{"due before the wait ends", 3, 30}, {"due as the wait ends", 5, 5}} {
		id := b.add("work", task.AddInput{Delay: ptr(float64(c.delay))})
		parked := b.sig.Parked(t, 0)
		got := make(chan []*task.Task, 1)
		go func() {
			ts, err := b.eng.Lease(b.ctx, ref, engine.LeaseParams{Count: 1, LeaseSeconds: 30, WaitSeconds: c.wait})
			if err != nil {
				t.Error(err)
			}
			got <- ts
		}()
		b.sig.Parked(t, parked+1) // nothing due yet: it waits
		b.clock.Advance(time.Duration(c.delay) * time.Second)
		select {
		case ts := <-got:
			if len(ts) != 1 || ts[0].ID != id {
				t.Fatalf("%s: leased %+v, want %s", c.name, ts, id)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: the lease did not wake when the task came due", c.name)
		}
	}
}

// TestExpiredLeaseIsRescued: the rescuer service, not a test call, finds an
// expired lease as soon as the clock passes it.
func TestExpiredLeaseIsRescued(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.queue("work", &task.QueuePatch{Mode: ptr(task.ModePull)})
	id := b.add("work", task.AddInput{})
	ts, err := b.eng.Lease(b.ctx, engine.QueueRef{Org: "dev", Instance: "jobs", Queue: "work"}, engine.LeaseParams{Count: 1, LeaseSeconds: 30})
	if err != nil || len(ts) != 1 {
		t.Fatal(err)
	}
	b.sig.RescuerAsleepUntil(t, T0.Add(30*time.Second)) // on the new expiry
	b.clock.Advance(30 * time.Second)
	tk := b.waitState(id, task.RetryWait)
	if tk.Attempts[0].Status != task.AttemptExpired || tk.RunAt != T0.UnixMilli()+30_000+10_000 {
		t.Fatalf("%+v", tk)
	}
	if _, err := b.eng.Ack(b.ctx, engine.TaskRef{Org: "dev", Instance: "jobs", ID: id}, engine.AckParams{LeaseID: ts[0].LeaseID, Result: nil}); !task.IsCode(err, task.CodeLeaseLost) {
		t.Fatalf("ack after expiry: %v", err)
	}
}

// TestRescuerWakeReadsOnlyTheNextExpiry: a lease taken wakes the rescuer,
// which reads no expired lease (a fresh lease cannot have run out) and,
// told the new lease's expiry with the wake, not even the next expiry; a
// wake that says nothing (another node's change) reads the next expiry.
// The expired leases are read when the time it set comes.
func TestRescuerWakeReadsOnlyTheNextExpiry(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.queue("work", &task.QueuePatch{Mode: ptr(task.ModePull)})
	first := b.add("work", task.AddInput{})
	ref := engine.QueueRef{Org: "dev", Instance: "jobs", Queue: "work"}
	if ts, err := b.eng.Lease(b.ctx, ref, engine.LeaseParams{Count: 1, LeaseSeconds: 30}); err != nil || len(ts) != 1 {
		t.Fatalf("lease: %d, %v", len(ts), err)
	}
	b.sig.RescuerAsleepUntil(t, T0.Add(30*time.Second))
	fulls, reads := engine.RescuerFullPasses(b.eng), engine.RescuerNextReads(b.eng)
	b.add("work", task.AddInput{})
	if ts, err := b.eng.Lease(b.ctx, ref, engine.LeaseParams{Count: 1, LeaseSeconds: 10}); err != nil || len(ts) != 1 {
		t.Fatalf("lease: %d, %v", len(ts), err)
	}
	b.sig.RescuerAsleepUntil(t, T0.Add(10*time.Second)) // the sooner expiry, learned on the wake
	b.add("work", task.AddInput{})
	third, err := b.eng.Lease(b.ctx, ref, engine.LeaseParams{Count: 1, LeaseSeconds: 60})
	if err != nil || len(third) != 1 {
		t.Fatalf("lease: %d, %v", len(third), err)
	}
	b.sig.RescuerAsleepUntil(t, T0.Add(10*time.Second)) // a later expiry changes nothing
	if got := engine.RescuerFullPasses(b.eng); got != fulls {
		t.Fatalf("the leases' wakes ran %d full passes, want none", got-fulls)
	}
	if got := engine.RescuerNextReads(b.eng); got != reads {
		t.Fatalf("the leases' wakes read the next expiry %d times, want none: it came with them", got-reads)
	}
	// An extension that shortens a lease brings its expiry sooner.
	if _, err := b.eng.Extend(b.ctx, engine.TaskRef{Org: "dev", Instance: "jobs", ID: third[0].ID},
		engine.ExtendParams{LeaseID: third[0].LeaseID, LeaseSeconds: 5}); err != nil {
		t.Fatalf("extend: %v", err)
	}
	b.sig.RescuerAsleepUntil(t, T0.Add(5*time.Second))
	if got := engine.RescuerNextReads(b.eng); got != reads {
		t.Fatalf("the extension read the next expiry %d times, want none", got-reads)
	}
	// A wake that does not say what changed reads the next expiry.
	engine.WakeLeases(b.eng)
	b.sig.RescuerAsleepUntil(t, T0.Add(5*time.Second))
	if got := engine.RescuerNextReads(b.eng); got != reads+1 {
		t.Fatalf("a plain wake read the next expiry %d times, want 1", got-reads)
	}
	b.clock.Advance(30 * time.Second)
	b.sig.RescuerAsleepUntil(t, T0.Add(30*time.Second+time.Minute)) // both expired: nothing left but the backstop
	if got := engine.RescuerFullPasses(b.eng); got <= fulls {
		t.Fatal("the time set passed without a full pass")
	}
	if tk, err := b.eng.TaskGet(b.ctx, engine.TaskRef{Org: "dev", Instance: "jobs", ID: first}); err != nil || tk.State == task.Running {
		t.Fatalf("the first lease ran out 30 s ago and the task is %v (%v)", tk.State, err)
	}
}

// advanceOnClaim is a real store that moves the clock by by just after
// its next pull claim: time passes between a lease's claim and its read of
// the queue's next runAt.
type advanceOnClaim struct {
	store.Store
	clock *clock.Fake
	by    atomic.Int64
}

func (a *advanceOnClaim) TaskClaim(ctx context.Context, p *store.ClaimParams) ([]*task.Task, error) {
	got, err := a.Store.TaskClaim(ctx, p)
	if d := a.by.Load(); d != 0 && p.Queue.Mode == task.ModePull && a.by.CompareAndSwap(d, 0) {
		a.clock.Advance(time.Duration(d))
	}
	return got, err
}

// TestLongPollTakesATaskDueSinceItsClaim: a task that comes due between a
// waiting lease's claim (which found nothing) and its read of the queue's
// next runAt is claimed at once, not left for a change or the wait's end.
func TestLongPollTakesATaskDueSinceItsClaim(t *testing.T) {
	t.Parallel()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "errand.db"), sqlite.Options{Logger: discardLog})
	if err != nil {
		t.Fatal(err)
	}
	as := &advanceOnClaim{Store: st}
	b := start(t, as, func() { _ = st.Close() })
	as.clock = b.clock
	b.queue("work", &task.QueuePatch{Mode: ptr(task.ModePull)})
	id := b.add("work", task.AddInput{Delay: ptr(2.0)})
	as.by.Store(int64(2 * time.Second))
	got := make(chan []*task.Task, 1)
	go func() {
		ts, err := b.eng.Lease(b.ctx, engine.QueueRef{Org: "dev", Instance: "jobs", Queue: "work"}, engine.LeaseParams{Count: 1, LeaseSeconds: 30, WaitSeconds: 30})
		if err != nil {
			t.Error(err)
		}
		got <- ts
	}()
	select {
	case ts := <-got:
		if len(ts) != 1 || ts[0].ID != id {
			t.Fatalf("leased %+v, want %s", ts, id)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the task that came due after the claim was left waiting")
	}
}

// TestEndLongPollsAnswersWaitingLeases: a node that stops answers the
// leases waiting for tasks at once, with none (the fake clock never
// moves: only EndLongPolls can end the wait), and a later lease does not
// wait.
func TestEndLongPollsAnswersWaitingLeases(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.queue("work", &task.QueuePatch{Mode: ptr(task.ModePull)})
	ref := engine.QueueRef{Org: "dev", Instance: "jobs", Queue: "work"}
	got := make(chan []*task.Task, 1)
	go func() {
		ts, err := b.eng.Lease(b.ctx, ref, engine.LeaseParams{Count: 5, LeaseSeconds: 30, WaitSeconds: 30})
		if err != nil {
			t.Error(err)
		}
		got <- ts
	}()
	b.sig.Parked(t, 1)
	b.eng.EndLongPolls()
	select {
	case ts := <-got:
		if ts == nil || len(ts) != 0 {
			t.Fatalf("a waiting lease on stop: %+v, want none", ts)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting lease was not answered on stop")
	}
	if ts, err := b.eng.Lease(b.ctx, ref, engine.LeaseParams{Count: 1, LeaseSeconds: 30, WaitSeconds: 30}); err != nil || len(ts) != 0 {
		t.Fatalf("a lease after the end: %+v %v, want none at once", ts, err)
	}
}
