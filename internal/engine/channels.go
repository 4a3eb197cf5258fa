package engine

import (
	"context"
	"time"

	"github.com/errandhq/errand/internal/auth"
	"github.com/errandhq/errand/internal/channels"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// ChannelsConfig configures channel targets. Zero values take the
// defaults noted.
type ChannelsConfig struct {
	// Keep and MaxAge are the retention window of each channel's log: a
	// message is kept while it is among the channel's last Keep (default
	// 1,000) or younger than MaxAge (default 24 h).
	Keep   int
	MaxAge time.Duration
	// PruneEvery is how often the pruner runs (default 1 min).
	PruneEvery time.Duration
	// Buffer is how many events a subscriber may have waiting (default
	// 256); one whose buffer fills reads the log by itself, and is
	// dropped for lag once it is more than MaxLag messages behind the
	// channel's head (default 4 × Buffer) or has taken none of those
	// waiting for it for LagTimeout (default 30 s).
	Buffer     int
	MaxLag     int
	LagTimeout time.Duration
}

// Channel retention defaults.
const (
	DefaultChannelKeep   = 1000
	DefaultChannelMaxAge = 24 * time.Hour
)

func (c *ChannelsConfig) setDefaults() {
	if c.Keep <= 0 {
		c.Keep = DefaultChannelKeep
	}
	if c.MaxAge <= 0 {
		c.MaxAge = DefaultChannelMaxAge
	}
	if c.PruneEvery <= 0 {
		c.PruneEvery = time.Minute
	}
}

// ChannelRef names a channel of an organization's instance.
type ChannelRef struct {
	Org      string
	Instance string // the instance's name
	Channel  string
}

// Live is the since of a subscriber that wants only what comes next.
const Live int64 = -1

// channelOf validates ref's channel name and resolves its instance
// (creating it on first use in dev mode).
func (e *Engine) channelOf(ctx context.Context, ref ChannelRef) (*task.Instance, store.ChannelRef, error) {
	if err := task.ValidateQueueName(ref.Channel, "channel"); err != nil {
		return nil, store.ChannelRef{}, err
	}
	inst, err := e.Instance(ctx, ref.Org, ref.Instance)
	if err != nil {
		return nil, store.ChannelRef{}, err
	}
	return inst, store.ChannelRef{InstanceID: inst.ID, Channel: ref.Channel}, nil
}

// ChannelSubscribe subscribes to ref's channel on this node. since is the
// last event id the subscriber has (Live for none): every retained message
// after it comes first. An id beyond the channel's last message is
// INVALID_ARGUMENT naming field (it was never given out here).
func (e *Engine) ChannelSubscribe(ctx context.Context, ref ChannelRef, since int64, field string) (*channels.Subscription, error) {
	_, cref, err := e.channelOf(ctx, ref)
	if err != nil {
		return nil, err
	}
	sub, err := e.hub.Subscribe(ctx, cref, since)
	if err != nil {
		return nil, err
	}
	if since > sub.Head {
		sub.Close()
		return nil, task.FieldErrorf(task.CodeInvalidArgument, field, "is %d, but channel %q has no event after %d: no such event id", since, ref.Channel, sub.Head)
	}
	return sub, nil
}

// ChannelToken mints a subscribe token for ref's channel on behalf of the
// API key keyID, whose stored digest signs it with the instance's webhook
// key ("" and nil in dev, whose tokens are never checked), valid for
// auth.ChannelTokenTTL, and returns it with its expiry (epoch ms).
func (e *Engine) ChannelToken(ctx context.Context, ref ChannelRef, keyID string, digest []byte) (string, int64, error) {
	inst, _, err := e.channelOf(ctx, ref)
	if err != nil {
		return "", 0, err
	}
	exp := e.now() + auth.ChannelTokenTTL.Milliseconds()
	tok := auth.SignChannelToken(&auth.ChannelClaims{Org: inst.Org, Instance: inst.Name, InstanceID: inst.ID, KeyID: keyID,
		Channel: ref.Channel, Expires: exp}, digest, inst.WebhookKey)
	return tok, exp, nil
}

// KeyRevoked reports whether the API key whose digest is digest was
// revoked or deleted: an open subscription it admitted (by the key or a
// token it minted) then ends. The read is the engine's store's, cached on
// a shared database for up to a second and dropped at a revocation's
// notice. A store that cannot answer reports false: the check comes again.
func (e *Engine) KeyRevoked(ctx context.Context, digest []byte) bool {
	return store.KeyGone(e.store.KeyByDigest(ctx, digest))
}

// ChannelAppended is told of each append this node's deliveries made: it
// counts it and wakes the channel's subscribers here (other nodes hear it
// from the store).
func (e *Engine) ChannelAppended(ref store.ChannelRef, m *store.ChannelMessage) {
	if !m.Repeat {
		e.metrics.ChannelAppended.Inc()
	}
	e.hub.Appended(ref)
}

// EndSubscriptions ends every subscription on this node (the node is
// shutting down); new ones are refused. Stop does it too.
func (e *Engine) EndSubscriptions() { e.hub.Stop() }
