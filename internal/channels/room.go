package channels

import (
	"context"
	"sync"

	"github.com/errandhq/errand/internal/store"
)

// room is one channel with subscribers on this node. Its goroutine reads
// the log after next and hands each page to every synced subscriber.
type room struct {
	hub    *Hub
	ref    store.ChannelRef
	kicks  chan struct{} // a hint is pending; one covers many
	cancel context.CancelFunc

	mu sync.Mutex
	// next is the first message the room has not handed out; written by
	// the room's goroutine under mu.
	next int64
	subs map[*Subscription]struct{}
	// marks are the room's heads and when it reached each (oldest first,
	// one a pass that moved the head, coalesced to one per markEvery),
	// back to the last one at least LagTimeout old: checkLag reads from
	// them how long a subscriber's next message has waited. Owned by the
	// room's goroutine.
	marks []headMark
}

// headMark is a head the room reached and when (epoch ms, the hub's clock).
type headMark struct{ head, at int64 }

// kick asks the room to read the log; it never blocks.
func (r *room) kick() {
	select {
	case r.kicks <- struct{}{}:
	default:
	}
}

func (r *room) run(ctx context.Context) {
	clk := r.hub.cfg.Clock
	for {
		if err := r.pass(ctx); err != nil && ctx.Err() == nil {
			r.hub.cfg.Logger.Warn("reading a channel's log failed; trying again at the next hint or backstop", "channel", r.ref.Channel, "err", err)
		}
		if r.hub.passed != nil {
			r.hub.passed()
		}
		t := clk.NewTimer(r.hub.cfg.Backstop)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-r.kicks:
		case <-t.C():
		}
		t.Stop()
	}
}

// pass reads the log from next to its head, a page at a time, and hands
// each page out.
func (r *room) pass(ctx context.Context) error {
	size := r.hub.cfg.PageSize
	for {
		page, err := r.hub.cfg.Store.ChannelRead(ctx, &store.ChannelReadParams{Ref: r.ref, After: r.next - 1, Limit: size})
		if err != nil {
			return err
		}
		gap := page.Oldest > r.next
		if len(page.Messages) == 0 && !gap {
			r.checkLag()
			return nil
		}
		r.fanOut(page, gap)
		if len(page.Messages) < size {
			r.checkLag()
			return nil
		}
	}
}

// fanOut hands a page to every synced subscriber without waiting. One
// whose buffer has no room for the page leaves the stream and catches up
// from the log by itself (its buffer bounds its memory).
func (r *room) fanOut(page *store.ChannelPage, gap bool) {
	evs := make([]Event, 0, len(page.Messages)+1)
	if gap {
		evs = append(evs, gapEvent(r.next, page.Oldest))
	}
	for _, m := range page.Messages {
		evs = append(evs, Event{Kind: KindMessage, ID: m.Seq, Body: m.Body})
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	head := evs[len(evs)-1].ID
	for s := range r.subs {
		switch {
		case !s.synced:
		case cap(s.events)-len(s.events) < len(evs):
			s.synced, s.behind = false, true
			select {
			case s.wake <- struct{}{}:
			default:
			}
		default:
			for _, ev := range evs {
				s.events <- ev // room for all: only this goroutine sends
			}
		}
	}
	r.next = head + 1
}

// checkLag drops the subscribers that left the stream and lag: messages
// wait for them, and they are more than MaxLag behind, or a message has
// waited for them for LagTimeout and they have taken none meanwhile. (A
// subscriber that took its last message long ago is not lagging when the
// next one has only just come: a quiet channel is not a slow subscriber.)
func (r *room) checkLag() {
	head := r.next - 1
	now := r.hub.cfg.Clock.Now().UnixMilli()
	stale := now - r.hub.cfg.LagTimeout.Milliseconds()
	waited := r.headAt(stale) // every message up to it has waited LagTimeout
	r.mark(head, now, stale)
	r.mu.Lock()
	defer r.mu.Unlock()
	for s := range r.subs {
		if pos := s.pos.Load(); s.behind && pos < head && (head-pos > int64(r.hub.cfg.MaxLag) || (pos < waited && s.moved.Load() < stale)) {
			r.drop(s, ErrLagged)
		}
	}
}

// markDivisor: two marks closer in time than a LagTimeout's 64th are one,
// the later head replacing the earlier's, so the marks stay a few dozen
// whatever the pace of the messages, and a message's wait is read at most
// that much longer than it was.
const markDivisor = 64

// headAt returns the head the room had reached at time at (0 if none).
func (r *room) headAt(at int64) int64 {
	var head int64
	for _, m := range r.marks {
		if m.at > at {
			break
		}
		head = m.head
	}
	return head
}

// mark records that the room's head is head at now, and forgets the marks
// no longer needed: all but the last at or before stale.
func (r *room) mark(head, now, stale int64) {
	n := len(r.marks)
	switch {
	case n > 0 && r.marks[n-1].head >= head:
	case n > 0 && now-r.marks[n-1].at < r.hub.cfg.LagTimeout.Milliseconds()/markDivisor:
		r.marks[n-1].head = head
	default:
		r.marks = append(r.marks, headMark{head: head, at: now})
	}
	i := 0
	for i+1 < len(r.marks) && r.marks[i+1].at <= stale {
		i++
	}
	r.marks = r.marks[i:]
}

// drop removes s with err as its end (under r.mu).
func (r *room) drop(s *Subscription, err error) {
	if _, ok := r.subs[s]; !ok {
		return
	}
	delete(r.subs, s)
	r.hub.cfg.Metrics.ChannelSubscribers.Dec()
	if err == ErrLagged {
		r.hub.cfg.Metrics.ChannelDropped.Inc()
	}
	s.end = err
	close(s.gone)
}
