package engine

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/errandhq/errand/internal/task"
)

// deadlineGroup holds the two contexts the attempts of one claim with one
// deadline share: cut ends lateCap after the deadline (a target still
// working then is cut off), attempt at the deadline itself (an in-process
// handler's ctx). One pair of timers serves a claim's attempts rather than
// two an attempt: in a burn-down of in-process functions the two were most
// of a delivery's CPU. The contexts end when the last attempt of the group
// has ended, so no attempt sees its context end because another's did (and
// a handler's ctx no longer ends the moment it returns: docs/embedded.md).
type deadlineGroup struct {
	cut, attempt context.Context
	cancelCut    context.CancelFunc
	cancelAtt    context.CancelFunc
	left         atomic.Int64
}

// done is called once by each attempt of the group when it has ended.
func (g *deadlineGroup) done() {
	if g.left.Add(-1) == 0 {
		g.cancelAtt()
		g.cancelCut()
	}
}

// deadlineGroups returns, for each of ts in order, its group: the tasks of
// one deadline share one. The deadlines are read against now, the engine's
// clock, as each attempt's time left is.
func deadlineGroups(ctx context.Context, ts []*task.Task, now time.Time) []*deadlineGroup {
	gs := make([]*deadlineGroup, len(ts))
	byAt := make(map[int64]*deadlineGroup, 1) // a claim's tasks nearly always share one
	for i, t := range ts {
		g := byAt[t.DeadlineAt]
		if g == nil {
			g = newDeadlineGroup(ctx, t.DeadlineAt, now)
			byAt[t.DeadlineAt] = g
		}
		g.left.Add(1)
		gs[i] = g
	}
	return gs
}

// newDeadlineGroup starts the contexts of one deadline, deadlineAt in
// Unix milliseconds of the engine's clock, whose time is now.
func newDeadlineGroup(ctx context.Context, deadlineAt int64, now time.Time) *deadlineGroup {
	limit := time.Duration(deadlineAt-now.UnixMilli()) * time.Millisecond
	g := &deadlineGroup{}
	g.cut, g.cancelCut = context.WithTimeout(ctx, limit+lateCap)
	g.attempt, g.cancelAtt = context.WithTimeout(g.cut, limit)
	return g
}
