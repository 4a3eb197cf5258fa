package engine

import (
	"context"
	"log/slog"
	"time"

	"github.com/errandhq/errand/internal/clock"
	"github.com/errandhq/errand/internal/store"
)

// changed wakes this node's services and, on a store shared by several
// nodes, every other node's too (through the store's Notifier).
func (e *Engine) changed() {
	e.dispatch.wake()
	e.pullChanged()
}

// pullChanged is changed for a change the dispatcher has nothing to do
// with (tasks added to a pull queue, which no pass claims from): the long
// polls and the console are woken, and other nodes as by changed. (Other
// nodes wake their dispatchers too: a notification does not say what
// changed.)
func (e *Engine) pullChanged() {
	e.waker.wake()
	if e.notifier != nil {
		e.notifier.send()
	}
}

// notifierService sends the NOTIFYs that changed asks for, and turns every
// notification heard (other nodes' changes) into a local wake-up of the
// wakers it rings.
type notifierService struct {
	runner
	n     store.Notifier
	log   *slog.Logger
	rings []*waker
	asks  chan struct{} // a change to announce; one pending covers many
}

func newNotifierService(n store.Notifier, log *slog.Logger, rings ...*waker) *notifierService {
	return &notifierService{n: n, log: log, rings: rings, asks: make(chan struct{}, 1)}
}

// send asks for one NOTIFY; it never blocks.
func (s *notifierService) send() {
	select {
	case s.asks <- struct{}{}:
	default: // one is pending: it covers this change too
	}
}

// Start listens and notifies until Stop.
func (s *notifierService) Start(ctx context.Context) error { return s.start(ctx, s.run) }

func (s *notifierService) run(ctx context.Context) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.n.Listen(ctx, func(bool) {
			for _, w := range s.rings {
				w.wake()
			}
		})
	}()
	for {
		select {
		case <-ctx.Done():
			<-done
			return
		case <-s.asks:
			if err := s.n.Notify(ctx); err != nil && ctx.Err() == nil {
				s.log.Warn("notify failed; other nodes find the change within their backstop", "err", err)
			}
		}
	}
}

// clockSync keeps the engine's clock on the store's (the database's) clock,
// so that nodes with drifting clocks agree on leases and deadlines. It
// measures the offset at Start and then every interval, halving the round
// trip.
type clockSync struct {
	runner
	sc       store.ServerClock
	clk      *clock.Offset
	log      *slog.Logger
	interval time.Duration
}

// Start sets the offset once (its error means the engine cannot start: its
// clock would be wrong), then keeps it set until Stop.
func (c *clockSync) Start(ctx context.Context) error {
	if err := c.RunOnce(ctx); err != nil {
		return err
	}
	return c.start(ctx, c.run)
}

// RunOnce measures and sets the offset once.
func (c *clockSync) RunOnce(ctx context.Context) error {
	t0 := c.clk.Base.Now()
	server, err := c.sc.ServerNow(ctx)
	if err != nil {
		return err
	}
	t1 := c.clk.Base.Now()
	mid := t0.Add(t1.Sub(t0) / 2)
	off := server.Sub(mid)
	if d := off - c.clk.Get(); d > time.Second || d < -time.Second {
		c.log.Warn("this node's clock differs from the database's; following the database", "offset", off)
	}
	c.clk.Set(off)
	return nil
}

func (c *clockSync) run(ctx context.Context) {
	for {
		if !sleep(ctx, c.clk.Base, c.clk.Base.Now().Add(c.interval), nil, nil) {
			return
		}
		if err := c.RunOnce(ctx); err != nil && ctx.Err() == nil {
			c.log.Warn("reading the database's clock failed", "err", err)
		}
	}
}
