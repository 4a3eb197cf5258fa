package deliver

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/errandhq/errand/internal/groupcommit"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// Channel delivers channel targets (`{"channel": "room-1"}`): an attempt
// succeeds once its message, the body a webhook would get, is durably
// appended to the channel's log; subscribers on every node read it from
// there. A store error fails the attempt, which is retried like any other;
// a retry of an attempt whose append had committed answers the message
// already there, so a task appears in its channel once.
//
// Appends are group-committed: those that arrive while a transaction of
// appends is being written go together in the next one (maxChannelBatch at
// most, one transaction at a time: the appends of one channel all raise
// its head row, so a second transaction beside the first would only wait
// for its lock), each attempt answered once its own commits.
type Channel struct {
	Store store.ChannelStore
	// Appended, when set, is told of each append that committed (the
	// node's subscribers are woken, the count kept).
	Appended func(ref store.ChannelRef, m *store.ChannelMessage)

	once  sync.Once
	group *groupcommit.Group[*store.ChannelAppendParams, *store.ChannelMessage]
}

// maxChannelBatch bounds one group commit of appends.
const maxChannelBatch = 500

// appends is c's group commit of appends, made on first use.
func (c *Channel) appends() *groupcommit.Group[*store.ChannelAppendParams, *store.ChannelMessage] {
	c.once.Do(func() {
		c.group = &groupcommit.Group[*store.ChannelAppendParams, *store.ChannelMessage]{
			Write: c.Store.ChannelAppend, Max: maxChannelBatch, Writers: 1, Alone: true}
	})
	return c.group
}

// Deliver implements Deliverer. The attempt's result is
// {"channel": NAME, "eventId": "N"}: the message's event id.
func (c *Channel) Deliver(ctx context.Context, r *Request) Result {
	start := time.Now()
	now := r.Now
	if now.IsZero() {
		now = start
	}
	ref := store.ChannelRef{InstanceID: r.Task.InstanceID, Channel: r.Target.Channel}
	ms, errs := c.appends().Do(ctx, []*store.ChannelAppendParams{{Ref: ref, TaskID: r.Task.ID, Body: Body(r.Task), Now: now.UnixMilli()}})
	m, err := ms[0], errs[0]
	if err != nil {
		res := failed(0, "appending to channel "+strconv.Quote(r.Target.Channel)+": "+task.Recorded(err))
		if ctx.Err() != nil {
			res = failed(0, "deadline exceeded")
		}
		res.Duration = time.Since(start)
		return res
	}
	if c.Appended != nil {
		c.Appended(ref, m)
	}
	b := append([]byte(`{"channel":`), strconv.Quote(r.Target.Channel)...)
	b = append(b, `,"eventId":"`...)
	b = strconv.AppendInt(b, m.Seq, 10)
	b = append(b, `"}`...)
	return Result{Outcome: task.Outcome{Status: task.AttemptSucceeded, Result: b}, Duration: time.Since(start)}
}
