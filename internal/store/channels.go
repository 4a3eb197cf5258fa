package store

import "context"

// ChannelStore keeps the message log of every channel target: each
// channel of an instance is an append-only sequence of messages numbered
// from 1, from which subscribers read what they missed. Pruning keeps a
// window (the last N messages or the last D of time, whichever keeps
// more), and a sequence number is never reused, even once pruned.
type ChannelStore interface {
	// ChannelAppend appends each p's message to its channel, in order, and
	// returns each with its sequence number, one more than its channel's
	// last before it, all in one transaction (PostgreSQL: unless one meets
	// a message of its task, when each is appended alone). A message of
	// the same task already in the channel's log is returned instead and
	// nothing is appended (an attempt tried again after its append had
	// committed). On a store
	// several nodes share, the appends are announced at their commit to
	// every node's ChannelListen.
	ChannelAppend(ctx context.Context, ps []*ChannelAppendParams) ([]*ChannelMessage, error)
	// ChannelRead returns, in one snapshot, up to p.Limit messages with a
	// sequence number above p.After in order, the channel's last sequence
	// number (0 for a channel never appended to) and its oldest retained
	// one (Head+1 when none is retained).
	ChannelRead(ctx context.Context, p *ChannelReadParams) (*ChannelPage, error)
	// ChannelPrune deletes up to p.Limit messages of any channel that are
	// both older than p.Before and not among the last p.Keep of their
	// channel, and returns how many went.
	ChannelPrune(ctx context.Context, p *ChannelPruneParams) (int, error)
}

// ChannelRef names a channel of an instance.
type ChannelRef struct {
	InstanceID string
	Channel    string
}

// ChannelAppendParams is one message to append: the delivery body of
// Task's attempt.
type ChannelAppendParams struct {
	Ref    ChannelRef
	TaskID string
	Body   []byte // the webhook delivery body, JSON
	Now    int64
}

// ChannelMessage is one message of a channel's log.
type ChannelMessage struct {
	Seq       int64
	TaskID    string
	Body      []byte
	CreatedAt int64
	// Repeat is set by ChannelAppend when it answered the task's earlier
	// message instead of appending.
	Repeat bool
}

// ChannelReadParams selects the messages after a position.
type ChannelReadParams struct {
	Ref   ChannelRef
	After int64 // the last sequence number the reader has; 0 for none
	Limit int   // 0 reads only Head and Oldest
}

// ChannelPage is what ChannelRead found.
type ChannelPage struct {
	Messages []*ChannelMessage
	// Head is the channel's last sequence number; 0 if it has none.
	Head int64
	// Oldest is the first sequence number still retained, Head+1 when
	// none is: a reader whose next message is below Oldest missed some.
	Oldest int64
}

// ChannelPruneParams is the retention window: a message goes when it is
// both older than Before and not among its channel's last Keep.
type ChannelPruneParams struct {
	Keep   int
	Before int64
	Limit  int
}

// ChannelListener is implemented by a store that several nodes share: it
// hears every node's appends, so subscribers on any node are told at once.
// The log stays the truth: a notification lost only delays a subscriber
// until its node's next look at the log.
type ChannelListener interface {
	// ChannelListen calls fn with the channel of every append committed by
	// any node, and with a zero ChannelRef after each (re)connect (appends
	// may have been missed meanwhile), until ctx ends; it reconnects by
	// itself.
	ChannelListen(ctx context.Context, fn func(ChannelRef)) error
}
