// Package groupcommit writes the items of concurrent callers together, a
// transaction for many: pull acks, single adds, hook calls and channel
// appends each go through one.
package groupcommit

import (
	"context"
	"sync"

	"github.com/errandhq/errand/internal/task"
)

// Group writes the items of concurrent callers together: a caller whose
// items arrive while Writers batches are being written joins the next
// batch, so many callers cost one transaction and one disk flush instead
// of one each, and a lone caller is written at once. The caller that finds
// a writer free writes batches (of at most Max items) until nothing waits;
// each caller waits for its own items' results. Set the fields before the
// first Do.
type Group[P, R any] struct {
	// Write stores one batch and returns a result per item, in order, or
	// the error of the whole batch.
	Write func(ctx context.Context, ps []P) ([]R, error)
	// Max bounds a batch (at least 1); Writers, the batches written at
	// once (at least 1).
	Max, Writers int
	// Alone, if set, has a batch of several items that fails (but for
	// UNAVAILABLE: the store itself failing) written again an item at a
	// time, so that one caller's item that the store cannot take fails
	// that caller alone, not the others it was batched with.
	Alone bool
	// Queued, if set, is told how many items wait each time a caller's
	// join them (tests).
	Queued func(waiting int)

	mu    sync.Mutex
	queue []*item[P, R]
	busy  int // batches being written
}

// item is one caller's item and where its result goes.
type item[P, R any] struct {
	p    P
	done chan outcome[R]
}

// outcome is an item's result, or its batch's error.
type outcome[R any] struct {
	r   R
	err error
}

// Do writes ps with whatever else is waiting, and returns each item's
// result, or the error of the batch that held it (or ctx's, when the
// caller stops waiting: the batch is written all the same, since others
// wait for it), in order.
func (g *Group[P, R]) Do(ctx context.Context, ps []P) ([]R, []error) {
	items := make([]*item[P, R], len(ps))
	for i, p := range ps {
		items[i] = &item[P, R]{p: p, done: make(chan outcome[R], 1)}
	}
	g.mu.Lock()
	g.queue = append(g.queue, items...)
	lead := g.busy < max(g.Writers, 1)
	if lead {
		g.busy++
	}
	waiting := len(g.queue)
	g.mu.Unlock()
	if g.Queued != nil {
		g.Queued(waiting)
	}
	if lead {
		g.drain(ctx)
	}
	rs, errs := make([]R, len(items)), make([]error, len(items))
	for i, it := range items {
		select {
		case res := <-it.done:
			rs[i], errs[i] = res.r, res.err
		case <-ctx.Done():
			errs[i] = ctx.Err()
		}
	}
	return rs, errs
}

// drain writes the waiting items in batches until none is left.
func (g *Group[P, R]) drain(ctx context.Context) {
	ctx = context.WithoutCancel(ctx) // the batch is written even if its leader gives up
	for {
		g.mu.Lock()
		n := min(len(g.queue), max(g.Max, 1))
		if n == 0 {
			g.busy--
			g.mu.Unlock()
			return
		}
		batch := g.queue[:n:n]
		g.queue = g.queue[n:]
		g.mu.Unlock()
		ps := make([]P, n)
		for i, it := range batch {
			ps[i] = it.p
		}
		rs, err := g.Write(ctx, ps)
		if err != nil && g.Alone && n > 1 && !task.IsCode(err, task.CodeUnavailable) {
			for i, it := range batch {
				r, err := g.Write(ctx, ps[i:i+1])
				it.done <- result(r, 0, err)
			}
			continue
		}
		for i, it := range batch {
			it.done <- result(rs, i, err)
		}
	}
}

// result is item i's outcome of a write that returned rs, or err.
func result[R any](rs []R, i int, err error) outcome[R] {
	if err != nil {
		return outcome[R]{err: err}
	}
	return outcome[R]{r: rs[i]}
}
