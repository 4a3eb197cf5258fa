package channels

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/errandhq/errand/internal/store"
)

// ErrLagged ends a subscription that fell a whole buffer behind: its
// messages are still in the log, from its last event id on.
var ErrLagged = errors.New("the subscriber fell too far behind (its send buffer filled); resume from the last event id")

// Kind tells events apart.
type Kind int

// The kinds of event.
const (
	// KindMessage is one message of the channel: ID and Body.
	KindMessage Kind = iota + 1
	// KindGap says messages From..ID were pruned before they could be
	// sent; ID is where the subscriber now stands.
	KindGap
)

// Event is what a subscriber receives.
type Event struct {
	Kind Kind
	// ID is the message's sequence number; for a gap, the last one
	// missed (resume after it).
	ID int64
	// Body is a message's delivery body ({task, payload}).
	Body []byte
	// From is a gap's first missed message.
	From int64
}

func gapEvent(from, oldest int64) Event { return Event{Kind: KindGap, From: from, ID: oldest - 1} }

// Subscription is one subscriber of one channel on this node. One
// goroutine calls Next; Close may be called from any.
type Subscription struct {
	hub    *Hub
	room   *room
	events chan Event    // the live stream, bounded
	gone   chan struct{} // closed when the room dropped it
	end    error         // why, set before gone is closed
	wake   chan struct{} // the room took it out of the stream (behind)
	pos    atomic.Int64  // last, for the room's lag check
	moved  atomic.Int64  // when pos last moved (epoch ms, the hub's clock)

	// Head is the channel's last message when the subscription began; for
	// a live subscription, the position its stream starts after.
	Head int64

	// synced and behind are read and written under room.mu. Synced: the
	// room hands it messages; until then it catches up from the log.
	// Behind: the room took it out of the stream for want of buffer room,
	// and drops it past MaxLag.
	synced bool
	behind bool

	// Owned by Next's goroutine.
	catching bool
	last     int64
	pending  []Event
}

// Last is the id of the last event Next returned (a message or a gap): a
// subscriber resumes after it.
func (s *Subscription) Last() int64 { return s.last }

// Next returns the next event, in order, each message once. It returns
// ErrLagged when the subscriber was dropped for lag, ErrClosed when the
// node stops, or ctx's error.
func (s *Subscription) Next(ctx context.Context) (Event, error) {
	for {
		select {
		case <-s.gone:
			return Event{}, s.end
		default:
		}
		if len(s.pending) > 0 {
			ev := s.pending[0]
			s.pending = s.pending[1:]
			if s.deliver(ev) {
				return ev, nil
			}
			continue
		}
		if s.catching {
			if err := s.catchUp(ctx); err != nil {
				return Event{}, err
			}
			continue
		}
		select {
		case ev := <-s.events:
			if s.deliver(ev) {
				return ev, nil
			}
			continue
		default:
		}
		// The buffer is empty: if the room took us out of its stream, we
		// catch up from the log.
		s.room.mu.Lock()
		behind := s.behind
		s.room.mu.Unlock()
		if behind {
			s.catching = true
			continue
		}
		select {
		case <-s.gone:
			return Event{}, s.end
		case <-ctx.Done():
			return Event{}, ctx.Err()
		case <-s.wake:
		case ev := <-s.events:
			if s.deliver(ev) {
				return ev, nil
			}
		}
	}
}

// deliver reports whether ev is news (not at or before last), and moves
// last to it.
func (s *Subscription) deliver(ev Event) bool {
	if ev.ID <= s.last {
		return false
	}
	s.last = ev.ID
	s.pos.Store(ev.ID)
	s.moved.Store(s.hub.cfg.Clock.Now().UnixMilli())
	if ev.Kind == KindMessage {
		s.hub.cfg.Metrics.ChannelSent.Inc()
	}
	return true
}

// catchUp reads one page of the log after last into pending; at the end
// of the log it joins the room's stream.
func (s *Subscription) catchUp(ctx context.Context) error {
	page, err := s.hub.cfg.Store.ChannelRead(ctx, &store.ChannelReadParams{Ref: s.room.ref, After: s.last, Limit: s.hub.cfg.PageSize})
	if err != nil {
		return err
	}
	if page.Oldest > s.last+1 {
		s.pending = append(s.pending, gapEvent(s.last+1, page.Oldest))
	}
	for _, m := range page.Messages {
		s.pending = append(s.pending, Event{Kind: KindMessage, ID: m.Seq, Body: m.Body})
	}
	if len(s.pending) > 0 {
		return nil
	}
	// At the log's head: from here the room's stream has what follows
	// (what it hands out again is at or before last, and dropped).
	r := s.room
	r.mu.Lock()
	if s.last+1 >= r.next {
		s.synced, s.behind, s.catching = true, false, false
	}
	r.mu.Unlock()
	return nil
}

// Close ends the subscription; it may be called more than once.
func (s *Subscription) Close() { s.hub.leave(s) }

// String names the subscription for logs.
func (s *Subscription) String() string {
	return fmt.Sprintf("%s/%s after %d", s.room.ref.InstanceID, s.room.ref.Channel, s.last)
}
