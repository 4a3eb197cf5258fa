package engine_test

import (
	"context"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/errandhq/errand/internal/clock"
	"github.com/errandhq/errand/internal/deliver"
	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/store/sqlite"
	"github.com/errandhq/errand/internal/task"
)

// partitioned is a store whose heartbeats can be cut, as a network
// partition or a long pause would cut them, while every other call goes
// through: a node that is declared dead but still delivers.
type partitioned struct {
	store.Store
	cut atomic.Bool
}

func (p *partitioned) NodeBeat(ctx context.Context, bp *store.NodeBeatParams) (store.NodeBeatResult, error) {
	if p.cut.Load() {
		return store.NodeBeatResult{}, task.Errorf(task.CodeUnavailable, "test: heartbeat cut")
	}
	return p.Store.NodeBeat(ctx, bp)
}

// TaskClaim is cut with the heartbeats: a node that cannot beat takes no
// new work either (else, still running, it could claim the retry of the
// attempt its death ended before the live node does).
func (p *partitioned) TaskClaim(ctx context.Context, cp *store.ClaimParams) ([]*task.Task, error) {
	if p.cut.Load() {
		return nil, task.Errorf(task.CodeUnavailable, "test: claims cut")
	}
	return p.Store.TaskClaim(ctx, cp)
}

// holdingTarget is a webhook target that holds every request until the
// test lets it answer 200; each arrival is reported with its release.
type holdingTarget struct {
	*httptest.Server
	arrived chan chan struct{}
}

func newHoldingTarget(t *testing.T) *holdingTarget {
	h := &holdingTarget{arrived: make(chan chan struct{}, 10)}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		release := make(chan struct{})
		h.arrived <- release
		select {
		case <-release:
			w.WriteHeader(200)
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(h.Close)
	return h
}

func (h *holdingTarget) next(t *testing.T) chan struct{} {
	t.Helper()
	select {
	case r := <-h.arrived:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("no delivery arrived")
	}
	return nil
}

// startNode starts an engine with its signals on st, sharing fc.
func startNode(t *testing.T, st store.Store, fc *clock.Fake, node string) (*engine.Engine, *engine.Signals) {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	wh := deliver.NewWebhook(deliver.WebhookOptions{})
	eng := engine.New(engine.Config{Store: st, Clock: fc, Dev: true, URLRules: task.URLRules{AllowHTTP: true},
		Logger: log, Deliverer: &deliver.Mux{Webhook: wh}, Node: node})
	sig := engine.WithSignals(eng)
	if err := eng.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Stop(); wh.Close() })
	return eng, sig
}

// nodeB is node B of a dead-node test: it runs on a SQLite store whose
// heartbeats can be cut (bStore), on a fake clock, and delivers one task
// of queue capped to a target that holds it (releaseB lets it answer).
type nodeB struct {
	st       store.Store
	fc       *clock.Fake
	target   *holdingTarget
	bStore   *partitioned
	engB     *engine.Engine
	ref      engine.QueueRef
	added    *task.Task
	releaseB chan struct{}
}

// startNodeB starts node B with queue capped (patch, its target the
// holding target) and one task of it in flight.
func startNodeB(t *testing.T, patch *task.QueuePatch) *nodeB {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "errand.db"), sqlite.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	r := &nodeB{st: st, fc: clock.NewFake(T0), target: newHoldingTarget(t), ref: engine.QueueRef{Org: "dev", Instance: "jobs", Queue: "capped"}}
	r.bStore = &partitioned{Store: st}
	var sigB *engine.Signals
	r.engB, sigB = startNode(t, r.bStore, r.fc, "bbbb")
	sigB.BeatAt(t, T0)
	patch.Target = targetPtr(r.target.URL)
	if _, err := r.engB.QueueCreate(ctx, r.ref, patch); err != nil {
		t.Fatal(err)
	}
	res, err := r.engB.TaskAdd(ctx, r.ref, []task.AddInput{{}})
	if err != nil || res[0].Err != nil {
		t.Fatalf("add: %v %+v", err, res)
	}
	r.added = res[0].Task
	r.releaseB = r.target.next(t) // B's attempt is in flight
	return r
}

// TestDeadNodeAttemptsRetried: node B delivers a task of a queue with
// maxConcurrent 1 and then stops beating (its heartbeats are cut; it keeps
// delivering, as a paused or partitioned node would). Node A declares it
// dead once it has been silent for NodeDeadAfter, not a beat before; B's
// attempt is then failed, retried at once and delivered by A in the slot
// it freed; and B's late outcome is refused by the lease fence.
func TestDeadNodeAttemptsRetried(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := startNodeB(t, &task.QueuePatch{MaxConcurrent: ptr(ptr(1))})
	st, fc, target, bStore, engB := r.st, r.fc, r.target, r.bStore, r.engB
	id, releaseB := r.added.ID, r.releaseB
	held, err := st.TaskGet(ctx, store.TaskRef{InstanceID: r.added.InstanceID, ID: id})
	if err != nil || held.State != task.Running || store.LeaseNode(held.LeaseID) != "bbbb" {
		t.Fatalf("B's attempt: %+v %v", held, err)
	}

	engA, sigA := startNode(t, st, fc, "aaaa")
	if dead, _ := sigA.BeatAt(t, T0); len(dead) != 0 {
		t.Fatalf("dead at start: %v", dead)
	}
	bStore.cut.Store(true) // B's last beat is the one at T0
	step := engine.NodeBeatEvery
	for at := step; at < engine.NodeDeadAfter; at += step {
		fc.Advance(step)
		if dead, _ := sigA.BeatAt(t, T0.Add(at)); len(dead) != 0 {
			t.Fatalf("B declared dead after %v of silence, before %v", at, engine.NodeDeadAfter)
		}
		if tk, _ := engA.TaskGet(ctx, engine.TaskRef{Org: "dev", Instance: "jobs", ID: id}); tk.State != task.Running || tk.LeaseID != held.LeaseID {
			t.Fatalf("after %v: %s under %q, want B's attempt still running", at, tk.State, tk.LeaseID)
		}
	}
	fc.Advance(step)
	dead, ended := sigA.BeatAt(t, T0.Add(engine.NodeDeadAfter))
	if len(dead) != 1 || dead[0] != "bbbb" || ended != 1 {
		t.Fatalf("at the threshold: dead %v, ended %d; want [bbbb], 1", dead, ended)
	}
	if n := counterValue(t, engA.Metrics().NodesDeclaredDead); n != 1 {
		t.Fatalf("errand_nodes_declared_dead_total = %v, want 1", n)
	}
	// Retried at once, in the slot B held: A delivers it at the same time.
	releaseA := target.next(t)
	tk, _ := engA.TaskGet(ctx, engine.TaskRef{Org: "dev", Instance: "jobs", ID: id})
	if tk.State != task.Running || store.LeaseNode(tk.LeaseID) != "aaaa" || tk.Attempt != 2 || len(tk.Attempts) != 1 ||
		tk.Attempts[0].Status != task.AttemptTimedOut || tk.Attempts[0].EndedAt != T0.Add(engine.NodeDeadAfter).UnixMilli() {
		t.Fatalf("after the rescue: %s lease %q attempt %d attempts %+v", tk.State, tk.LeaseID, tk.Attempt, tk.Attempts)
	}

	// B's target answers late: B's outcome, written on its old lease, is
	// refused, and A's attempt goes on.
	close(releaseB)
	engB.Stop() // returns once B's outcome went to the store
	if tk, _ = engA.TaskGet(ctx, engine.TaskRef{Org: "dev", Instance: "jobs", ID: id}); tk.State != task.Running ||
		store.LeaseNode(tk.LeaseID) != "aaaa" || len(tk.Attempts) != 1 {
		t.Fatalf("B's late finish was stored: %s lease %q attempts %+v", tk.State, tk.LeaseID, tk.Attempts)
	}
	stale := *held
	if _, err := stale.Finish(&task.Queue{}, fc.Now().UnixMilli(), task.Outcome{Status: task.AttemptSucceeded}); err != nil {
		t.Fatal(err)
	}
	errs, err := st.TaskFinish(ctx, []*store.FinishParams{{Task: &stale, LeaseID: held.LeaseID}})
	if err != nil || !task.IsCode(errs[0], task.CodeLeaseLost) {
		t.Fatalf("a finish on B's lease = %v, %v; want LEASE_LOST", errs, err)
	}
	close(releaseA)
}

// TestRescueFreesTheSlot: a dead node's attempt that the rescue ends for
// good (its task failed, maxAttempts 1; or purged meanwhile, removed)
// frees its slot under maxConcurrent 1, and the live node starts the
// waiting task at once: the fake clock never reaches its backstop.
func TestRescueFreesTheSlot(t *testing.T) {
	t.Parallel()
	for _, purge := range []bool{false, true} {
		ctx := context.Background()
		r := startNodeB(t, &task.QueuePatch{MaxConcurrent: ptr(ptr(1)), MaxAttempts: ptr(1)})
		st, fc, target, bStore, engB, ref, releaseB := r.st, r.fc, r.target, r.bStore, r.engB, r.ref, r.releaseB
		engA, sigA := startNode(t, st, fc, "aaaa")
		sigA.BeatAt(t, T0)
		if purge {
			if n, err := engA.QueuePurge(ctx, ref); err != nil || n != 1 {
				t.Fatalf("purge: %d %v", n, err)
			}
		}
		res, err := engA.TaskAdd(ctx, ref, []task.AddInput{{}})
		if err != nil || res[0].Err != nil {
			t.Fatalf("add at A: %v %+v", err, res)
		}
		next := res[0].Task.ID
		sigA.Settle(t) // A's dispatcher found the slot full and sleeps till its backstop
		bStore.cut.Store(true)
		for at := engine.NodeBeatEvery; at <= engine.NodeDeadAfter; at += engine.NodeBeatEvery {
			fc.Advance(engine.NodeBeatEvery)
			sigA.BeatAt(t, T0.Add(at))
		}
		releaseA := target.next(t) // the waiting task, in the freed slot
		if tk, _ := engA.TaskGet(ctx, engine.TaskRef{Org: "dev", Instance: "jobs", ID: next}); tk.State != task.Running {
			t.Fatalf("purge %v: the waiting task is %s after the rescue", purge, tk.State)
		}
		close(releaseB)
		close(releaseA)
		engB.Stop()
	}
}

// TestNodeLeavesOnStop: a node that stops gives back its attempts and
// removes its heartbeat row, so that no one waits for it.
func TestNodeLeavesOnStop(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "errand.db"), sqlite.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	fc := clock.NewFake(T0)
	target := newHoldingTarget(t)
	eng, sig := startNode(t, st, fc, "cccc")
	sig.BeatAt(t, T0)
	ref := engine.QueueRef{Org: "dev", Instance: "jobs", Queue: "work"}
	if _, err := eng.QueueCreate(ctx, ref, &task.QueuePatch{Target: targetPtr(target.URL)}); err != nil {
		t.Fatal(err)
	}
	res, err := eng.TaskAdd(ctx, ref, []task.AddInput{{}})
	if err != nil || res[0].Err != nil {
		t.Fatalf("add: %v %+v", err, res)
	}
	target.next(t)
	probe := &store.NodeBeatParams{Node: "probe", Now: T0.UnixMilli(), DeadBefore: math.MaxInt64}
	if seen, err := st.NodeBeat(ctx, probe); err != nil || len(seen.Dead) != 1 || seen.Dead[0] != "cccc" {
		t.Fatalf("nodes before stop: %+v %v", seen, err)
	}
	eng.Stop()
	tk, _ := st.TaskGet(ctx, store.TaskRef{InstanceID: res[0].Task.InstanceID, ID: res[0].Task.ID})
	if tk.State != task.RetryWait || tk.Attempt != 0 || len(tk.Attempts) != 1 || tk.Attempts[0].Status != task.AttemptReleased {
		t.Fatalf("after stop: %s attempt %d %+v", tk.State, tk.Attempt, tk.Attempts)
	}
	if seen, err := st.NodeBeat(ctx, probe); err != nil || seen.Others != 0 {
		t.Fatalf("nodes after stop: %+v %v (the node's row should be gone)", seen, err)
	}
}

// TestPauseDeclaresNoOneDead: when every node was silent at once — here
// the clock jumps 10 s, as after a pause of the whole machine or an outage
// of the database that stopped every beat — no node declares another dead
// on its first beat after it, nor on the next one, since by then each has
// beaten again; and a node that then stops beating is declared dead as
// usual.
func TestPauseDeclaresNoOneDead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "errand.db"), sqlite.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	fc := clock.NewFake(T0)
	bStore := &partitioned{Store: st}
	_, sigA := startNode(t, st, fc, "aaaa")
	_, sigB := startNode(t, bStore, fc, "bbbb")
	sigA.BeatAt(t, T0)
	sigB.BeatAt(t, T0)
	at := T0.Add(10 * time.Second)
	fc.Advance(10 * time.Second)
	for range 2 {
		for _, sig := range []*engine.Signals{sigA, sigB} {
			if dead, _ := sig.BeatAt(t, at); len(dead) != 0 {
				t.Fatalf("at %v after the pause: dead %v", at.Sub(T0), dead)
			}
		}
		at = at.Add(engine.NodeBeatEvery)
		fc.Advance(engine.NodeBeatEvery)
	}
	// B's beat at T0+12s is its last: A declares it dead at T0+15s.
	sigB.BeatAt(t, at)
	bStore.cut.Store(true)
	last := at
	for ; ; at = at.Add(engine.NodeBeatEvery) {
		dead, _ := sigA.BeatAt(t, at)
		if len(dead) > 0 {
			if dead[0] != "bbbb" || !at.Equal(last.Add(engine.NodeDeadAfter)) {
				t.Fatalf("dead %v at %v, want [bbbb] at %v", dead, at.Sub(T0), last.Add(engine.NodeDeadAfter).Sub(T0))
			}
			return
		}
		if at.Sub(T0) > time.Minute {
			t.Fatal("B was never declared dead")
		}
		fc.Advance(engine.NodeBeatEvery)
	}
}
