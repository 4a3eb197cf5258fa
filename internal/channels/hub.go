package channels

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/errandhq/errand/internal/clock"
	"github.com/errandhq/errand/internal/metrics"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// Defaults of Config.
const (
	DefaultBuffer   = 256
	DefaultPageSize = 100
	DefaultBackstop = time.Minute
	// DefaultLagTimeout is how long a subscriber may take no message of
	// those waiting for it.
	DefaultLagTimeout = 30 * time.Second
)

// Config is what a Hub uses.
type Config struct {
	Store store.ChannelStore
	// Listener hears other nodes' appends (a shared store); nil on a lone
	// node, whose appends all come through Appended.
	Listener store.ChannelListener
	Clock    clock.Clock  // default clock.Real{}
	Logger   *slog.Logger // default slog.Default()
	Metrics  *metrics.Metrics
	// Buffer is how many events a subscriber may have waiting (default
	// 256). One whose buffer cannot take a page reads the log by itself
	// until it is back at the head.
	Buffer int
	// A subscriber reading the log by itself is dropped for lag when it
	// is more than MaxLag messages behind the channel's head (default
	// 4 × Buffer), or a message has waited for it for LagTimeout (default
	// 30 s) and it has taken none meanwhile.
	MaxLag     int
	LagTimeout time.Duration
	// PageSize is how many messages one read of the log takes (default 100).
	PageSize int
	// Backstop is how often a room reads the log without a hint, for a
	// notification that was lost (default 1 min).
	Backstop time.Duration
}

// ErrClosed ends the subscriptions of a hub that stops, and refuses new
// ones (UNAVAILABLE: try another node, or again).
var ErrClosed = task.Errorf(task.CodeUnavailable, "the node is shutting down")

// ErrInstanceGone ends the subscriptions of an instance that was deleted
// (NOT_FOUND: a channel of the same name in an instance made again later
// is another channel, its ids starting again at 1).
var ErrInstanceGone = task.Errorf(task.CodeNotFound, "the instance was deleted")

// Hub holds this node's rooms: the channels that have subscribers here.
// Subscriptions work from New on; Start runs the listener of other nodes'
// appends; Stop ends every room and subscription.
type Hub struct {
	cfg Config

	mu      sync.Mutex
	rooms   map[store.ChannelRef]*room
	ctx     context.Context // the rooms' context, ended by Stop
	cancel  context.CancelFunc
	started bool
	stopped bool
	wg      sync.WaitGroup // rooms and the listener
	// passed, when not nil (a test signal), is told of each pass a room
	// finished, its lag check included.
	passed func()
}

// New returns a hub; Start runs it.
func New(cfg Config) *Hub {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Metrics == nil {
		cfg.Metrics = metrics.New()
	}
	if cfg.Buffer <= 0 {
		cfg.Buffer = DefaultBuffer
	}
	if cfg.MaxLag <= 0 {
		cfg.MaxLag = 4 * cfg.Buffer
	}
	if cfg.LagTimeout <= 0 {
		cfg.LagTimeout = DefaultLagTimeout
	}
	if cfg.PageSize <= 0 {
		cfg.PageSize = DefaultPageSize
	}
	if cfg.Backstop <= 0 {
		cfg.Backstop = DefaultBackstop
	}
	h := &Hub{cfg: cfg, rooms: map[store.ChannelRef]*room{}}
	h.ctx, h.cancel = context.WithCancel(context.Background())
	return h
}

// Start runs the hub until Stop: with a Listener, it turns other nodes'
// appends into hints to the rooms here.
func (h *Hub) Start(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.started || h.stopped {
		return errors.New("channels: hub already started")
	}
	h.started = true
	if h.cfg.Listener != nil {
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			_ = h.cfg.Listener.ChannelListen(h.ctx, h.Appended)
		}()
	}
	return nil
}

// Stop ends every subscription with ErrClosed and waits for the rooms and
// the listener.
func (h *Hub) Stop() {
	h.mu.Lock()
	if h.stopped {
		h.mu.Unlock()
		return
	}
	h.stopped = true
	h.cancel()
	for ref, r := range h.rooms {
		r.mu.Lock()
		for s := range r.subs {
			r.drop(s, ErrClosed)
		}
		r.mu.Unlock()
		delete(h.rooms, ref)
	}
	h.mu.Unlock()
	h.wg.Wait()
}

// EndInstance ends every subscription here to a channel of the instance
// with ErrInstanceGone: it was deleted.
func (h *Hub) EndInstance(instanceID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ref, r := range h.rooms {
		if ref.InstanceID != instanceID {
			continue
		}
		r.mu.Lock()
		for s := range r.subs {
			r.drop(s, ErrInstanceGone)
		}
		r.mu.Unlock()
		delete(h.rooms, ref)
		r.cancel()
	}
}

// Instances returns the ids of the instances whose channels have
// subscribers here.
func (h *Hub) Instances() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	seen := map[string]bool{}
	var out []string
	for ref := range h.rooms {
		if !seen[ref.InstanceID] {
			seen[ref.InstanceID] = true
			out = append(out, ref.InstanceID)
		}
	}
	return out
}

// Appended is the hint that ref's log changed: its room here, if any,
// reads the log. A zero ref (a listener that reconnected and may have
// missed appends) wakes every room.
func (h *Hub) Appended(ref store.ChannelRef) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if ref == (store.ChannelRef{}) {
		for _, r := range h.rooms {
			r.kick()
		}
		return
	}
	if r := h.rooms[ref]; r != nil {
		r.kick()
	}
}

// Subscribe adds a subscriber to ref. With since < 0 it receives the
// messages appended from now on; with since >= 0 every retained message
// after since first (a Gap event when some were pruned), then the live
// ones. Close ends it.
func (h *Hub) Subscribe(ctx context.Context, ref store.ChannelRef, since int64) (*Subscription, error) {
	head, err := h.cfg.Store.ChannelRead(ctx, &store.ChannelReadParams{Ref: ref})
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped {
		return nil, ErrClosed
	}
	r := h.rooms[ref]
	if r == nil {
		r = h.newRoom(ref, head.Head+1)
	}
	s := &Subscription{hub: h, room: r, events: make(chan Event, h.cfg.Buffer), gone: make(chan struct{}), wake: make(chan struct{}, 1), Head: head.Head}
	r.mu.Lock()
	defer r.mu.Unlock()
	if since < 0 {
		// Live: from the room's position, which is where its next
		// fan-out starts; its head is that position too, so that
		// everything after the head, and nothing before it, reaches it
		// (the store's head, read before the lock, may be behind or
		// ahead of the room's).
		s.last, s.synced = r.next-1, true
		s.Head = s.last
	} else {
		s.last, s.catching = since, true
	}
	s.pos.Store(s.last)
	s.moved.Store(h.cfg.Clock.Now().UnixMilli())
	r.subs[s] = struct{}{}
	h.cfg.Metrics.ChannelSubscribers.Inc()
	return s, nil
}

// leave removes s from its room, and the room from the hub when it was
// the last subscriber.
func (h *Hub) leave(s *Subscription) {
	h.mu.Lock()
	defer h.mu.Unlock()
	r := s.room
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.subs[s]; ok {
		delete(r.subs, s)
		h.cfg.Metrics.ChannelSubscribers.Dec()
	}
	if len(r.subs) == 0 && h.rooms[r.ref] == r {
		delete(h.rooms, r.ref)
		r.cancel()
	}
}

// newRoom starts ref's room at next (under h.mu).
func (h *Hub) newRoom(ref store.ChannelRef, next int64) *room {
	ctx, cancel := context.WithCancel(h.ctx)
	r := &room{hub: h, ref: ref, next: next, subs: map[*Subscription]struct{}{}, kicks: make(chan struct{}, 1), cancel: cancel}
	h.rooms[ref] = r
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		r.run(ctx)
	}()
	return r
}
