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
			return nil
		}
		r.fanOut(page, gap)
		if len(page.Messages) < size {
			return nil
		}
	}
}

// fanOut hands a page to every synced subscriber without waiting: one
// whose buffer is full is dropped.
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
	for s := range r.subs {
		if !s.synced {
			continue
		}
		for _, ev := range evs {
			select {
			case s.events <- ev:
				continue
			default:
				r.drop(s, ErrLagged)
			}
			break
		}
	}
	if gap {
		r.next = page.Oldest
	}
	if n := len(page.Messages); n > 0 {
		r.next = page.Messages[n-1].Seq + 1
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
