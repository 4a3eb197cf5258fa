package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/errandhq/errand/internal/clock"
	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/store/sqlite"
	"github.com/errandhq/errand/internal/task"
	"github.com/errandhq/errand/internal/testkit/stores"
)

// countingStore is a real store that counts the task reads reaching it.
type countingStore struct {
	store.Store
	gets, getManys atomic.Int64
}

func (c *countingStore) TaskGet(ctx context.Context, ref store.TaskRef) (*task.Task, error) {
	c.gets.Add(1)
	return c.Store.TaskGet(ctx, ref)
}

func (c *countingStore) TaskGetMany(ctx context.Context, instanceID string, ids []string) (map[string]*task.Task, error) {
	c.getManys.Add(1)
	return c.Store.TaskGetMany(ctx, instanceID, ids)
}

// reads is how many task reads reached the store.
func (c *countingStore) reads() int64 { return c.gets.Load() + c.getManys.Load() }

// pullNode is one engine on a store that another shares.
type pullNode struct {
	eng *engine.Engine
	st  *countingStore
}

// pullEnv is two nodes, a and b, on one real store (one SQLite file opened
// twice, or one PostgreSQL database), with one fake clock. The engines are
// not started: the calls under test need no service, and the rescuer stays
// out of the way of the leases the tests let run out.
type pullEnv struct {
	t     *testing.T
	ctx   context.Context
	clock *clock.Fake
	a, b  pullNode
}

var workRef = engine.QueueRef{Org: "dev", Instance: "jobs", Queue: "work"}

// pullSetup makes the two nodes on kind's store and the pull queue "work"
// (two attempts, dead letters to the pull queue "dead").
func pullSetup(t *testing.T, kind string, bounds ...int) *pullEnv {
	t.Helper()
	var raw [2]store.Store
	switch kind {
	case "sqlite":
		path := filepath.Join(t.TempDir(), "errand.db")
		for i := range raw {
			st, err := sqlite.Open(context.Background(), path, sqlite.Options{Logger: discardLog})
			if err != nil {
				t.Fatal(err)
			}
			raw[i] = st
		}
	case "postgres":
		open := stores.OpenPostgresShared(t)
		raw[0], raw[1] = open(), open()
	}
	t.Cleanup(func() { raw[0].Close(); raw[1].Close() })
	e := &pullEnv{t: t, ctx: context.Background(), clock: clock.NewFake(T0)}
	for i, n := range []*pullNode{&e.a, &e.b} {
		n.st = &countingStore{Store: raw[i]}
		n.eng = engine.New(engine.Config{Store: n.st, Clock: e.clock, Dev: true, Logger: discardLog})
	}
	dead := "dead"
	if _, err := e.a.eng.QueueCreate(e.ctx, engine.QueueRef{Org: "dev", Instance: "jobs", Queue: dead}, &task.QueuePatch{Mode: ptr(task.ModePull)}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.a.eng.QueueCreate(e.ctx, workRef, &task.QueuePatch{Mode: ptr(task.ModePull), MaxAttempts: ptr(2),
		DeadLetterQueue: ptr(&dead)}); err != nil {
		t.Fatal(err)
	}
	return e
}

// eachStore runs test on SQLite and on PostgreSQL (when
// ERRAND_TEST_POSTGRES is set).
func eachStore(t *testing.T, test func(t *testing.T, kind string)) {
	for _, kind := range stores.Kinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			test(t, kind)
		})
	}
}

// add adds n tasks to "work", each with a payload and params of its own.
func (e *pullEnv) add(n int) {
	e.t.Helper()
	ins := make([]task.AddInput, n)
	for i := range ins {
		ins[i] = task.AddInput{Payload: json.RawMessage(fmt.Sprintf(`{"n": %d, "pad": "%0100d"}`, i, i)), Params: json.RawMessage(`{"p":1}`)}
	}
	res, err := e.a.eng.TaskAdd(e.ctx, workRef, ins)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			e.t.Fatal(r.Err)
		}
	}
}

// lease leases count tasks of "work" on n for secs.
func (e *pullEnv) lease(n pullNode, count, secs int) []*task.Task {
	e.t.Helper()
	ts, err := n.eng.Lease(e.ctx, workRef, engine.LeaseParams{Count: count, LeaseSeconds: secs})
	if err != nil || len(ts) != count {
		e.t.Fatalf("lease %d: got %d, %v", count, len(ts), err)
	}
	return ts
}

func taskRef(id string) engine.TaskRef { return engine.TaskRef{Org: "dev", Instance: "jobs", ID: id} }

// ack acks tk on n with a result.
func (e *pullEnv) ack(n pullNode, tk *task.Task) (*task.Task, error) {
	return n.eng.Ack(e.ctx, taskRef(tk.ID), engine.AckParams{LeaseID: tk.LeaseID, Result: json.RawMessage(`{"done": true}`)})
}

// ackMany acks ts on n in one call.
func (e *pullEnv) ackMany(n pullNode, ts ...*task.Task) []error {
	e.t.Helper()
	in := make([]engine.AckInput, len(ts))
	for i, tk := range ts {
		in[i] = engine.AckInput{ID: tk.ID, LeaseID: tk.LeaseID, Result: json.RawMessage(`7`)}
	}
	errs, err := n.eng.AckMany(e.ctx, workRef, in)
	if err != nil {
		e.t.Fatal(err)
	}
	return errs
}

// stored reads a task from the store, past both engines.
func (e *pullEnv) stored(id string) *task.Task {
	e.t.Helper()
	tk, err := e.b.st.Store.TaskGet(e.ctx, store.TaskRef{InstanceID: id2inst(e), ID: id})
	if err != nil {
		e.t.Fatal(err)
	}
	return tk
}

func id2inst(e *pullEnv) string {
	e.t.Helper()
	inst, err := e.a.eng.Instance(e.ctx, "dev", "jobs")
	if err != nil {
		e.t.Fatal(err)
	}
	return inst.ID
}

// sameAsStored fails unless got is the task as the store now holds it: an
// ack answered from a copy returns what an ack that read would.
func (e *pullEnv) sameAsStored(what string, got *task.Task) {
	e.t.Helper()
	if want := e.stored(got.ID); !reflect.DeepEqual(got, want) {
		e.t.Fatalf("%s returned\n%+v\nthe store holds\n%+v", what, got, want)
	}
}

func wantErr(t *testing.T, what string, err error, code task.Code) {
	t.Helper()
	if !task.IsCode(err, code) {
		t.Fatalf("%s: %v, want %s", what, err, code)
	}
}

// TestAckFromLeaseSkipsRead: acks at the node that granted the leases
// read nothing and answer what a read would; an ack at another node reads,
// as does a second ack of a finished task.
func TestAckFromLeaseSkipsRead(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, kind string) {
		e := pullSetup(t, kind)
		e.add(4)
		ts := e.lease(e.a, 4, 60)
		if n := engine.LeasedLen(e.a.eng); n != 4 {
			t.Fatalf("a keeps %d leased tasks, want 4", n)
		}
		e.clock.Advance(5 * time.Second)
		reads := e.a.st.reads()
		got, err := e.ack(e.a, ts[0])
		if err != nil {
			t.Fatal(err)
		}
		if got.State != task.Succeeded || string(got.Result) != `{"done": true}` || len(got.Attempts) != 1 {
			t.Fatalf("acked: %+v", got)
		}
		e.sameAsStored("the ack from a's copy", got)
		for i, err := range e.ackMany(e.a, ts[1], ts[2]) {
			if err != nil {
				t.Fatalf("ack %d: %v", i, err)
			}
		}
		if n := e.a.st.reads() - reads; n != 0 {
			t.Fatalf("acks at the leasing node read the store %d times", n)
		}
		if n := engine.LeasedLen(e.a.eng); n != 1 {
			t.Fatalf("a keeps %d leased tasks after three acks, want 1", n)
		}
		for _, tk := range ts[1:3] {
			if s := e.stored(tk.ID); s.State != task.Succeeded || string(s.Result) != `7` {
				t.Fatalf("stored: %+v", s)
			}
		}

		// The same ack at b reads the task, and answers alike.
		breads := e.b.st.reads()
		gotB, err := e.ack(e.b, ts[3])
		if err != nil {
			t.Fatal(err)
		}
		if e.b.st.reads() == breads {
			t.Fatal("an ack at another node did not read the task")
		}
		e.sameAsStored("the ack at b", gotB)
		if got.Payload == nil || gotB.Params == nil || len(got.Attempts) != len(gotB.Attempts) {
			t.Fatalf("from a's copy %+v, from b's read %+v", got, gotB)
		}

		// Acked, the lease is spent: a second ack reads, finds its own ack
		// done and answers so (its answer lost, a worker sends it again).
		reads = e.a.st.reads()
		again, err := e.ack(e.a, ts[0])
		if err != nil || again.State != task.Succeeded || len(again.Attempts) != 1 || e.a.st.reads() == reads {
			t.Fatalf("a second ack: %+v %v (read the store: %v)", again, err, e.a.st.reads() != reads)
		}
		if err := e.ackMany(e.a, ts[1])[0]; err != nil {
			t.Fatalf("a second batch ack: %v", err)
		}
		// Another lease of the same task is still refused.
		other := *ts[0]
		other.LeaseID = "not-" + other.LeaseID
		_, err = e.ack(e.a, &other)
		wantErr(t, "an ack with another lease", err, task.CodeLeaseLost)
	})
}

// TestAckAfterExtendHere: an extend at the leasing node drops its copy,
// and the ack after it, past the first expiry, reads the store and holds.
func TestAckAfterExtendHere(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, kind string) {
		e := pullSetup(t, kind)
		e.add(1)
		tk := e.lease(e.a, 1, 30)[0]
		if _, err := e.a.eng.Extend(e.ctx, taskRef(tk.ID), engine.ExtendParams{LeaseID: tk.LeaseID, LeaseSeconds: 120}); err != nil {
			t.Fatal(err)
		}
		if n := engine.LeasedLen(e.a.eng); n != 0 {
			t.Fatalf("a keeps %d leased tasks after the extend, want 0", n)
		}
		e.clock.Advance(60 * time.Second)
		reads := e.a.st.reads()
		got, err := e.ack(e.a, tk)
		if err != nil {
			t.Fatal(err)
		}
		if e.a.st.reads() != reads+1 {
			t.Fatalf("the ack read %d times, want 1", e.a.st.reads()-reads)
		}
		e.sameAsStored("the ack after an extend", got)
	})
}

// TestAckAfterLeaseChangedElsewhere: another node shortens leases that this
// node's copies still see live: acks and releases here are refused
// LEASE_LOST and the tasks stay as they are (the store's fence on the
// expiry, not the copy, decides). A lease another node lengthened past the
// copy's expiry is acked after a read.
func TestAckAfterLeaseChangedElsewhere(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, kind string) {
		e := pullSetup(t, kind)
		e.add(4)
		ts := e.lease(e.a, 4, 60)
		for i, secs := range []int{1, 1, 1, 300} {
			if _, err := e.b.eng.Extend(e.ctx, taskRef(ts[i].ID), engine.ExtendParams{LeaseID: ts[i].LeaseID, LeaseSeconds: secs}); err != nil {
				t.Fatal(err)
			}
		}
		e.clock.Advance(2 * time.Second) // past the shortened leases, within a's copies
		reads := e.a.st.reads()
		_, err := e.ack(e.a, ts[0])
		wantErr(t, "an ack of a lease shortened elsewhere", err, task.CodeLeaseLost)
		wantErr(t, "a batch ack of a lease shortened elsewhere", e.ackMany(e.a, ts[1])[0], task.CodeLeaseLost)
		_, err = e.a.eng.Release(e.ctx, taskRef(ts[2].ID), engine.ReleaseParams{LeaseID: ts[2].LeaseID, Error: "boom"})
		wantErr(t, "a release of a lease shortened elsewhere", err, task.CodeLeaseLost)
		if n := e.a.st.reads() - reads; n != 3 {
			t.Fatalf("the refused writes were checked with %d reads, want 3", n)
		}
		for _, tk := range ts[:3] {
			if s := e.stored(tk.ID); s.State != task.Running || s.LeaseID != tk.LeaseID || len(s.Attempts) != 0 {
				t.Fatalf("a refused write changed the task: %+v", s)
			}
		}
		e.clock.Advance(88 * time.Second) // past a's copy, within the lengthened lease
		got, err := e.ack(e.a, ts[3])
		if err != nil {
			t.Fatal(err)
		}
		e.sameAsStored("the ack of a lease lengthened elsewhere", got)
	})
}

// TestAckOfDeletedTask: a task deleted while leased answers NOT_FOUND, as a
// read would (the same error as at a node that reads), though this node
// still holds its copy.
func TestAckOfDeletedTask(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, kind string) {
		e := pullSetup(t, kind)
		e.add(4)
		ts := e.lease(e.a, 4, 60)
		all := []task.State{task.Pending, task.RetryWait, task.Running, task.Succeeded, task.Failed, task.Cancelled}
		if _, err := e.a.st.Store.TaskDelete(e.ctx, &store.TaskDeleteParams{InstanceID: id2inst(e),
			IDs: []string{ts[0].ID, ts[1].ID, ts[2].ID}, States: all}); err != nil {
			t.Fatal(err)
		}
		_, errA := e.ack(e.a, ts[0])
		_, errB := e.ack(e.b, ts[0]) // the read path's answer
		wantErr(t, "an ack of a deleted task", errA, task.CodeNotFound)
		if errA.Error() != errB.Error() {
			t.Fatalf("from a's copy %q, from b's read %q", errA, errB)
		}
		_, errA = e.a.eng.Release(e.ctx, taskRef(ts[1].ID), engine.ReleaseParams{LeaseID: ts[1].LeaseID})
		_, errB = e.b.eng.Release(e.ctx, taskRef(ts[1].ID), engine.ReleaseParams{LeaseID: ts[1].LeaseID})
		wantErr(t, "a release of a deleted task", errA, task.CodeNotFound)
		if errA.Error() != errB.Error() {
			t.Fatalf("release from a's copy %q, from b's read %q", errA, errB)
		}
		errs := e.ackMany(e.a, ts[2], ts[3])
		wantErr(t, "a batch ack of a deleted task", errs[0], task.CodeNotFound)
		if errs[1] != nil {
			t.Fatalf("the batch's other ack: %v", errs[1])
		}
		if errB := e.ackMany(e.b, ts[2])[0]; errs[0].Error() != errB.Error() {
			t.Fatalf("batch ack from a's copy %q, from b's read %q", errs[0], errB)
		}
	})
}

// TestReleaseFromLease: releases at the leasing node, with and without an
// error, read nothing and store what a read would have led to: a release
// back to RETRY_WAIT after its delay, and a failure that spends the
// budget, with its dead-letter copy.
func TestReleaseFromLease(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, kind string) {
		e := pullSetup(t, kind)
		e.add(2)
		ts := e.lease(e.a, 2, 60)
		reads := e.a.st.reads()
		back, err := e.a.eng.Release(e.ctx, taskRef(ts[0].ID), engine.ReleaseParams{LeaseID: ts[0].LeaseID, DelaySeconds: 5})
		if err != nil {
			t.Fatal(err)
		}
		if back.State != task.RetryWait || back.Attempt != 0 || back.RunAt != T0.UnixMilli()+5_000 {
			t.Fatalf("released: %+v", back)
		}
		e.sameAsStored("the release", back)
		failed, err := e.a.eng.Release(e.ctx, taskRef(ts[1].ID), engine.ReleaseParams{LeaseID: ts[1].LeaseID, Error: "boom"})
		if err != nil {
			t.Fatal(err)
		}
		if failed.State != task.RetryWait || failed.Attempt != 1 || failed.LastError != "boom" {
			t.Fatalf("released with an error: %+v", failed)
		}
		e.sameAsStored("the release with an error", failed)
		if n := e.a.st.reads() - reads; n != 0 {
			t.Fatalf("releases at the leasing node read the store %d times", n)
		}

		// Its second attempt fails too: the budget (2) is spent, and the
		// dead-letter copy is added.
		e.clock.Advance(time.Hour)
		again := e.lease(e.a, 2, 60)
		var second *task.Task
		for _, tk := range again {
			if tk.ID == ts[1].ID {
				second = tk
			}
		}
		if second == nil {
			t.Fatalf("the failed task was not leased again: %+v", again)
		}
		reads = e.a.st.reads()
		dead, err := e.a.eng.Release(e.ctx, taskRef(second.ID), engine.ReleaseParams{LeaseID: second.LeaseID, Error: "boom again"})
		if err != nil {
			t.Fatal(err)
		}
		if dead.State != task.Failed || len(dead.Attempts) != 2 {
			t.Fatalf("failed: %+v", dead)
		}
		e.sameAsStored("the last release", dead)
		if n := e.a.st.reads() - reads; n != 0 {
			t.Fatalf("the last release read the store %d times", n)
		}
		copies, err := e.a.eng.Lease(e.ctx, engine.QueueRef{Org: "dev", Instance: "jobs", Queue: "dead"}, engine.LeaseParams{Count: 10, LeaseSeconds: 10})
		if err != nil || len(copies) != 1 || copies[0].DeadLetterOf != second.ID {
			t.Fatalf("dead letters: %+v, %v", copies, err)
		}
	})
}

// TestLeasedBound: a full map keeps no more leases, and their acks read.
func TestLeasedBound(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, kind string) {
		e := pullSetup(t, kind)
		engine.SetLeasedBounds(e.a.eng, 3, 1<<20)
		e.add(7)
		ts := e.lease(e.a, 5, 60)
		if n := engine.LeasedLen(e.a.eng); n != 3 {
			t.Fatalf("a keeps %d leased tasks, want its bound 3", n)
		}
		reads := e.a.st.reads()
		for _, tk := range ts {
			if _, err := e.ack(e.a, tk); err != nil {
				t.Fatal(err)
			}
		}
		if n := e.a.st.reads() - reads; n != 2 {
			t.Fatalf("acks read %d times, want 2 (the leases not kept)", n)
		}
		// A byte bound below one task's copy keeps none.
		engine.SetLeasedBounds(e.a.eng, 100, 100)
		for _, tk := range e.lease(e.a, 2, 60) {
			if _, err := e.ack(e.a, tk); err != nil {
				t.Fatal(err)
			}
		}
		if n := engine.LeasedLen(e.a.eng); n != 0 {
			t.Fatalf("a keeps %d leased tasks over its byte bound", n)
		}
	})
}

// TestLeasedSweep: leases that ran out leave the map: the one an ack finds
// so at once (answered LEASE_LOST after a read), the others when the full
// map is swept for a new lease. A full map of live leases is not swept.
func TestLeasedSweep(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, kind string) {
		e := pullSetup(t, kind)
		engine.SetLeasedBounds(e.a.eng, 3, 1<<20)
		e.add(3)
		ts := e.lease(e.a, 3, 10)
		e.clock.Advance(11 * time.Second)
		reads := e.a.st.reads()
		_, err := e.ack(e.a, ts[0])
		wantErr(t, "an ack of an expired lease", err, task.CodeLeaseLost)
		if e.a.st.reads() != reads+1 || engine.LeasedLen(e.a.eng) != 2 {
			t.Fatalf("the expired copy: %d reads, %d kept", e.a.st.reads()-reads, engine.LeasedLen(e.a.eng))
		}
		e.add(6)
		e.lease(e.a, 1, 60) // fits beside the two expired copies
		if n := engine.LeasedLen(e.a.eng); n != 3 {
			t.Fatalf("a keeps %d, want 3", n)
		}
		fresh := e.lease(e.a, 2, 60) // the map is full: the two expired go
		if n := engine.LeasedLen(e.a.eng); n != 3 {
			t.Fatalf("after the sweep a keeps %d, want 3", n)
		}
		e.lease(e.a, 1, 60) // full of live leases: nothing to sweep, not kept
		if n := engine.LeasedLen(e.a.eng); n != 3 {
			t.Fatalf("a full map of live leases keeps %d, want 3", n)
		}
		reads = e.a.st.reads()
		if errs := e.ackMany(e.a, fresh...); errs[0] != nil || errs[1] != nil {
			t.Fatalf("acks: %v", errs)
		}
		if e.a.st.reads() != reads {
			t.Fatal("the leases kept after the sweep were read")
		}
	})
}
