package engine_test

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/task"
)

// TestPurgeKeepsThePushAttemptsSlot: a purge while a push attempt is in
// flight keeps the attempt's slot under maxConcurrent 1 and its name until
// the target answers; the answer removes the task, and only then does the
// next task start.
func TestPurgeKeepsThePushAttemptsSlot(t *testing.T) {
	t.Parallel()
	b := setup(t)
	g := newGate(t)
	b.queue("q", &task.QueuePatch{Target: targetPtr(g.URL), MaxConcurrent: ptr(ptr(1))})
	ref := engine.QueueRef{Org: "dev", Instance: "jobs", Queue: "q"}
	first := b.add("q", task.AddInput{Name: "once"})
	// The second task due a millisecond later, so that the first is the
	// one a claim takes: with one runAt, ids made in one millisecond of
	// the fake clock sort as made only while no other test's clock made
	// an id of another millisecond in between (a parallel test's).
	b.clock.Advance(time.Millisecond)
	b.add("q", task.AddInput{})
	g.waitFor(t, "the first attempt", func() bool { n, _, _ := g.counts(); return n == 1 })
	if n, err := b.eng.QueuePurge(b.ctx, ref); err != nil || n != 2 {
		t.Fatalf("purge = %d, %v; want 2", n, err)
	}
	next := b.add("q", task.AddInput{})
	b.sig.Settle(t) // a claim now would be a second request beside the first
	if tk, err := b.eng.TaskGet(b.ctx, engine.TaskRef{Org: "dev", Instance: "jobs", ID: first}); err != nil || tk.State != task.Running {
		t.Fatalf("the purged attempt in flight: %v %v, want RUNNING", tk, err)
	}
	if n, _, total := g.counts(); n != 1 || total != 1 {
		t.Fatalf("%d requests open, %d in all, while the purged attempt is in flight; want 1, 1", n, total)
	}
	res, err := b.eng.TaskAdd(b.ctx, ref, []task.AddInput{{Name: "once"}})
	if err != nil || len(res) != 1 || !task.IsCode(res[0].Err, task.CodeTaskExists) {
		t.Fatalf("adding the name of the purged attempt in flight: %+v %v", res, err)
	}
	g.release <- http.StatusOK
	g.waitFor(t, "the next task's attempt", func() bool { _, _, total := g.counts(); return total == 2 })
	if _, err := b.eng.TaskGet(b.ctx, engine.TaskRef{Org: "dev", Instance: "jobs", ID: first}); !task.IsCode(err, task.CodeNotFound) {
		t.Fatalf("the purged task after its answer: %v, want NOT_FOUND", err)
	}
	g.release <- http.StatusOK
	b.waitState(next, task.Succeeded)
	if _, peak, _ := g.counts(); peak != 1 {
		t.Fatalf("peak concurrency %d, want 1", peak)
	}
}

// TestPurgeDropsALeasedTasksAck: a pull task purged while leased answers
// its worker's extend and ack LEASE_LOST saying it was purged; the ack
// removes it, whether it is written from the node's copy or from the
// store's.
func TestPurgeDropsALeasedTasksAck(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.queue("pq", &task.QueuePatch{Mode: new(task.ModePull)})
	qref := engine.QueueRef{Org: "dev", Instance: "jobs", Queue: "pq"}
	for _, extend := range []bool{false, true} {
		id := b.add("pq", task.AddInput{})
		got, err := b.eng.Lease(b.ctx, qref, engine.LeaseParams{Count: 1, LeaseSeconds: 60})
		if err != nil || len(got) != 1 || got[0].ID != id {
			t.Fatalf("lease: %v %v", got, err)
		}
		lease := got[0].LeaseID
		if n, err := b.eng.QueuePurge(b.ctx, qref); err != nil || n != 1 {
			t.Fatalf("purge = %d, %v; want 1", n, err)
		}
		tref := engine.TaskRef{Org: "dev", Instance: "jobs", ID: id}
		if extend {
			// The extend drops the node's copy: the ack reads the store.
			_, err := b.eng.Extend(b.ctx, tref, engine.ExtendParams{LeaseID: lease, LeaseSeconds: 60})
			if !errors.Is(err, task.ErrPurged) {
				t.Fatalf("extend of a purged lease: %v, want ErrPurged", err)
			}
		}
		if _, err := b.eng.Ack(b.ctx, tref, engine.AckParams{LeaseID: lease}); !errors.Is(err, task.ErrPurged) {
			t.Fatalf("ack of a purged lease (extend first: %v): %v, want ErrPurged", extend, err)
		}
		if _, err := b.eng.TaskGet(b.ctx, tref); !task.IsCode(err, task.CodeNotFound) {
			t.Fatalf("the purged task after its ack: %v, want NOT_FOUND", err)
		}
	}
}
