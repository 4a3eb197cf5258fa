package storetest

import (
	"context"
	"testing"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

var contextCases = []testCase{
	{"Cancelled", testCancelledContext},
	{"Ping", testPing},
}

// testPing: a store that answers pings nil (the health check's question),
// and a ping with a context already done answers the context's error.
func testPing(t *testing.T, e *env) {
	if err := e.s.Ping(e.ctx); err != nil {
		t.Fatalf("ping: %v", err)
	}
	ctx, cancel := context.WithCancel(e.ctx)
	cancel()
	if err := e.s.Ping(ctx); err != context.Canceled {
		t.Fatalf("ping with a cancelled context: %v", err)
	}
}

// testCancelledContext: a read, a write or a claim with a context already
// done answers the context's error, unchanged (never a domain error: the
// API answers it as a cancelled request).
func testCancelledContext(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	q := e.queue(inst, "work", task.ModePull)
	e.add(e.newTask(q, T0))
	ctx, cancel := context.WithCancel(e.ctx)
	cancel()
	if _, err := e.s.InstanceGet(ctx, store.InstanceRef{Org: "acme", Name: "jobs"}); err != context.Canceled {
		t.Fatalf("read with a cancelled context: %v", err)
	}
	if _, err := e.s.InstanceUpdate(ctx, store.InstanceRef{Org: "acme", Name: "jobs"}, func(*task.Instance) error { return nil }); err != context.Canceled {
		t.Fatalf("write with a cancelled context: %v", err)
	}
	if _, err := e.s.TaskClaim(ctx, &store.ClaimParams{Queue: q, Now: T0, Limit: 1, LeaseMs: 1000, NewLeaseID: e.leases()}); err != context.Canceled {
		t.Fatalf("claim with a cancelled context: %v", err)
	}
	if got := e.claim(q, T0, 1, 1000); len(got) != 1 {
		t.Fatalf("after a cancelled claim, claimed %d tasks, want 1", len(got))
	}
}
