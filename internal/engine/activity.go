package engine

import (
	"context"
	"slices"

	"github.com/errandhq/errand/internal/store"
)

// Bounds of QueueActivity: the last hour, a minute at a time, each kind of
// event read up to ActivityLimit tasks (past it the counts are a lower
// bound and say so), so the read stays bounded on any queue.
const (
	ActivityMinutes = 60
	ActivityLimit   = 100_000
	minuteMs        = 60_000
)

// Minute is one minute of a queue's activity.
type Minute struct {
	At        int64 // the minute's start, epoch ms
	Added     int
	Succeeded int
	Failed    int
}

// Activity is a queue's activity over the last hour, oldest minute first,
// the current (unfinished) minute last.
type Activity struct {
	Minutes []Minute
	// Capped names the kinds ("added", "succeeded", "failed") whose counts
	// stopped at ActivityLimit.
	Capped []string
}

// QueueActivity counts a queue's tasks added, succeeded and failed per
// minute over the last hour. A failure is a task that ended failed (an
// attempt that is retried is not one).
func (e *Engine) QueueActivity(ctx context.Context, ref QueueRef) (*Activity, error) {
	q, err := e.queueGet(ctx, ref)
	if err != nil {
		return nil, err
	}
	until := e.now()/minuteMs*minuteMs + minuteMs
	since := until - ActivityMinutes*minuteMs
	a, err := e.store.QueueActivity(ctx, &store.ActivityParams{InstanceID: q.InstanceID, Queue: q.Name, Since: since, Until: until, Limit: ActivityLimit})
	if err != nil {
		return nil, ref.notFound(err)
	}
	out := &Activity{Minutes: make([]Minute, ActivityMinutes), Capped: slices.Clone(a.Capped)}
	for i := range out.Minutes {
		at := since + int64(i)*minuteMs
		out.Minutes[i] = Minute{At: at, Added: a.Added[at], Succeeded: a.Succeeded[at], Failed: a.Failed[at]}
	}
	return out, nil
}
