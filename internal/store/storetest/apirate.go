package storetest

import (
	"sync"
	"testing"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

var apiRateCases = []testCase{
	{"Take", testAPIRateTake},
	{"Shared", testAPIRateShared},
	{"InstanceDelete", testAPIRateInstanceDelete},
}

// take asks instanceID's bucket (rate 2 a second, burst 5 unless p says
// otherwise) for want calls at now.
func (e *env) take(instanceID string, want int, now int64, mod ...func(*store.APIRateParams)) store.APIRateTaken {
	e.t.Helper()
	p := &store.APIRateParams{InstanceID: instanceID, Want: want, Rate: 2, Burst: 5, Now: now}
	for _, m := range mod {
		m(p)
	}
	g, err := e.s.APIRateTake(e.ctx, p)
	if err != nil {
		e.t.Fatalf("APIRateTake(%s, %d at %d): %v", instanceID, want, now, err)
	}
	return g
}

// testAPIRateTake: a bucket never used starts full; a grant takes whole
// calls, at most what is left; time refills it at the rate, up to the
// burst; a clock older than the last grant refills nothing; each
// instance has its own bucket.
func testAPIRateTake(t *testing.T, e *env) {
	a, b, c := e.instance("acme", "a").ID, e.instance("acme", "b").ID, e.instance("acme", "c").ID
	steps := []struct {
		want int
		now  int64
		took int
		left float64
	}{
		{3, T0, 3, 2},           // full: 5
		{5, T0, 2, 0},           // what is left
		{1, T0 + 499, 0, 0.998}, // 0.998 of a call: none
		{3, T0 + 500, 1, 0},     // half a second at 2 a second: one
		{1, T0 + 250, 0, 0},     // an older clock refills nothing
		{9, T0 + 60_000, 5, 0},  // a minute: the burst, no more
	}
	for i, s := range steps {
		g := e.take(a, s.want, s.now)
		if g.Took != s.took || g.Left < s.left-1e-9 || g.Left > s.left+1e-9 {
			t.Fatalf("step %d (want %d at +%d ms): took %d, left %g; want %d, %g", i, s.want, s.now-T0, g.Took, g.Left, s.took, s.left)
		}
	}
	if g := e.take(b, 4, T0+60_000); g.Took != 4 || g.Left != 1 {
		t.Fatalf("another instance's bucket: took %d, left %g; want 4, 1", g.Took, g.Left)
	}
	// A smaller burst (the limit lowered) caps what was kept.
	e.take(c, 1, T0)
	if g := e.take(c, 9, T0+1, func(p *store.APIRateParams) { p.Burst = 2 }); g.Took != 2 {
		t.Fatalf("burst lowered to 2: took %d", g.Took)
	}
}

// testAPIRateShared: grants asked at once, as several nodes ask them, never
// take the same call: together they take the bucket exactly.
func testAPIRateShared(t *testing.T, e *env) {
	const burst, askers = 40, 12
	inst := e.instance("acme", "shared").ID
	var mu sync.Mutex
	took := 0
	var wg sync.WaitGroup
	for range askers {
		wg.Go(func() {
			for range 5 {
				g, err := e.s.APIRateTake(e.ctx, &store.APIRateParams{InstanceID: inst, Want: 1, Rate: 0.001, Burst: burst, Now: T0})
				if err != nil {
					t.Errorf("APIRateTake: %v", err)
					return
				}
				mu.Lock()
				took += g.Took
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if took != burst {
		t.Fatalf("%d askers × 5 grants of 1 took %d calls from a bucket of %d", askers, took, burst)
	}
}

// testAPIRateInstanceDelete: an instance's bucket goes with it, and a
// grant asked for it afterwards (a node that still held its id) is
// NOT_FOUND and makes no bucket: an instance made again under the name
// starts full. Asked for an id no instance ever had, it is NOT_FOUND too.
func testAPIRateInstanceDelete(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	if g := e.take(inst.ID, 5, T0); g.Took != 5 {
		t.Fatalf("took %d of a full bucket of 5", g.Took)
	}
	if err := e.s.InstanceDelete(e.ctx, store.InstanceRef{Org: "acme", Name: "jobs"}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{inst.ID, inst.ID, "no-such-instance"} {
		g, err := e.s.APIRateTake(e.ctx, &store.APIRateParams{InstanceID: id, Want: 1, Rate: 2, Burst: 5, Now: T0})
		if !task.IsCode(err, task.CodeNotFound) || g.Took != 0 {
			t.Fatalf("APIRateTake(%s) after InstanceDelete: took %d, %v; want NOT_FOUND", id, g.Took, err)
		}
	}
	again := e.instance("acme", "jobs")
	if g := e.take(again.ID, 5, T0); g.Took != 5 {
		t.Fatalf("an instance made again under the name: took %d of a full bucket of 5", g.Took)
	}
}
