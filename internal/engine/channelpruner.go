package engine

import (
	"context"
	"log/slog"

	"github.com/errandhq/errand/internal/clock"
	"github.com/errandhq/errand/internal/store"
)

// channelPruneBatch is how many messages one prune removes.
const channelPruneBatch = 1000

// channelPrunerDeps is what the channel pruner uses.
type channelPrunerDeps struct {
	store store.ChannelStore
	clock clock.Clock
	log   *slog.Logger
	cfg   ChannelsConfig // with defaults set
}

// ChannelPruner removes channel messages outside the retention window
// (neither among their channel's last Keep nor younger than MaxAge), in
// batches, every PruneEvery.
type ChannelPruner struct {
	runner
	channelPrunerDeps
}

func newChannelPruner(d channelPrunerDeps) *ChannelPruner {
	return &ChannelPruner{channelPrunerDeps: d}
}

// Start runs a pass now and then every interval, until Stop.
func (p *ChannelPruner) Start(ctx context.Context) error { return p.start(ctx, p.run) }

func (p *ChannelPruner) run(ctx context.Context) {
	for {
		if _, err := p.RunOnce(ctx); err != nil && ctx.Err() == nil {
			p.log.Warn("channel retention pass failed", "err", err)
		}
		if !sleep(ctx, p.clock, p.clock.Now().Add(p.cfg.PruneEvery), nil, nil) {
			return
		}
	}
}

// RunOnce prunes every channel now, batch by batch, and returns how many
// messages went.
func (p *ChannelPruner) RunOnce(ctx context.Context) (int, error) {
	total := 0
	for {
		before := p.clock.Now().Add(-p.cfg.MaxAge).UnixMilli()
		n, err := p.store.ChannelPrune(ctx, &store.ChannelPruneParams{Keep: p.cfg.Keep, Before: before, Limit: channelPruneBatch})
		total += n
		if err != nil || n < channelPruneBatch {
			if total > 0 {
				p.log.Info("channel retention", "deleted", total)
			}
			return total, err
		}
	}
}

// ChannelPruner returns the channel retention service (tests run it with
// RunOnce).
func (e *Engine) ChannelPruner() *ChannelPruner { return e.pruner }
