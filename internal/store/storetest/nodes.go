package storetest

import (
	"slices"
	"testing"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

var nodeCases = []testCase{
	{"Beat", testNodeBeat},
	{"HeldBy", testHeldBy},
}

// beat is one NodeBeat of node at now that reports nodes silent since
// deadBefore.
func (e *env) beat(node string, now, deadBefore int64) []string {
	e.t.Helper()
	return e.beatSeen(node, now, deadBefore).Dead
}

// beatSeen is beat's whole result.
func (e *env) beatSeen(node string, now, deadBefore int64) store.NodeBeatResult {
	e.t.Helper()
	r, err := e.s.NodeBeat(e.ctx, &store.NodeBeatParams{Node: node, Now: now, DeadBefore: deadBefore})
	if err != nil {
		e.t.Fatalf("NodeBeat(%s): %v", node, err)
	}
	return r
}

// testNodeBeat checks that a node silent since DeadBefore is reported to
// the others (never to itself), that a beat revives it, that NodeForget
// spares a node that beat again, and that each beat counts the other
// nodes' rows, silent or not.
func testNodeBeat(t *testing.T, e *env) {
	if r := e.beatSeen("a", T0, T0); len(r.Dead) != 0 || r.Others != 0 {
		t.Fatalf("first beat: %+v, want no other node", r)
	}
	if r := e.beatSeen("a", T0+500, T0); r.Others != 0 {
		t.Fatalf("a's second beat counts %d others, want 0 (its own row is not another's)", r.Others)
	}
	if r := e.beatSeen("b", T0+1_000, T0); len(r.Dead) != 0 || r.Others != 1 {
		t.Fatalf("b's first beat: %+v, want a live other node (a)", r)
	}
	e.beat("c", T0+1_000, T0)
	// a beats late; its own old row is never reported to it.
	if dead := e.beat("a", T0+3_999, T0+999); len(dead) != 0 {
		t.Fatalf("before the threshold: dead %v", dead)
	}
	if r := e.beatSeen("a", T0+4_000, T0+1_000); !slices.Equal(r.Dead, []string{"b", "c"}) || r.Others != 2 {
		t.Fatalf("at the threshold: %+v, want dead [b c] of 2 others", r)
	}
	// b was only paused: it beats again before being forgotten, and keeps
	// its row; c is forgotten.
	e.beat("b", T0+4_500, T0+1_500)
	if err := e.s.NodeForget(e.ctx, &store.NodeForgetParams{Nodes: []string{"b", "c"}, DeadBefore: T0 + 1_000}); err != nil {
		t.Fatalf("NodeForget: %v", err)
	}
	if dead := e.beat("a", T0+5_000, T0+4_500); !slices.Equal(dead, []string{"b"}) {
		t.Fatalf("after forget: dead %v, want [b] (its row kept, c's gone)", dead)
	}
	if dead := e.beat("a", T0+5_000, T0+4_499); len(dead) != 0 {
		t.Fatalf("b beat at 4500: dead %v", dead)
	}
	// A beat older than the row's never moves it back.
	e.beat("b", T0+2_000, T0)
	if dead := e.beat("a", T0+5_000, T0+4_499); len(dead) != 0 {
		t.Fatalf("an older beat of b moved its row back: dead %v", dead)
	}
	// Leaving: a node forgets itself.
	if err := e.s.NodeForget(e.ctx, &store.NodeForgetParams{Nodes: []string{"b"}, DeadBefore: T0 + 1_000_000}); err != nil {
		t.Fatalf("NodeForget(self): %v", err)
	}
	if r := e.beatSeen("a", T0+6_000, T0+1_000_000); len(r.Dead) != 0 || r.Others != 0 {
		t.Fatalf("after b left: %+v, want a alone", r)
	}
}

// testHeldBy checks that TaskHeldBy returns the RUNNING push tasks whose
// lease names one of the nodes, of every instance, with payloads, up to
// limit, and neither another node's, nor a pull task's, nor a finished one.
func testHeldBy(t *testing.T, e *env) {
	a := e.instance("acme", "jobs")
	b := e.instance("globex", "jobs")
	qa := e.queue(a, "work", task.ModePush)
	qb := e.queue(b, "work", task.ModePush)
	qp := e.queue(a, "pulled", task.ModePull)
	e.addN(qa, 4, T0, nil)
	e.addN(qb, 2, T0, nil)
	e.addN(qp, 2, T0, nil)
	claimBy := func(q *task.Queue, node string, n int) []*task.Task {
		t.Helper()
		got, err := e.s.TaskClaim(e.ctx, &store.ClaimParams{Queue: q, Now: T0, Limit: n, LeaseMs: 30_000,
			NewLeaseID: func() string { return store.NodeLeaseID(node, e.id("lease")) }})
		if err != nil || len(got) != n {
			t.Fatalf("TaskClaim by %s = %d, %v", node, len(got), err)
		}
		return got
	}
	dead := claimBy(qa, "dead", 2)
	dead = append(dead, claimBy(qb, "dead", 2)...)
	claimBy(qa, "live", 1)
	claimBy(qp, "dead", 2) // a pull lease is a worker's, never a node's
	if got, err := e.s.TaskHeldBy(e.ctx, &store.HeldByParams{Nodes: []string{"gone"}, Limit: 10}); err != nil || len(got) != 0 {
		t.Fatalf("TaskHeldBy of a node holding nothing = %d, %v", len(got), err)
	}
	got, err := e.s.TaskHeldBy(e.ctx, &store.HeldByParams{Nodes: []string{"gone", "dead"}, Limit: 10})
	if err != nil || len(got) != 4 {
		t.Fatalf("TaskHeldBy = %d tasks, %v; want the dead node's 4 push tasks", len(got), err)
	}
	want := map[string]string{}
	for _, tk := range dead {
		want[tk.ID] = tk.LeaseID
	}
	for _, tk := range got {
		if want[tk.ID] != tk.LeaseID || tk.State != task.Running || tk.Pull || string(tk.Payload) != `{"n":1}` {
			t.Fatalf("held task %+v", tk)
		}
		if store.LeaseNode(tk.LeaseID) != "dead" {
			t.Fatalf("LeaseNode(%q) = %q", tk.LeaseID, store.LeaseNode(tk.LeaseID))
		}
	}
	if got, _ := e.s.TaskHeldBy(e.ctx, &store.HeldByParams{Nodes: []string{"dead"}, Limit: 3}); len(got) != 3 {
		t.Fatalf("TaskHeldBy limit 3 = %d", len(got))
	}
	// A finished attempt is held no more.
	e.finish(qa, dead[0], T0+10, task.Outcome{Status: task.AttemptSucceeded})
	if got, _ := e.s.TaskHeldBy(e.ctx, &store.HeldByParams{Nodes: []string{"dead"}, Limit: 10}); len(got) != 3 {
		t.Fatalf("TaskHeldBy after a finish = %d, want 3", len(got))
	}
}
