package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/errandhq/errand/errandapi"
)

// ChannelToken mints a subscribe token for one channel of instance (the
// caller's key needs read on it): a browser's EventSource passes it as
// ?token= to GET /v1/channels/{instance}/{channel}, since it cannot send
// an Authorization header. It admits new connections until ExpiresAt.
func (c *Client) ChannelToken(ctx context.Context, instance, channel string) (*errandapi.ChannelToken, error) {
	var out errandapi.ChannelToken
	if err := c.do(ctx, call{method: "POST", path: []string{"v1", "channels", instance, channel, "token"}, out: &out, repeatable: true}); err != nil {
		return nil, err
	}
	return &out, nil
}

// Subscribe subscribes to channel of instance over Server-Sent Events.
// since is the last event id the caller has: "" for the messages that
// come from now on, "0" for every message the channel still retains. It
// returns once the server has the subscription in place, or the refusal
// (an *Error: INVALID_ARGUMENT for a bad channel name or an event id the
// channel never gave, NOT_FOUND, UNAUTHENTICATED…) or the connection
// error of this first try.
//
// The subscription then resumes by itself: when the server drops it for
// lag, shuts down, or the connection breaks, Next reconnects from the last
// event id it returned, so every message comes once, in order. A server
// that cannot be reached or answers 5xx or 429 is tried again with the
// retry policy's backoff (MinBackoff doubling up to MaxBackoff, jittered)
// for as long as it takes: MaxAttempts does not bound it. Only three
// things end a subscription: ctx ending, Close, and a refusal that
// reconnecting cannot fix (any other 4xx: the key revoked, say), which
// Next answers. Close releases what it holds.
func (c *Client) Subscribe(ctx context.Context, instance, channel, since string) (*Subscription, error) {
	sctx, cancel := context.WithCancel(ctx)
	s := &Subscription{c: c, parent: ctx, ctx: sctx, cancel: cancel, instance: instance, channel: channel, last: since}
	if err := s.connect(); err != nil {
		cancel()
		return nil, err
	}
	return s, nil
}

// Subscription is one subscriber of a channel; one goroutine calls Next,
// any may call Close.
type Subscription struct {
	c                 *Client
	parent            context.Context // Subscribe's
	ctx               context.Context // parent's child, ended by Close too
	cancel            context.CancelFunc
	instance, channel string

	mu     sync.Mutex
	body   io.ReadCloser // the stream in use; nil between connections
	closed bool

	lines *bufio.Scanner
	last  string // the last event id returned
	head  string
	ended error // the refusal that ended the subscription, answered again
}

// ErrSubscriptionClosed is Next's answer after Close.
var ErrSubscriptionClosed = errors.New("client: the subscription is closed")

// LastEventID is the id of the last message or gap Next returned (before
// the first, the channel's head when the subscription began, or since):
// where a new Subscribe resumes.
func (s *Subscription) LastEventID() string { return s.last }

// Head is the channel's last event id when the current connection began.
func (s *Subscription) Head() string { return s.head }

// Close ends the subscription; Next then answers ErrSubscriptionClosed.
func (s *Subscription) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.cancel() // ends a wait between tries, or a connection being made
	if s.body != nil {
		return s.body.Close()
	}
	return nil
}

// connect opens the stream from s.last and reads its ready event.
func (s *Subscription) connect() error {
	ctx := s.ctx
	u := s.c.base.String() + "/" + escape([]string{"v1", "channels", s.instance, s.channel})
	req, err := http.NewRequestWithContext(ctx, "GET", u, nil)
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("User-Agent", s.c.agent)
	if s.c.key != "" {
		req.Header.Set("Authorization", "Bearer "+s.c.key)
	}
	if s.last != "" {
		req.Header.Set(errandapi.LastEventIDHeader, s.last)
	}
	resp, err := s.c.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return &transportError{method: "GET", url: u, err: err}
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return answerError(resp, raw)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		resp.Body.Close()
		return ErrSubscriptionClosed
	}
	s.body = resp.Body
	s.mu.Unlock()
	s.lines = bufio.NewScanner(resp.Body)
	s.lines.Buffer(make([]byte, 64<<10), 1<<20)
	ev, err := s.read()
	if err != nil {
		s.drop()
		return &transportError{method: "GET", url: u, err: err, sent: true}
	}
	if ev.Type != errandapi.ChannelReady {
		s.drop()
		return fmt.Errorf("client: GET %s: the stream began with %q, not ready", u, ev.Type)
	}
	s.head = ev.Head
	if s.last == "" {
		// Subscribed "from now on": a reconnect before the first message
		// resumes after the head, not from a new "now" that would skip
		// what came in between.
		s.last = ev.Head
	}
	return nil
}

// drop closes the stream in use.
func (s *Subscription) drop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.body != nil {
		s.body.Close()
		s.body = nil
	}
}

// read parses the next event of the stream.
func (s *Subscription) read() (*errandapi.ChannelEvent, error) {
	var id, typ string
	var data []string
	for s.lines.Scan() {
		line := s.lines.Text()
		if line == "" {
			if data == nil {
				continue
			}
			raw := []byte(strings.Join(data, "\n"))
			if typ == "" {
				return &errandapi.ChannelEvent{Type: errandapi.ChannelMessage, ID: id, Data: raw}, nil
			}
			var ev errandapi.ChannelEvent
			if err := json.Unmarshal(raw, &ev); err != nil {
				return nil, fmt.Errorf("a %s event that is not JSON: %w", typ, err)
			}
			return &ev, nil
		}
		if strings.HasPrefix(line, ":") {
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "id":
			id = value
		case "event":
			typ = value
		case "data":
			data = append(data, value)
		}
	}
	if err := s.lines.Err(); err != nil {
		return nil, err
	}
	return nil, io.ErrUnexpectedEOF
}

// Next returns the next event: a message (ChannelMessage, with ID and the
// delivery body {task, payload} as Data), a gap (ChannelGap: messages
// From to ID were no longer retained), or a notice that the server ended
// the connection (ChannelLagged, ChannelClosing), after which the next
// call reconnects from LastEventID. It blocks until an event comes,
// reconnecting as often as it takes (see Subscribe), and returns an error
// only when the subscription has ended: the Subscribe context's error once
// it ends, ErrSubscriptionClosed after Close, or the refusal of a
// reconnect that trying again cannot fix (a 4xx other than 429, such as
// UNAUTHENTICATED for a revoked key), which every later call answers too.
func (s *Subscription) Next() (*errandapi.ChannelEvent, error) {
	// fails counts the connections in a row, in this call, that could not
	// be made or broke before giving an event: each one after the first
	// waits. A connection that gave events and then broke is resumed at
	// once.
	fails := 0
	var lastErr error
	for {
		if err := s.end(); err != nil {
			return nil, err
		}
		if !s.live() {
			if fails > 0 {
				if err := s.c.sleep(s.ctx, s.wait(fails, lastErr)); err != nil {
					return nil, s.endOr(err)
				}
			}
			if err := s.connect(); err != nil {
				if !resumable(err) {
					return nil, s.endOr(err)
				}
				if err := s.end(); err != nil {
					return nil, err
				}
				fails, lastErr = fails+1, err
				continue
			}
			fails++ // until it gives an event, this connection counts as failed
		}
		ev, err := s.read()
		if err != nil {
			s.drop()
			if err := s.end(); err != nil {
				return nil, err
			}
			lastErr = err
			continue // the connection broke: reconnect from last
		}
		switch ev.Type {
		case errandapi.ChannelMessage, errandapi.ChannelGap:
			s.last = ev.ID
		case errandapi.ChannelLagged, errandapi.ChannelClosing:
			s.drop()
		}
		return ev, nil
	}
}

// end is what ends the subscription, if it has ended: Close, the
// Subscribe context, or an earlier refusal.
func (s *Subscription) end() error {
	s.mu.Lock()
	closed, ended := s.closed, s.ended
	s.mu.Unlock()
	switch {
	case closed:
		return ErrSubscriptionClosed
	case s.parent.Err() != nil:
		return s.parent.Err()
	}
	return ended
}

// endOr answers what ended the subscription, or else err, which ends it:
// a refusal that reconnecting cannot fix.
func (s *Subscription) endOr(err error) error {
	if e := s.end(); e != nil {
		return e
	}
	s.mu.Lock()
	s.ended = err
	s.mu.Unlock()
	return err
}

// resumable reports whether a failed connect may succeed later: the
// server could not be reached, the connection broke, or it answered 5xx
// or 429. Any other refusal stands.
func resumable(err error) bool {
	var te *transportError
	if errors.As(err, &te) {
		return true
	}
	var e *errandapi.Error
	return errors.As(err, &e) && (e.Status >= 500 || e.Status == http.StatusTooManyRequests)
}

// wait is the wait before reconnect number n (from 1) after err: the
// server's Retry-After for RATE_LIMITED, else the retry policy's backoff.
func (s *Subscription) wait(n int, err error) time.Duration {
	var e *errandapi.Error
	if errors.As(err, &e) && e.RetryAfter > 0 {
		return e.RetryAfter
	}
	return s.c.backoff(n)
}

func (s *Subscription) live() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.body != nil
}
