package httpapi

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/errandhq/errand/internal/clock"
	"github.com/errandhq/errand/internal/task"
)

// settingTTL is how long the limiter trusts the rateLimit it read from the
// store: a PATCH through this node applies at once, one through another
// node within this time.
const settingTTL = time.Second

// grantTTL is how long calls granted to this node and not yet spent stay
// usable: a node that stops calling gives up what it held (the others are
// short of it meanwhile, never over the limit). openTTL is how long calls
// pass without a grant after the store failed to answer for one.
const (
	grantTTL = time.Second
	openTTL  = time.Second
)

// unlimitedRoutes are exempt from the instance's rate limit for a caller
// with the full grant, so that it can always read and change a limit set
// too low (the console's settings page reads it before it shows its
// form); for a read or write key they count as any other route.
var unlimitedRoutes = map[string]bool{
	"GET /v1/tasks/{instance}/settings":   true,
	"PATCH /v1/tasks/{instance}/settings": true,
}

// limiter enforces each instance's rateLimit setting (API calls per
// second). The bucket, holding one second of calls (at least one), is the
// store's (store.APIRateStore), shared by every node: each node takes
// calls from it in grants of a tenth of a second's calls (grantOf) and
// spends them locally, so the instance gets at most rateLimit across all
// nodes, and a node asks the store at most about ten times a second while
// calls flow (once a call under a limit below 10), and not at all while
// they are refused.
type limiter struct {
	clock clock.Clock
	// load reads an instance's rateLimit (0 = unlimited) and its id;
	// NOT_FOUND when the instance does not exist.
	load func(ctx context.Context, org, instance string) (float64, string, error)
	// take asks the store's bucket for a grant of want calls (the
	// engine's APICallGrant): how many it took, and what the bucket holds
	// after.
	take takeFunc

	mu sync.Mutex
	m  map[limitKey]*bucket
}

type limitKey struct{ org, instance string }

// bucket is one instance's setting, as this node read it, and its grant.
type bucket struct {
	// Under the limiter's mu:
	limit      float64 // calls per second; 0 = unlimited
	instanceID string
	checked    time.Time // when limit was last read or set
	gen        int       // counts the limit's changes: a grant of an older limit is dropped

	grant grant
}

// grant is what this node holds of an instance's bucket. Its mu is held
// while the node asks the store for more, so the instance's other calls on
// this node wait for that one grant rather than each asking.
type grant struct {
	mu         sync.Mutex
	gen        int       // the bucket's gen this grant was taken under
	held       int       // calls granted and not yet spent
	heldUntil  time.Time // when they lapse (grantTTL)
	emptyUntil time.Time // the store's bucket cannot give a grant before this: calls are refused here until then
	openUntil  time.Time // the store failed to answer: calls pass until then
}

// takeFunc is the engine's APICallGrant.
type takeFunc func(ctx context.Context, instanceID string, want int, limit float64, burst int) (int, float64, error)

func newLimiter(c clock.Clock, load func(ctx context.Context, org, instance string) (float64, string, error), take takeFunc) *limiter {
	return &limiter{clock: c, load: load, take: take, m: map[limitKey]*bucket{}}
}

// burstOf is the bucket size for a limit: one second of calls, at least 1.
func burstOf(limit float64) int { return max(1, int(math.Ceil(limit))) }

// grantOf is how many calls a node asks the store for at a time: a tenth
// of a second's, at least 1.
func grantOf(limit float64) int { return min(max(1, int(limit/10)), burstOf(limit)) }

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
		limit, id, err := l.load(ctx, org, instance)
		switch {
		case task.IsCode(err, task.CodeNotFound):
			l.forget(org, instance)
			return 0, nil
		case err != nil && b == nil:
			return 0, nil
		case err == nil:
			l.set(org, instance, limit, id, now)
		}
	}
	l.mu.Lock()
	b = l.m[key]
	if b == nil || b.limit <= 0 {
		l.mu.Unlock()
		return 0, nil
	}
	limit, id, gen := b.limit, b.instanceID, b.gen
	l.mu.Unlock()
	wait, ok := l.spend(ctx, &b.grant, gen, id, limit, now)
	if ok {
		return 0, nil
	}
	return wait, task.Errorf(task.CodeRateLimited, "instance %q allows %g API calls per second (its rateLimit setting); retry in %d s",
		instance, limit, retryAfter(wait))
}

// spend takes one call from g, asking the store for a grant of the
// instance's calls when g holds none; it reports whether the call passes
// and, when not, how long until one would.
func (l *limiter) spend(ctx context.Context, g *grant, gen int, instanceID string, limit float64, now time.Time) (time.Duration, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.gen != gen { // the limit changed: what was held or refused under the old one goes
		g.gen, g.held, g.emptyUntil, g.openUntil = gen, 0, time.Time{}, time.Time{}
	}
	switch {
	case now.Before(g.openUntil):
		return 0, true
	case g.held > 0 && now.Before(g.heldUntil):
		g.held--
		return 0, true
	case now.Before(g.emptyUntil):
		return g.emptyUntil.Sub(now), false
	}
	want := grantOf(limit)
	took, left, err := l.take(ctx, instanceID, want, limit, burstOf(limit))
	if err != nil {
		if ctx.Err() == nil {
			g.openUntil = now.Add(openTTL)
		}
		return 0, true
	}
	if took > 0 {
		g.held, g.heldUntil = took-1, now.Add(grantTTL)
		return 0, true
	}
	// Nothing before the bucket holds a whole grant again: asking sooner
	// would only ask the store again for less.
	wait := time.Duration((float64(want) - left) / limit * float64(time.Second))
	g.held, g.emptyUntil = 0, now.Add(wait)
	return wait, false
}

// set records an instance's rateLimit, and its id, read or written at
// now. A changed limit keeps the store's bucket (its size is the new
// limit's from the next grant) and drops this node's grant.
func (l *limiter) set(org, instance string, limit float64, instanceID string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	key := limitKey{org, instance}
	b := l.m[key]
	if b == nil {
		b = &bucket{}
		l.m[key] = b
	}
	b.checked = now
	if limit == b.limit && instanceID == b.instanceID {
		return
	}
	b.limit, b.instanceID = limit, instanceID
	b.gen++
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
