package engine

import (
	"context"
	"sync"

	"github.com/errandhq/errand/internal/id"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// leaseBatchMax bounds the tasks one claim takes for the leases it
// serves together (a lease alone takes up to MaxLeaseCount).
const leaseBatchMax = 2 * MaxLeaseCount

// leaseGroups coalesces this node's lease claims of one pull queue: while
// a claim of the queue is under way, the leases that arrive wait, and the
// next claim takes for all of them at once (those asking the same lease
// length), as River's one fetcher a process serves all its workers.
// Claims of one queue side by side would each step over the rows the
// others hold locked (SKIP LOCKED): with four workers leasing 500 tasks
// each, a claim read up to 2,000 rows to take its 500, and PostgreSQL
// spent 10–15% more a task. Claims of other nodes still meet through
// SKIP LOCKED alone.
type leaseGroups struct {
	mu     sync.Mutex
	groups map[qkey]*leaseGroup
	// seen, if set, is told of the leases waiting and of each claim
	// (tests).
	seen *progress[leaseReport]
}

// leaseReport is what leaseGroups tells its test signal: how many leases
// wait for a claim, and how many leases each claim so far served.
type leaseReport struct {
	Waiting int
	Claims  []int
}

// waiting changes the leases waiting by n, under g.mu.
func (g *leaseGroups) waiting(n int) {
	g.seen.update(func(r *leaseReport) { r.Waiting += n })
}

// leaseGroup is one queue's leases while a claim of it is under way (a
// queue has a group exactly then): those waiting for the next claim, in
// arrival order.
type leaseGroup struct {
	pending []*leaseWant
}

// leaseWant is one lease's part of a claim: how many tasks it asks for,
// for how long, and where its answer goes.
type leaseWant struct {
	count   int
	leaseMs int64
	reply   chan leaseReply // one answer at a time
}

// leaseReply answers a waiting lease: it leads the next claim, it has its
// tasks (or the claim's error), or it should ask again.
type leaseReply struct {
	lead  bool
	retry bool // the claim failed with its leader's ctx, or others got what it took
	tasks []*task.Task
	now   int64 // the claim's time
	err   error
}

// claim claims up to count due tasks of pull queue q for leaseMs, with
// the leases of q waiting beside it, and returns them and the claim's
// time.
func (g *leaseGroups) claim(ctx context.Context, e *Engine, q *task.Queue, count int, leaseMs int64) ([]*task.Task, int64, error) {
	w := &leaseWant{count: count, leaseMs: leaseMs, reply: make(chan leaseReply, 1)}
	k := qkey{q.InstanceID, q.Name}
	front := false
	for {
		var r leaseReply
		if g.join(k, w, front) {
			r = leaseReply{lead: true}
		} else {
			select {
			case r = <-w.reply:
			case <-ctx.Done():
				if g.leave(k, w) {
					return nil, 0, ctx.Err()
				}
				r = <-w.reply // a claim took it, or it was made the leader
			}
		}
		if r.lead {
			if ctx.Err() != nil {
				g.handOff(k)
				return nil, 0, ctx.Err()
			}
			r = g.lead(ctx, e, q, k, w)
		}
		if !r.retry {
			return r.tasks, r.now, r.err
		}
		front = true // it waited its turn already
	}
}

// join adds w to k's group: it reports true when no claim is under way
// (w leads the next one), else w waits (at the front if front).
func (g *leaseGroups) join(k qkey, w *leaseWant, front bool) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.groups == nil {
		g.groups = map[qkey]*leaseGroup{}
	}
	gr := g.groups[k]
	if gr == nil {
		g.groups[k] = &leaseGroup{}
		return true
	}
	if front {
		gr.pending = append([]*leaseWant{w}, gr.pending...)
	} else {
		gr.pending = append(gr.pending, w)
	}
	g.waiting(1)
	return false
}

// leave takes w, whose ctx ended, out of k's waiting leases; it reports
// false when w was no longer waiting (an answer is on its way).
func (g *leaseGroups) leave(k qkey, w *leaseWant) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	gr := g.groups[k]
	if gr == nil {
		return false
	}
	for i, p := range gr.pending {
		if p == w {
			gr.pending = append(gr.pending[:i], gr.pending[i+1:]...)
			g.waiting(-1)
			return true
		}
	}
	return false
}

// handOff ends k's claim under way: the first waiting lease leads the
// next one, or, with none waiting, the group is forgotten.
func (g *leaseGroups) handOff(k qkey) {
	g.mu.Lock()
	defer g.mu.Unlock()
	gr := g.groups[k]
	if len(gr.pending) == 0 {
		delete(g.groups, k)
		return
	}
	next := gr.pending[0]
	gr.pending = gr.pending[1:]
	g.waiting(-1)
	next.reply <- leaseReply{lead: true}
}

// lead runs a claim for w and the leases waiting that ask the same lease
// length (up to leaseBatchMax tasks in all), answers the others, hands
// the lead on, and returns w's answer. The tasks go to the leases in
// arrival order, each up to its count; a lease that got none of a claim
// that took some asks again (the claim stopped at LeaseMaxBytes).
func (g *leaseGroups) lead(ctx context.Context, e *Engine, q *task.Queue, k qkey, w *leaseWant) leaseReply {
	batch, limit := g.take(k, w) // w first
	replies := make([]leaseReply, len(batch))
	for i := range replies {
		replies[i].retry = true // the others claim again should the claim never return (a panic)
	}
	defer func() {
		g.handOff(k)
		for i, b := range batch[1:] {
			b.reply <- replies[i+1]
		}
	}()
	now := e.now()
	got, err := e.store.TaskClaim(ctx, &store.ClaimParams{
		Queue: q, Now: now, Limit: limit, MaxBytes: LeaseMaxBytes,
		LeaseMs: w.leaseMs, NewLeaseID: id.Lease,
	})
	total := len(got)
	for i, b := range batch {
		switch {
		case err != nil && ctx.Err() != nil && i > 0:
			// not its ctx that ended: it stays as it was, to claim again
		case err != nil:
			replies[i] = leaseReply{err: err}
		default:
			n := min(b.count, len(got))
			replies[i] = leaseReply{tasks: got[:n:n], now: now, retry: n == 0 && total > 0}
			got = got[n:] // the limit is the counts' sum: none is left over
		}
	}
	return replies[0]
}

// take removes from k's waiting leases those that join w's claim: those
// asking w's lease length, in arrival order, while the counts' sum stays
// within leaseBatchMax. It returns w and them, and the sum.
func (g *leaseGroups) take(k qkey, w *leaseWant) ([]*leaseWant, int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	gr := g.groups[k]
	batch, limit := []*leaseWant{w}, w.count
	kept := gr.pending[:0]
	for _, p := range gr.pending {
		if p.leaseMs == w.leaseMs && limit+p.count <= leaseBatchMax {
			batch, limit = append(batch, p), limit+p.count
			continue
		}
		kept = append(kept, p)
	}
	clear(gr.pending[len(kept):])
	gr.pending = kept
	g.waiting(1 - len(batch))
	g.seen.update(func(r *leaseReport) { r.Claims = append(r.Claims, len(batch)) })
	return batch, limit
}
