// Package channels fans channel messages out to subscribers: the hub a
// node keeps of who listens to which channel, fed from the store's
// channel log.
//
// The log is the truth and notifications are hints. A room (one channel
// with subscribers on this node) reads the log after the last message it
// handed out whenever it is told the channel changed (an append on this
// node, a NOTIFY from another, a reconnect of the listener) and, as a
// backstop for a lost hint, every Backstop; each read is shared by all of
// the room's subscribers. A subscriber that resumes from an older position
// catches up by reading the log itself, then joins the room's stream; its
// own last position drops what it already has, so it gets every message
// once, in order.
//
// Each subscriber has a bounded buffer. The room never waits for one: a
// subscriber whose buffer cannot take the next page leaves the stream and
// reads the log by itself, a page at a time; once it is more than MaxLag
// messages behind the head, or a message has waited for it for LagTimeout
// and it has taken none meanwhile, it is dropped with a reason (ErrLagged). So
// memory stays bounded, the others go on at their pace, and a dropped
// subscriber resumes from its last event id.
//
// Lock order: Hub.mu before room.mu. Nothing blocks under either.
package channels
