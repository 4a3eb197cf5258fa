package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/auth"
	"github.com/errandhq/errand/internal/channels"
	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/task"
)

// channelHeartbeat is how often an idle subscription sends a keep-alive
// (an SSE comment, a WebSocket ping), so proxies keep it open and a dead
// peer is noticed.
const channelHeartbeat = 15 * time.Second

// channelWriteTimeout bounds one write to a subscriber: a peer that takes
// longer is gone.
const channelWriteTimeout = 10 * time.Second

// tokenRoutes accept a subscribe token (?token=) in place of an API key.
var tokenRoutes = map[string]bool{
	"GET /v1/channels/{instance}/{channel}": true,
}

// channelRef names the path's channel of the caller's instance.
func (c *call) channel(r *http.Request) engine.ChannelRef {
	return engine.ChannelRef{Org: c.p.Org, Instance: c.instance, Channel: r.PathValue("channel")}
}

// channelToken serves POST /v1/channels/{instance}/{channel}/token.
func (s *Server) channelToken(w http.ResponseWriter, r *http.Request, c *call) {
	if !s.bodyless(w, r) {
		return
	}
	tok, exp, err := s.eng.ChannelToken(r.Context(), c.channel(r), c.p.KeyID, c.p.KeyDigest)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeSecret(w, http.StatusCreated, errandapi.ChannelToken{Token: tok, ExpiresAt: exp})
}

// subscribe serves GET /v1/channels/{instance}/{channel}: Server-Sent
// Events, or a WebSocket when the request asks to upgrade
// (docs/channels.md).
func (s *Server) subscribe(w http.ResponseWriter, r *http.Request, c *call) {
	ref := c.channel(r)
	if !c.p.AllowsChannel(ref.Channel) {
		s.writeError(w, r, task.Errorf(task.CodePermissionDenied, "this subscribe token is for channel %q, not %s", c.p.Channel, task.Quote(ref.Channel)))
		return
	}
	since, field, err := parseSince(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if strings.EqualFold(r.Header.Get("Upgrade"), "websocket") && c.p.Channel == "" && foreignOrigin(r) {
		// What websocket.Accept would refuse, refused in errand's words.
		s.writeError(w, r, task.Errorf(task.CodePermissionDenied, "a WebSocket opened with an API key from origin %s is refused: a page of another site subscribes with a subscribe token (POST /v1/channels/{instance}/{channel}/token)", task.Quote(r.Header.Get("Origin"))))
		return
	}
	sub, err := s.eng.ChannelSubscribe(r.Context(), ref, since, field)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	defer sub.Close()
	// The server's read and write timeouts are for requests; a
	// subscription lives as long as its subscriber, with its own
	// heartbeat and per-write timeout.
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{})
	_ = rc.SetWriteDeadline(time.Time{})
	var out eventWriter
	if strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		ws, ok := acceptWS(w, r, c.p.Channel != "")
		if !ok {
			return
		}
		out = ws
	} else {
		out = newSSEWriter(w, rc, c.p.Channel != "", strconv.FormatInt(sub.Last(), 10))
	}
	ctx := out.context(r.Context())
	s.stream(ctx, ref.Channel, sub, out, func() error { return s.stillAdmitted(r.Context(), c.p) })
}

// keyCheckEvery is how often an open subscription's key (or the key that
// minted its subscribe token) is checked again while events flow: a
// revoked key's stream ends within it.
const keyCheckEvery = time.Second

// errRevoked ends a subscription whose key was revoked while it was open.
var errRevoked = errors.New("revoked")

// stillAdmitted checks an open subscription's caller again: errRevoked
// when its API key, or the key that minted its subscribe token, was
// revoked or deleted. A token's expiry or the instance's key rotation ends
// nothing (they refuse new connections only), nor does a store that
// cannot answer; dev has no key.
func (s *Server) stillAdmitted(ctx context.Context, p *auth.Principal) error {
	if p.KeyDigest == nil {
		return nil
	}
	if s.eng.KeyRevoked(ctx, p.KeyDigest) {
		return errRevoked
	}
	return nil
}

// parseSince reads where a subscriber resumes: the Last-Event-ID header
// (an EventSource's reconnect, which wins over the URL it repeats), else
// ?since=, else engine.Live. It also returns the field to name in errors.
func parseSince(r *http.Request) (int64, string, error) {
	field, v := errandapi.LastEventIDHeader, r.Header.Get(errandapi.LastEventIDHeader)
	if v == "" {
		field = "since"
		if !r.URL.Query().Has("since") {
			return engine.Live, field, nil
		}
		v = r.URL.Query().Get("since")
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || strings.Trim(v, "0123456789") != "" {
		return 0, field, task.FieldErrorf(task.CodeInvalidArgument, field, "must be an event id this channel gave (a decimal number), or 0 for every retained message")
	}
	return n, field, nil
}

// stream writes the subscription's events to out until the subscriber
// goes, is dropped for lag, its credentials are revoked (admitted, checked
// at most every keyCheckEvery before an event or a ping), or the node
// stops.
func (s *Server) stream(ctx context.Context, channel string, sub *channels.Subscription, out eventWriter, admitted func() error) {
	sent := strconv.FormatInt(sub.Last(), 10) // the last event id the subscriber has
	clk := s.eng.Clock()
	checked := clk.Now()
	revoked := func() bool {
		if now := clk.Now(); now.Sub(checked) >= keyCheckEvery {
			checked = now
			if admitted() != nil {
				out.close(&errandapi.ChannelEvent{Type: errandapi.ChannelClosing, LastEventID: sent,
					Message: "the API key that opened this subscription (or minted its token) was revoked"})
				return true
			}
		}
		return false
	}
	if out.send(ctx, &errandapi.ChannelEvent{Type: errandapi.ChannelReady, Channel: channel, Head: strconv.FormatInt(sub.Head, 10)}) != nil {
		out.close(nil)
		return
	}
	for {
		nctx, cancel := context.WithTimeout(ctx, channelHeartbeat)
		ev, err := sub.Next(nctx)
		cancel()
		switch {
		case err == nil:
		case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
			if revoked() {
				return
			}
			if out.ping(ctx) != nil {
				out.close(nil)
				return
			}
			continue
		case errors.Is(err, channels.ErrLagged):
			last := strconv.FormatInt(sub.Last(), 10)
			out.close(&errandapi.ChannelEvent{Type: errandapi.ChannelLagged, LastEventID: last, Message: err.Error()})
			return
		case errors.Is(err, channels.ErrInstanceGone):
			last := strconv.FormatInt(sub.Last(), 10)
			out.close(&errandapi.ChannelEvent{Type: errandapi.ChannelClosing, LastEventID: last, Message: "the instance was deleted, and its channels with it"})
			return
		case errors.Is(err, channels.ErrClosed):
			last := strconv.FormatInt(sub.Last(), 10)
			out.close(&errandapi.ChannelEvent{Type: errandapi.ChannelClosing, LastEventID: last, Message: "the node is shutting down; resume from the last event id"})
			return
		case ctx.Err() != nil:
			out.close(nil)
			return
		default:
			s.log.Warn("channel subscription failed", "channel", channel, "err", err)
			last := strconv.FormatInt(sub.Last(), 10)
			out.close(&errandapi.ChannelEvent{Type: errandapi.ChannelClosing, LastEventID: last, Message: "reading the channel failed; resume from the last event id"})
			return
		}
		e := &errandapi.ChannelEvent{ID: strconv.FormatInt(ev.ID, 10)}
		switch ev.Kind {
		case channels.KindMessage:
			e.Type, e.Data = errandapi.ChannelMessage, json.RawMessage(ev.Body)
		case channels.KindGap:
			e.Type, e.From = errandapi.ChannelGap, strconv.FormatInt(ev.From, 10)
			e.Message = "events " + e.From + " to " + e.ID + " are no longer retained"
		}
		if revoked() {
			return
		}
		if out.send(ctx, e) != nil {
			out.close(nil)
			return
		}
		sent = e.ID
	}
}

// eventWriter is one subscriber's connection: SSE or WebSocket.
type eventWriter interface {
	// context returns ctx, ended also when the peer goes.
	context(ctx context.Context) context.Context
	send(ctx context.Context, e *errandapi.ChannelEvent) error
	ping(ctx context.Context) error
	// close ends the connection, sending last first when not nil.
	close(last *errandapi.ChannelEvent)
}
