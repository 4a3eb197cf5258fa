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
// channel never gave, NOT_FOUND, UNAUTHENTICATED…).
//
// The subscription lives until ctx ends or Close. It resumes by itself:
// when the server drops it for lag, shuts down, or the connection breaks,
// Next reconnects from the last event id it returned (with the client's
// retry backoff), so every message comes once, in order.
func (c *Client) Subscribe(ctx context.Context, instance, channel, since string) (*Subscription, error) {
	s := &Subscription{c: c, ctx: ctx, instance: instance, channel: channel, last: since}
	if err := s.connect(); err != nil {
		return nil, err
	}
	return s, nil
}

// Subscription is one subscriber of a channel; one goroutine calls Next.
type Subscription struct {
	c                 *Client
	ctx               context.Context
	instance, channel string

	mu     sync.Mutex
	body   io.ReadCloser // the stream in use; nil between connections
	closed bool

	lines *bufio.Scanner
	last  string // the last event id returned
	head  string
}

// ErrSubscriptionClosed is Next's answer after Close.
var ErrSubscriptionClosed = errors.New("client: the subscription is closed")

// LastEventID is the id of the last message or gap Next returned: where
// a new Subscribe resumes.
func (s *Subscription) LastEventID() string { return s.last }

// Head is the channel's last event id when the current connection began.
func (s *Subscription) Head() string { return s.head }

// Close ends the subscription; Next then answers ErrSubscriptionClosed.
func (s *Subscription) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
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
// call reconnects from LastEventID. It blocks until an event comes, and
// answers the Subscribe context's error once it ends, ErrSubscriptionClosed
// after Close, or the refusal of a reconnect (the key revoked, say) or
// the last connection error once the retry policy's tries are spent.
func (s *Subscription) Next() (*errandapi.ChannelEvent, error) {
	ctx := s.ctx
	for try := 1; ; try++ {
		s.mu.Lock()
		closed, live := s.closed, s.body != nil
		s.mu.Unlock()
		if closed {
			return nil, ErrSubscriptionClosed
		}
		if !live {
			err := s.connect()
			if err != nil {
				if ctx.Err() != nil || errors.Is(err, ErrSubscriptionClosed) || try >= s.c.retry.MaxAttempts {
					return nil, err
				}
				var e *errandapi.Error
				if errors.As(err, &e) && e.Status < 500 && e.Status != http.StatusTooManyRequests {
					return nil, err // refused: trying again changes nothing
				}
				if serr := s.c.sleep(ctx, s.c.backoff(try)); serr != nil {
					return nil, serr
				}
				continue
			}
		}
		ev, err := s.read()
		if err != nil {
			s.drop()
			if s.isClosed() {
				return nil, ErrSubscriptionClosed
			}
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
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

func (s *Subscription) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}
