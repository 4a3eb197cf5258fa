package embedded

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestRateLimitSetting: UpdateSettings sets and removes the instance's
// rateLimit, which HTTPHandler's calls then keep (429 RATE_LIMITED past a
// second's calls, on the engine's clock) and the engine's own methods do
// not; a value out of range is refused naming rateLimit.
func TestRateLimitSetting(t *testing.T) {
	t.Parallel()
	e, fc := open(t, "sqlite")
	ctx := context.Background()
	must(t, e.CreateQueue(ctx, "jobs", "q", QueueOptions{Pull: true}))
	srv := httptest.NewServer(e.HTTPHandler())
	defer srv.Close()
	get := func() int {
		t.Helper()
		resp, err := http.Get(srv.URL + "/v1/tasks/jobs/queues/q")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	two := 2.0
	must(t, e.UpdateSettings(ctx, "jobs", Settings{RateLimit: &two}))
	if s, err := e.InstanceSettings(ctx, "jobs"); err != nil || s.RateLimit == nil || *s.RateLimit != 2 {
		t.Fatalf("InstanceSettings: %+v %v; want rateLimit 2", s, err)
	}
	for i := range 2 {
		if st := get(); st != 200 {
			t.Fatalf("call %d: %d, want 200", i, st)
		}
	}
	if st := get(); st != http.StatusTooManyRequests {
		t.Fatalf("a third call in the second: %d, want 429", st)
	}
	add(t, e, "q", NewTask{}) // the engine's own methods are not limited

	for _, bad := range []float64{-1, 0.001, 2e6} {
		err := e.UpdateSettings(ctx, "jobs", Settings{RateLimit: &bad})
		wantCode(t, err, "INVALID_ARGUMENT", "rateLimit", fmt.Sprintf("UpdateSettings(rateLimit %g)", bad))
	}
	zero := 0.0
	must(t, e.UpdateSettings(ctx, "jobs", Settings{RateLimit: &zero}))
	if s, err := e.InstanceSettings(ctx, "jobs"); err != nil || s.RateLimit != nil {
		t.Fatalf("InstanceSettings after 0: %+v %v; want no rate limit", s, err)
	}
	// HTTPHandler reads the setting again a second after it last did (on
	// the engine's clock); then no call is refused.
	fc.Advance(time.Second)
	for i := range 5 {
		if st := get(); st != 200 {
			t.Fatalf("call %d with the limit removed: %d, want 200", i, st)
		}
	}
}
