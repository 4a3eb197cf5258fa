package engine

import (
	"context"
	"sync"

	"github.com/errandhq/errand/internal/task"
)

// groupCommit writes the items of concurrent callers together: a caller
// whose items arrive while writers batches are being written joins the
// next batch, so many callers cost one transaction and one disk flush
// instead of one each, and a lone caller is written at once. The caller
// that finds a writer free writes batches (of at most max items) until
// nothing waits; each caller waits for its own items' results.
type groupCommit[P, R any] struct {
	// write stores one batch and returns a result per item, in order, or
	// the error of the whole batch.
	write   func(ctx context.Context, ps []P) ([]R, error)
	max     int
	writers int
	// alone, if set, has a batch of several items that fails (but for
	// UNAVAILABLE: the store itself failing) written again an item at a
	// time, so that one caller's item that the store cannot take fails
	// that caller alone, not the others it was batched with.
	alone bool
	mu    sync.Mutex
	queue []*groupItem[P, R]
	busy  int // batches being written
	// queued, if set, is told how many items wait after a caller's joined
	// them (tests).
	queued func(n int)
}

// groupItem is one caller's item and where its result goes.
type groupItem[P, R any] struct {
	p    P
	done chan groupResult[R]
}

// groupResult is an item's result, or its batch's error.
type groupResult[R any] struct {
	r   R
	err error
}

// do writes ps with whatever else is waiting, and returns each item's
// result, or the error of the batch that held it (or ctx's, when the
// caller stops waiting: the batch is written all the same, since others
// wait for it), in order.
func (g *groupCommit[P, R]) do(ctx context.Context, ps []P) ([]R, []error) {
	items := make([]*groupItem[P, R], len(ps))
	for i, p := range ps {
		items[i] = &groupItem[P, R]{p: p, done: make(chan groupResult[R], 1)}
	}
	g.mu.Lock()
	g.queue = append(g.queue, items...)
	lead := g.busy < max(g.writers, 1)
	if lead {
		g.busy++
	}
	waiting := len(g.queue)
	g.mu.Unlock()
	if g.queued != nil {
		g.queued(waiting)
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
func (g *groupCommit[P, R]) drain(ctx context.Context) {
	ctx = context.WithoutCancel(ctx) // the batch is written even if its leader gives up
	for {
		g.mu.Lock()
		n := min(len(g.queue), max(g.max, 1))
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
		rs, err := g.write(ctx, ps)
		if err != nil && g.alone && n > 1 && !task.IsCode(err, task.CodeUnavailable) {
			for i, it := range batch {
				r, err := g.write(ctx, ps[i:i+1])
				it.done <- result(r, err)
			}
			continue
		}
		for i, it := range batch {
			if err != nil {
				it.done <- groupResult[R]{err: err}
			} else {
				it.done <- groupResult[R]{r: rs[i]}
			}
		}
	}
}

// result is the one result of a write of one item, or its error.
func result[R any](rs []R, err error) groupResult[R] {
	if err != nil {
		return groupResult[R]{err: err}
	}
	return groupResult[R]{r: rs[0]}
}
