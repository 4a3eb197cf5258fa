package engine_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/store/sqlite"
	"github.com/errandhq/errand/internal/task"
)

// gatedLeases is a SQLite store whose pull claims each tell entered their
// limit and then wait for a value on release (or their ctx); capTo, when
// set, cuts the next released claim's limit to it, as LeaseMaxBytes would.
type gatedLeases struct {
	*sqlite.Store
	entered chan int
	release chan struct{}
	capTo   atomic.Int64
	panics  atomic.Bool // the next released claim panics
}

func (g *gatedLeases) TaskClaim(ctx context.Context, p *store.ClaimParams) ([]*task.Task, error) {
	if p.Queue.Mode == task.ModePull {
		select {
		case g.entered <- p.Limit:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		select {
		case <-g.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if g.panics.Swap(false) {
			panic("the store failed")
		}
		if c := g.capTo.Swap(0); c != 0 {
			cp := *p
			cp.Limit = int(c)
			p = &cp
		}
	}
	return g.Store.TaskClaim(ctx, p)
}

// leaseRig is an engine on a gatedLeases store with a pull queue "work"
// holding n tasks.
type leaseRig struct {
	*bundle
	g *gatedLeases
}

func newLeaseRig(t *testing.T, n int) *leaseRig {
	t.Helper()
	raw, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "errand.db"), sqlite.Options{Logger: discardLog})
	if err != nil {
		t.Fatal(err)
	}
	g := &gatedLeases{Store: raw, entered: make(chan int), release: make(chan struct{})}
	r := &leaseRig{bundle: start(t, g, func() { _ = raw.Close() }), g: g}
	r.queue("work", &task.QueuePatch{Mode: ptr(task.ModePull)})
	for range n {
		r.add("work", task.AddInput{})
	}
	return r
}

// leaseResult is one lease's answer.
type leaseResult struct {
	tasks []*task.Task
	err   error
}

// lease starts a lease of count tasks for seconds on ctx and returns where
// its answer will come.
func (r *leaseRig) lease(ctx context.Context, count, seconds int) <-chan leaseResult {
	out := make(chan leaseResult, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				out <- leaseResult{err: fmt.Errorf("panic: %v", p)}
			}
		}()
		ts, err := r.eng.Lease(ctx, engine.QueueRef{Org: "dev", Instance: "jobs", Queue: "work"},
			engine.LeaseParams{Count: count, LeaseSeconds: seconds})
		out <- leaseResult{ts, err}
	}()
	return out
}

// waiting is a lease for queued: its ctx, count and lease length.
type waiting struct {
	ctx            context.Context
	count, seconds int
}

// queued starts a lease of first tasks, holds it at its claim, and then
// starts each of leases in turn, each waiting for the claim before the
// next starts (so they wait in that order); it returns where the first's
// answer and theirs will come.
func (r *leaseRig) queued(first int, leases ...waiting) (<-chan leaseResult, []<-chan leaseResult) {
	r.t.Helper()
	head := r.lease(r.ctx, first, 60)
	if got := r.entered(); got != first {
		r.t.Fatalf("the first claim is for %d tasks, want %d", got, first)
	}
	out := make([]<-chan leaseResult, len(leases))
	for i, l := range leases {
		out[i] = r.lease(l.ctx, l.count, l.seconds)
		r.sig.LeasesWaiting(r.t, i+1)
	}
	return head, out
}

// entered waits for the next pull claim to begin and returns its limit.
func (r *leaseRig) entered() int {
	r.t.Helper()
	select {
	case n := <-r.g.entered:
		return n
	case <-time.After(10 * time.Second):
		r.t.Fatal("timed out waiting for a pull claim")
		return 0
	}
}

// claimed waits for the next pull claim to begin, checks its limit, and
// lets it go on.
func (r *leaseRig) claimed(limit int) {
	r.t.Helper()
	if got := r.entered(); got != limit {
		r.t.Fatalf("a claim for %d tasks began, want %d", got, limit)
	}
	r.g.release <- struct{}{}
}

// answer waits for a lease's answer.
func (r *leaseRig) answer(ch <-chan leaseResult) leaseResult {
	r.t.Helper()
	select {
	case res := <-ch:
		return res
	case <-time.After(10 * time.Second):
		r.t.Fatal("timed out waiting for a lease's answer")
		return leaseResult{}
	}
}

// released lets the claim held at the gate go on, and reads the answer
// of its lease (ch), which should hold n tasks.
func (r *leaseRig) released(ch <-chan leaseResult, n int) []*task.Task {
	r.t.Helper()
	r.g.release <- struct{}{}
	return r.got(ch, n)
}

// got reads a lease's answer and checks it holds n tasks.
func (r *leaseRig) got(ch <-chan leaseResult, n int) []*task.Task {
	r.t.Helper()
	res := r.answer(ch)
	if res.err != nil || len(res.tasks) != n {
		r.t.Fatalf("a lease answered %d tasks (%v), want %d", len(res.tasks), res.err, n)
	}
	return res.tasks
}

// TestLeasesWaitingShareOneClaim: leases of a queue that arrive while a
// claim of it is under way on the node wait, and the next claim takes for
// all those asking the same lease length at once; the tasks go to them in
// arrival order, each its count, none twice, each with its lease length.
func TestLeasesWaitingShareOneClaim(t *testing.T) {
	t.Parallel()
	r := newLeaseRig(t, 10)
	first, w := r.queued(2, waiting{r.ctx, 3, 60}, waiting{r.ctx, 1, 60}, waiting{r.ctx, 2, 120})
	b, c, d := w[0], w[1], w[2]
	all := r.released(first, 2)
	r.claimed(4) // b and c together
	r.claimed(2) // d's lease is longer: its own claim
	bt, ct, dt := r.got(b, 3), r.got(c, 1), r.got(d, 2)
	now := r.clock.Now().UnixMilli()
	for _, tk := range append(slices.Clone(bt), ct...) {
		if tk.LeaseExpiresAt != now+60_000 {
			t.Fatalf("task %s leased until %d, want %d", tk.ID, tk.LeaseExpiresAt, now+60_000)
		}
	}
	for _, tk := range dt {
		if tk.LeaseExpiresAt != now+120_000 {
			t.Fatalf("task %s leased until %d, want %d (its lease's length)", tk.ID, tk.LeaseExpiresAt, now+120_000)
		}
	}
	all = append(append(append(all, bt...), ct...), dt...)
	seen := map[string]bool{}
	for _, tk := range all {
		if seen[tk.ID] {
			t.Fatalf("task %s leased twice", tk.ID)
		}
		seen[tk.ID] = true
	}
	if !slices.IsSortedFunc(append(bt, ct...), func(x, y *task.Task) int { return compareClaimOrder(x, y) }) {
		t.Fatal("the waiting leases did not get the claim's tasks in arrival order")
	}
	if got := r.sig.LeaseClaims(t, 3); !slices.Equal(got, []int{1, 2, 1}) {
		t.Fatalf("the claims served %v leases, want [1 2 1]", got)
	}
}

// compareClaimOrder orders tasks added one by one at one time as a claim
// takes them (by id, which the add made in order).
func compareClaimOrder(x, y *task.Task) int {
	switch {
	case x.RunAt != y.RunAt:
		return int(x.RunAt - y.RunAt)
	case x.ID < y.ID:
		return -1
	case x.ID > y.ID:
		return 1
	}
	return 0
}

// TestWaitingLeaseMayLeave: a lease waiting for a claim whose caller goes
// away leaves the wait with its ctx's error, and the queue's next lease is
// claimed for as usual.
func TestWaitingLeaseMayLeave(t *testing.T) {
	t.Parallel()
	r := newLeaseRig(t, 3)
	ctx, cancel := context.WithCancel(r.ctx)
	first, w := r.queued(1, waiting{ctx, 1, 60})
	gone := w[0]
	cancel()
	if res := r.answer(gone); !errors.Is(res.err, context.Canceled) || len(res.tasks) != 0 {
		t.Fatalf("the lease that left answered %d tasks, %v", len(res.tasks), res.err)
	}
	r.sig.LeasesWaiting(t, 0)
	r.released(first, 1)
	next := r.lease(r.ctx, 2, 60)
	r.claimed(2)
	r.got(next, 2)
}

// TestLeaseShortOfAClaimAsksAgain: a claim that stops before the leases it
// serves have their counts (LeaseMaxBytes) gives its tasks to the first;
// one left with none claims again rather than answer nothing while tasks
// are due.
func TestLeaseShortOfAClaimAsksAgain(t *testing.T) {
	t.Parallel()
	r := newLeaseRig(t, 6)
	first, w := r.queued(1, waiting{r.ctx, 2, 60}, waiting{r.ctx, 3, 60})
	b, c := w[0], w[1]
	r.released(first, 1)
	r.g.capTo.Store(2)
	r.claimed(5)
	r.got(b, 2)
	r.claimed(3) // c again, on its own
	r.got(c, 3)
}

// TestLeaseLeaderGoneOthersClaimAgain: when the lease whose caller runs a
// shared claim goes away during it, the claim fails for that lease only:
// the others claim again.
func TestLeaseLeaderGoneOthersClaimAgain(t *testing.T) {
	t.Parallel()
	r := newLeaseRig(t, 3)
	ctx, cancel := context.WithCancel(r.ctx)
	first, w := r.queued(1, waiting{ctx, 1, 60}, waiting{r.ctx, 1, 60})
	leader, other := w[0], w[1]
	r.released(first, 1)
	if got := r.entered(); got != 2 {
		t.Fatalf("the shared claim is for %d tasks, want 2", got)
	}
	cancel() // the gate answers the claim with ctx's error
	if res := r.answer(leader); !errors.Is(res.err, context.Canceled) {
		t.Fatalf("the lease that went away answered %d tasks, %v", len(res.tasks), res.err)
	}
	r.claimed(1)
	r.got(other, 1)
}

// TestLeaseClaimPanicFreesTheOthers: a shared claim that panics takes its
// caller's request down only: the other leases it served claim again, and
// the queue's leases go on.
func TestLeaseClaimPanicFreesTheOthers(t *testing.T) {
	t.Parallel()
	r := newLeaseRig(t, 3)
	first, w := r.queued(1, waiting{r.ctx, 1, 60}, waiting{r.ctx, 1, 60})
	r.released(first, 1)
	r.g.panics.Store(true)
	r.claimed(2)
	if res := r.answer(w[0]); res.err == nil || len(res.tasks) != 0 {
		t.Fatalf("the lease whose claim panicked answered %d tasks, %v", len(res.tasks), res.err)
	}
	r.claimed(1)
	r.got(w[1], 1)
}
