package httpapi

import (
	"context"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/errandhq/errand/internal/clock"
	"github.com/errandhq/errand/internal/task"
)

// settingTTL is how long the limiter trusts the rateLimit it read from the
// store: a PATCH through this node applies at once, one through another
// node within this time.
const settingTTL = time.Second

// unlimitedRoutes are exempt from the instance's rate limit for a caller
// with the full grant, so that it can always read and change a limit set
// too low (the console's settings page reads it before it shows its
// form); for a read or write key they count as any other route.
var unlimitedRoutes = map[string]bool{
	"GET /v1/tasks/{instance}/settings":   true,
	"PATCH /v1/tasks/{instance}/settings": true,
}

// limiter enforces each instance's rateLimit setting (API calls per second)
// with a token bucket per (organization, instance) holding up to one
// second of calls (at least one), on the engine's clock. It is per node.
type limiter struct {
	clock clock.Clock
	// load reads an instance's rateLimit (0 = unlimited); NOT_FOUND when
	// the instance does not exist.
	load func(ctx context.Context, org, instance string) (float64, error)

	mu sync.Mutex
	m  map[limitKey]*bucket
}

type limitKey struct{ org, instance string }

// bucket is one instance's limiter and the setting it was built from.
type bucket struct {
	limit   float64       // calls per second; 0 = unlimited
	lim     *rate.Limiter // nil while unlimited
	checked time.Time     // when limit was last read or set
}

func newLimiter(c clock.Clock, load func(ctx context.Context, org, instance string) (float64, error)) *limiter {
	return &limiter{clock: c, load: load, m: map[limitKey]*bucket{}}
}

// burstOf is the bucket size for a limit: one second of calls, at least 1.
func burstOf(limit float64) int { return max(1, int(math.Ceil(limit))) }

// allow takes one call from the instance's bucket. When the bucket is
// empty it answers RATE_LIMITED and how long until a call would pass. The
// setting is read again when it is older than settingTTL; a store that
// cannot answer, or an instance that does not exist, lets the call through
// to its handler, which answers for itself.
func (l *limiter) allow(ctx context.Context, org, instance string) (time.Duration, error) {
	key := limitKey{org, instance}
	now := l.clock.Now()
	l.mu.Lock()
	b := l.m[key]
	stale := b == nil || now.Sub(b.checked) >= settingTTL || now.Before(b.checked)
	if stale && b != nil {
		b.checked = now // this call refreshes; concurrent ones use the setting they have
	}
	l.mu.Unlock()
	if stale {
		limit, err := l.load(ctx, org, instance)
		switch {
		case task.IsCode(err, task.CodeNotFound):
			l.mu.Lock()
			delete(l.m, key)
			l.mu.Unlock()
			return 0, nil
		case err != nil && b == nil:
			return 0, nil
		case err == nil:
			l.set(org, instance, limit, now)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	b = l.m[key]
	if b == nil || b.lim == nil || b.lim.AllowN(now, 1) {
		return 0, nil
	}
	wait := time.Duration((1 - b.lim.TokensAt(now)) / b.limit * float64(time.Second))
	return wait, task.Errorf(task.CodeRateLimited, "instance %q allows %g API calls per second (its rateLimit setting); retry in %d s",
		instance, b.limit, retryAfter(wait))
}

// set records an instance's rateLimit read or written at now. A changed
// limit keeps the bucket's tokens (capped at the new size).
func (l *limiter) set(org, instance string, limit float64, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	key := limitKey{org, instance}
	b := l.m[key]
	if b == nil {
		b = &bucket{}
		l.m[key] = b
	}
	b.checked = now
	if limit == b.limit {
		return
	}
	b.limit = limit
	switch {
	case limit <= 0:
		b.lim = nil
	case b.lim == nil:
		b.lim = rate.NewLimiter(rate.Limit(limit), burstOf(limit))
	default:
		b.lim.SetLimitAt(now, rate.Limit(limit))
		b.lim.SetBurstAt(now, burstOf(limit))
	}
}

// forget drops an instance's bucket (it was deleted).
func (l *limiter) forget(org, instance string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.m, limitKey{org, instance})
}

// retryAfter is wait in whole seconds, rounded up, at least 1: the value
// of the Retry-After header.
func retryAfter(wait time.Duration) int {
	return max(1, int(math.Ceil(wait.Seconds())))
}
