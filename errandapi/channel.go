package errandapi

import "encoding/json"

// ChannelPath is the path prefix of channel subscriptions: GET
// /v1/channels/{instance}/{channel} (Server-Sent Events, or a WebSocket
// on upgrade), and POST /v1/channels/{instance}/{channel}/token.
const ChannelPath = "/v1/channels/"

// Channel event types (docs/channels.md). Over Server-Sent Events a
// message has no event field (EventSource's onmessage gets it) and its id
// field is the event id; the others are named events whose data is the
// ChannelEvent. Over a WebSocket every frame is a ChannelEvent.
const (
	// ChannelReady comes first: the subscription is in place; Head is the
	// channel's last event id at that moment.
	ChannelReady = "ready"
	// ChannelMessage is one message: ID and Data (the body a webhook
	// delivery gets: {"task": {…}, "payload": …}).
	ChannelMessage = "message"
	// ChannelGap says messages From to ID were no longer retained when the
	// subscriber asked for them; it stands at ID now.
	ChannelGap = "gap"
	// ChannelLagged ends a subscriber that fell a whole send buffer
	// behind; it resumes after LastEventID.
	ChannelLagged = "lagged"
	// ChannelClosing ends a subscription when the node shuts down; it
	// resumes after LastEventID, on this node or another.
	ChannelClosing = "closing"
)

// ChannelEvent is one event of a channel subscription. Event ids are
// decimal strings of the channel's message numbers, rising by one per
// message.
type ChannelEvent struct {
	Type string `json:"type"`
	// ID is the event id of a message or a gap.
	ID string `json:"id,omitempty"`
	// Data is a message's body.
	Data json.RawMessage `json:"data,omitempty"`
	// Channel and Head: ready's channel and its last event id ("0" for
	// none yet).
	Channel string `json:"channel,omitempty"`
	Head    string `json:"head,omitempty"`
	// From is a gap's first missing event id.
	From string `json:"from,omitempty"`
	// LastEventID is where a lagged or closing subscriber resumes.
	LastEventID string `json:"lastEventId,omitempty"`
	// Message says why (gap, lagged, closing).
	Message string `json:"message,omitempty"`
}

// ChannelToken is the answer of POST /v1/channels/{instance}/{channel}/token:
// a subscribe token for that one channel, passed as ?token=, admitting
// new connections until ExpiresAt (epoch ms).
type ChannelToken struct {
	Token     string `json:"token"`
	ExpiresAt int64  `json:"expiresAt"`
}

// LastEventIDHeader is the header in which an SSE client resumes.
const LastEventIDHeader = "Last-Event-ID"
