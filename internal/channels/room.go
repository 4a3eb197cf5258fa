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
}

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
// wait for them, and they are more than MaxLag behind or have taken none
// for LagTimeout.
func (r *room) checkLag() {
	head := r.next - 1
	stale := r.hub.cfg.Clock.Now().Add(-r.hub.cfg.LagTimeout).UnixMilli()
	r.mu.Lock()
	defer r.mu.Unlock()
	for s := range r.subs {
		if pos := s.pos.Load(); s.behind && pos < head && (head-pos > int64(r.hub.cfg.MaxLag) || s.moved.Load() < stale) {
			r.drop(s, ErrLagged)
		}
	}
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
