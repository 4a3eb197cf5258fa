package client

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/errandhq/errand/errandapi"
)

// RetryPolicy says how a call is tried again. A call that is safe to
// repeat (docs/sdk.md lists them) is retried after a connection error or a
// 503 (or a proxy's 502 or 504); every call is retried when the connection could not be made at all
// (the server never saw it) and after RATE_LIMITED, which the server
// answers before doing anything.
type RetryPolicy struct {
	// MaxAttempts bounds the tries of one call, the first included
	// (default 4; 1 never retries).
	MaxAttempts int
	// MinBackoff is the wait before the first retry (default 100 ms); it
	// doubles on each retry up to MaxBackoff (default 5 s). Each wait is
	// drawn between half and all of its step (jitter), so clients that
	// failed together do not come back together.
	MinBackoff time.Duration
	MaxBackoff time.Duration
	// MaxRetryAfter is the longest Retry-After of a RATE_LIMITED answer
	// that a call waits out (default 30 s); past it the call answers
	// RATE_LIMITED at once, with the wait in Error.RetryAfter.
	MaxRetryAfter time.Duration
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.MaxAttempts <= 0 {
		p.MaxAttempts = 4
	}
	if p.MinBackoff <= 0 {
		p.MinBackoff = 100 * time.Millisecond
	}
	if p.MaxBackoff <= 0 {
		p.MaxBackoff = 5 * time.Second
	}
	p.MaxBackoff = max(p.MaxBackoff, p.MinBackoff)
	if p.MaxRetryAfter <= 0 {
		p.MaxRetryAfter = 30 * time.Second
	}
	return p
}

// backoff is the wait before retry number n (1 for the first): the
// doubled step capped at MaxBackoff, drawn in [step/2, step].
func (c *Client) backoff(n int) time.Duration {
	step := c.retry.MaxBackoff
	if n-1 < 62 {
		if s := c.retry.MinBackoff << (n - 1); s > 0 && s < step {
			step = s
		}
	}
	half := step / 2
	return half + time.Duration(c.jitter(int64(step-half)+1))
}

// retryAfter decides whether the call that failed with err on try is sent
// again, and after how long.
func (c *Client) retryAfter(cl call, err error, try int) (time.Duration, bool) {
	if try >= c.retry.MaxAttempts {
		return 0, false
	}
	var te *transportError
	if errors.As(err, &te) {
		if cl.repeatable || !te.sent && notSent(te.err) {
			return c.backoff(try), true
		}
		return 0, false
	}
	var e *errandapi.Error
	if !errors.As(err, &e) {
		return 0, false
	}
	switch {
	case e.Status == http.StatusTooManyRequests:
		if e.RetryAfter > c.retry.MaxRetryAfter {
			return 0, false
		}
		if e.RetryAfter > 0 {
			return e.RetryAfter, true
		}
		return c.backoff(try), true
	case cl.repeatable && (e.Status == http.StatusServiceUnavailable || e.Status == http.StatusBadGateway || e.Status == http.StatusGatewayTimeout):
		return c.backoff(try), true
	}
	return 0, false
}

// notSent reports a connection error from before any byte of the request
// was written: the dial failed.
func notSent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// parseRetryAfter reads a Retry-After header: whole seconds or an HTTP
// date; 0 when absent or unreadable.
func parseRetryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	if n, err := strconv.Atoi(v); err == nil && n >= 0 {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(0, time.Until(t))
	}
	return 0
}

func randInt63n(n int64) int64 { return rand.Int64N(n) }

// sleepCtx waits d, or until ctx is done (its error).
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
