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
	e.waker.wake()
	if e.notifier != nil {
		select {
		case e.notify <- struct{}{}:
		default: // one is pending: it covers this change too
		}
	}
}

// notifierService sends the NOTIFYs that changed asks for, and turns every
// notification heard (other nodes' changes) into a local wake-up.
type notifierService struct {
	e   *Engine
	n   store.Notifier
	log *slog.Logger
}

func (s *notifierService) run(ctx context.Context) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.n.Listen(ctx, func() {
			s.e.waker.wake()
			s.e.leases.wake()
			s.e.ruleWake.wake()
		})
	}()
	for {
		select {
		case <-ctx.Done():
			<-done
			return
		case <-s.e.notify:
			if err := s.n.Notify(ctx); err != nil && ctx.Err() == nil {
				s.log.Warn("notify failed; other nodes find the change within their backstop", "err", err)
			}
		}
	}
}

// clockSync keeps the engine's clock on the store's (the database's) clock,
// so that nodes with drifting clocks agree on leases and deadlines. It
// measures the offset every interval, halving the round trip.
type clockSync struct {
	e        *Engine
	sc       store.ServerClock
	clk      *clock.Offset
	log      *slog.Logger
	interval time.Duration
}

// measure sets the offset once.
func (c *clockSync) measure(ctx context.Context) error {
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
		select {
		case <-ctx.Done():
			return
		case <-c.clk.Base.After(c.interval):
		}
		if err := c.measure(ctx); err != nil && ctx.Err() == nil {
			c.log.Warn("reading the database's clock failed", "err", err)
		}
	}
}
