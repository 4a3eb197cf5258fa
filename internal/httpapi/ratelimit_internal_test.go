package httpapi

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/errandhq/errand/internal/clock"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
	"github.com/errandhq/errand/internal/testkit/stores"
)

// limiterOn is a limiter on a real SQLite store's bucket for one instance
// ("inst-1", made in the store) whose rateLimit is *limit, with the store's
// grants counted; closeStore closes the store (once, whether the test or
// its cleanup asks first).
func limiterOn(t *testing.T, limit *float64) (l *limiter, fc *clock.Fake, closeStore func() error, asked *int) {
	t.Helper()
	st := stores.Open(t, "sqlite")
	closeStore = sync.OnceValue(st.Close)
	t.Cleanup(func() { _ = closeStore() })
	// The bucket is the instance's: a grant for an instance that does not
	// exist is NOT_FOUND.
	if err := st.InstanceCreate(t.Context(), &task.Instance{ID: "inst-1", Org: "acme", Name: "jobs", CreatedAt: 1, Settings: task.DefaultSettings()}); err != nil {
		t.Fatal(err)
	}
	fc = clock.NewFake(time.UnixMilli(1_700_000_000_000))
	asked = new(int)
	l = newLimiter(fc,
		func(context.Context, string, string) (float64, string, error) { return *limit, "inst-1", nil },
		func(ctx context.Context, id string, want int, limit float64, burst int) (int, float64, error) {
			*asked++
			g, err := st.APIRateTake(ctx, &store.APIRateParams{InstanceID: id, Want: want, Rate: limit, Burst: burst, Now: fc.Now().UnixMilli()})
			return g.Took, g.Left, err
		})
	return l, fc, closeStore, asked
}

// passes counts which of n calls pass.
func passes(t *testing.T, l *limiter, n int) int {
	t.Helper()
	ok := 0
	for range n {
		_, err := l.allow(t.Context(), "acme", "jobs")
		switch {
		case err == nil:
			ok++
		case !task.IsCode(err, task.CodeRateLimited):
			t.Fatalf("allow: %v", err)
		}
	}
	return ok
}

// TestLimiterGrants: a node spends a grant of a tenth of a second's calls
// before it asks the store again; refused calls ask nothing until the
// bucket holds a grant again; calls granted and not spent lapse after
// grantTTL; a store that cannot answer lets calls through for openTTL.
func TestLimiterGrants(t *testing.T) {
	limit := 100.0
	l, fc, closeStore, asked := limiterOn(t, &limit)
	if got := passes(t, l, 100); got != 100 || *asked != 10 {
		t.Fatalf("100 calls of a full bucket of 100: %d passed, %d grants asked; want 100 and 10", got, *asked)
	}
	if got := passes(t, l, 50); got != 0 || *asked != 11 {
		t.Fatalf("50 calls of an empty bucket: %d passed, %d grants asked; want 0 and 11 (one, then none until 100 ms)", got, *asked)
	}
	wait, err := l.allow(t.Context(), "acme", "jobs")
	if !task.IsCode(err, task.CodeRateLimited) || wait != 100*time.Millisecond {
		t.Fatalf("refused: wait %v, %v; want 100ms (a grant of 10 at 100 a second)", wait, err)
	}
	fc.Advance(99 * time.Millisecond)
	if got := passes(t, l, 1); got != 0 || *asked != 11 {
		t.Fatalf("at 99 ms: %d passed, %d asked", got, *asked)
	}
	fc.Advance(time.Millisecond)
	if got := passes(t, l, 1); got != 1 || *asked != 12 {
		t.Fatalf("at 100 ms: %d passed, %d asked; want 1, 12", got, *asked)
	}
	// Nine calls of that grant are held; they lapse unspent.
	fc.Advance(grantTTL)
	before := *asked
	if got := passes(t, l, 1); got != 1 || *asked != before+1 {
		t.Fatalf("after grantTTL: %d passed, %d asked; want a new grant", got, *asked-before)
	}
	// The store gone: calls pass, without asking it again, for openTTL.
	if err := closeStore(); err != nil {
		t.Fatal(err)
	}
	passes(t, l, 9) // the grant's rest
	before = *asked
	if got := passes(t, l, 30); got != 30 || *asked != before+1 {
		t.Fatalf("store closed: %d of 30 passed, %d asked; want 30, 1", got, *asked-before)
	}
	fc.Advance(openTTL)
	passes(t, l, 1)
	if *asked != before+2 {
		t.Fatalf("after openTTL the store was not asked again: %d", *asked-before)
	}
}

// TestLimiterChange: a changed limit drops what the node held or refused
// under the old one, and the bucket's size is the new limit's.
func TestLimiterChange(t *testing.T) {
	limit := 100.0
	l, fc, _, _ := limiterOn(t, &limit)
	passes(t, l, 1) // a grant of 10, 9 held
	// Lowered through this node (its PATCH): the bucket (89 left) is
	// capped at the new size, 2, and the 9 held are dropped.
	limit = 2
	l.set("acme", "jobs", limit, "inst-1", fc.Now())
	if got := passes(t, l, 10); got != 2 {
		t.Fatalf("rateLimit lowered to 2: %d of 10 calls passed, want 2", got)
	}
	// Raised again through another node: seen within settingTTL, with the
	// refusal under the old limit (a wait of 500 ms) dropped.
	limit = 100
	fc.Advance(settingTTL)
	if got := passes(t, l, 3); got != 3 {
		t.Fatalf("rateLimit raised to 100, a second later: %d of 3 calls passed", got)
	}
}
