package httpapi_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/errandhq/errand/internal/id"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
	"github.com/errandhq/errand/internal/testkit/stores"
)

// onEach runs fn against the API on each backend (PostgreSQL when
// ERRAND_TEST_POSTGRES is set).
func onEach(t *testing.T, fn func(t *testing.T, b *bundle)) {
	for _, kind := range stores.Kinds {
		t.Run(kind, func(t *testing.T) { fn(t, setupOn(t, kind)) })
	}
}

// start runs the engine's services (dispatcher, rescuer) for the test.
func (b *bundle) start() {
	b.t.Helper()
	if err := b.eng.Start(context.Background()); err != nil {
		b.t.Fatal(err)
	}
}

// job submits a job and returns the answer.
func (b *bundle) job(kind, key string, payload any) res {
	b.t.Helper()
	return b.do("POST", "/api/tasks", map[string]any{"kind": kind, "idempotency_key": key, "payload": payload})
}

// waitJob reads the job until it has status (see awaitJob).
func (b *bundle) waitJob(jobID, status string) res {
	b.t.Helper()
	return b.awaitJob(status, func() res { return b.do("GET", "/api/tasks/"+jobID, nil).want(b.t, 200, "") })
}

// awaitJob reads a job with get until it has status, and reads it again
// only after the engine stores the next attempt outcome (a test signal):
// the services run on their own goroutines and the fake clock is not
// moved, so an outcome is what changes a job.
func (b *bundle) awaitJob(status string, get func() res) res {
	b.t.Helper()
	for {
		seen := b.outcomes.Count()
		r := get()
		if r.obj("task")["status"] == status {
			return r
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		_, err := b.outcomes.After(ctx, seen)
		cancel()
		if err != nil {
			b.t.Fatalf("job: %s, want status %s", r.raw, status)
		}
	}
}

// opsQueue returns the operations queue of kind of the dev organization.
func (b *bundle) opsQueue(kind string) *task.Queue {
	b.t.Helper()
	ctx := context.Background()
	inst, err := b.eng.Store().InstanceGet(ctx, store.InstanceRef{Org: "dev", Name: task.OpsInstance})
	if err != nil {
		b.t.Fatal(err)
	}
	q, err := b.eng.Store().QueueGet(ctx, store.QueueRef{InstanceID: inst.ID, Name: kind})
	if err != nil {
		b.t.Fatal(err)
	}
	return q
}

// claimJob claims the due jobs of kind as a node would, without running
// them: the rows are RUNNING under a lease.
func (b *bundle) claimJob(kind string) []*task.Task {
	b.t.Helper()
	ts, err := b.eng.Store().TaskClaim(context.Background(), &store.ClaimParams{
		Queue: b.opsQueue(kind), Now: b.clock.Now().UnixMilli(), Limit: 10, LeaseMs: 30_000, NewLeaseID: id.Lease,
	})
	if err != nil || len(ts) == 0 {
		b.t.Fatalf("claim: %v, %d", err, len(ts))
	}
	return ts
}

func TestOpsIdempotentSubmission(t *testing.T) {
	onEach(t, func(t *testing.T, b *bundle) {
		b.do("POST", "/v1/instances", `{"name":"jobs"}`).want(t, 201, "")
		sel := map[string]any{"instance": "jobs", "ids": []string{"a1", "a2"}}
		first := b.job("dlq.replay", "replay-2026-10-19", sel).want(t, 201, "")
		task1 := first.obj("task")
		if first.body["already_existed"] != false || first.body["id"] != task1["id"] || first.body["status"] != "PENDING" {
			t.Fatalf("first: %s", first.raw)
		}
		if task1["kind"] != "dlq.replay" || task1["idempotency_key"] != "replay-2026-10-19" || task1["attempt"] != 0.0 || task1["max_attempts"] != 3.0 || task1["owner"] != "dev" {
			t.Fatalf("task: %s", first.raw)
		}
		again := b.job("dlq.replay", "replay-2026-10-19", sel).want(t, 200, "")
		if again.body["already_existed"] != true || again.body["id"] != first.body["id"] || again.obj("task")["id"] != first.body["id"] {
			t.Fatalf("again: %s", again.raw)
		}
		// The same key under another kind is another job.
		other := b.job("dlq.purge", "replay-2026-10-19", sel).want(t, 201, "")
		if other.body["id"] == first.body["id"] {
			t.Fatal("kind is part of the identity")
		}
	})
}

func TestOpsIdentityPerOwner(t *testing.T) {
	s := setupServe(t)
	a := s.as(s.key("org-a", "full:*"))
	bb := s.as(s.key("org-b", "full:*"))
	body := map[string]any{"kind": "backup.export", "idempotency_key": "nightly"}
	ra := a.do("POST", "/api/tasks", body).want(t, 201, "")
	rb := bb.do("POST", "/api/tasks", body).want(t, 201, "")
	if ra.body["id"] == rb.body["id"] {
		t.Fatal("two owners share a job")
	}
	// A foreign id answers exactly like a missing one.
	foreign := bb.do("GET", "/api/tasks/"+ra.body["id"].(string), nil).want(t, 404, "not_found")
	missing := bb.do("GET", "/api/tasks/nope", nil).want(t, 404, "not_found")
	if foreign.message() != missing.message() {
		t.Fatalf("foreign %q, missing %q", foreign.message(), missing.message())
	}
	bb.do("POST", "/api/tasks/"+ra.body["id"].(string)+"/cancel", nil).want(t, 404, "not_found")
	bb.do("POST", "/api/tasks/"+ra.body["id"].(string)+"/retry", nil).want(t, 404, "not_found")
	if l := bb.do("GET", "/api/tasks", nil).want(t, 200, "").list("tasks"); len(l) != 1 {
		t.Fatalf("org-b lists %d jobs", len(l))
	}
	// Grants: full on the instance a job touches; full:* for an export.
	a.do("POST", "/v1/instances", `{"name":"other"}`).want(t, 201, "")
	a.do("POST", "/v1/tasks/other/queues", `{"name":"q","mode":"pull"}`).want(t, 201, "")
	w := s.as(s.key("org-a", "write:jobs", "full:other"))
	w.do("POST", "/api/tasks", map[string]any{"kind": "dlq.purge", "idempotency_key": "k", "payload": map[string]any{"instance": "jobs", "queue": "q"}}).want(t, 403, "permission_denied")
	w.do("POST", "/api/tasks", body).want(t, 403, "permission_denied")
	w.do("POST", "/api/tasks", map[string]any{"kind": "dlq.purge", "idempotency_key": "k", "payload": map[string]any{"instance": "other", "queue": "q"}}).want(t, 201, "")
	w.do("GET", "/api/tasks/"+ra.body["id"].(string), nil).want(t, 404, "not_found")
	if l := w.do("GET", "/api/tasks", nil).want(t, 200, "").list("tasks"); len(l) != 1 {
		t.Fatalf("a key with full:other sees %d jobs, want its one", len(l))
	}
	s.header("").do("GET", "/api/tasks", nil).want(t, 401, "unauthenticated")
	// The operations instance is out of the v1 API's reach.
	a.do("GET", "/v1/tasks/_ops/queues", nil).want(t, 404, "NOT_FOUND")
	for _, inst := range a.do("GET", "/v1/instances", nil).list("instances") {
		if inst.(map[string]any)["name"] == task.OpsInstance {
			t.Fatal("the operations instance is listed")
		}
	}
}

func TestOpsRefusals(t *testing.T) {
	onEach(t, func(t *testing.T, b *bundle) {
		sel := map[string]any{"instance": "jobs", "queue": "q"}
		b.job("session.backup", "k", sel).want(t, 400, "unknown_task_kind")
		if r := b.job("", "k", sel).want(t, 400, "invalid_argument"); !strings.HasPrefix(r.message(), "kind: ") {
			t.Fatalf("an empty kind: %q", r.message())
		}
		r := b.do("POST", "/api/tasks", map[string]any{"kind": "dlq.replay", "payload": sel}).want(t, 400, "invalid_argument")
		if !strings.HasPrefix(r.message(), "idempotency_key") {
			t.Fatalf("message %q does not name the field", r.message())
		}
		b.job("dlq.replay", strings.Repeat("k", 201), sel).want(t, 400, "invalid_argument")
		b.job("dlq.replay", "nul\x00key", sel).want(t, 400, "invalid_argument")
		b.do("GET", "/api/tasks/bad%00id", nil).want(t, 404, "not_found")
		big := map[string]any{"instance": "jobs", "ids": []string{strings.Repeat("x", 100)}}
		ids := make([]string, 700)
		for i := range ids {
			ids[i] = strings.Repeat("x", 100)
		}
		big["ids"] = ids
		r = b.job("dlq.replay", "big", big).want(t, 400, "payload_too_large")
		if !strings.HasPrefix(r.message(), "payload") {
			t.Fatalf("message %q does not name the side", r.message())
		}
		b.do("POST", "/api/tasks", `{"kind": "dlq.replay", `).want(t, 400, "invalid_argument")
		b.do("POST", "/api/tasks", `{"kind": "dlq.replay", "idempotency_key": "k", "extra": 1}`).want(t, 400, "invalid_argument")
		b.job("dlq.replay", "k", map[string]any{"instance": "jobs"}).want(t, 400, "invalid_argument")
		b.job("dlq.replay", "k", map[string]any{"instance": "jobs", "queue": "q", "ids": []string{"a"}}).want(t, 400, "invalid_argument")
		b.job("dlq.replay", "k", map[string]any{"instance": "_ops", "queue": "q"}).want(t, 400, "invalid_argument")
		b.job("backup.export", "k", map[string]any{"surprise": true}).want(t, 400, "invalid_argument")
		b.do("GET", "/api/tasks/nope", nil).want(t, 404, "not_found")
		b.do("POST", "/api/tasks/nope/cancel", nil).want(t, 404, "not_found")
		b.do("POST", "/api/tasks/nope/retry", nil).want(t, 404, "not_found")
		b.do("GET", "/api/tasks?limit=abc", nil).want(t, 400, "invalid_argument")
		// Nothing refused was stored.
		if l := b.do("GET", "/api/tasks", nil).want(t, 200, "").list("tasks"); len(l) != 0 {
			t.Fatalf("%d jobs stored by refused calls", len(l))
		}
	})
}

func TestOpsClamping(t *testing.T) {
	onEach(t, func(t *testing.T, b *bundle) {
		for i, c := range []struct {
			sent any
			want float64
		}{{nil, 3}, {0, 3}, {1, 1}, {8, 8}, {9, 8}, {1 << 40, 8}, {-4, 1}} {
			body := map[string]any{"kind": "backup.export", "idempotency_key": fmt.Sprint("c", i)}
			if c.sent != nil {
				body["max_attempts"] = c.sent
			}
			if got := b.do("POST", "/api/tasks", body).want(t, 201, "").obj("task")["max_attempts"]; got != c.want {
				t.Fatalf("max_attempts %v → %v, want %v", c.sent, got, c.want)
			}
		}
		for _, c := range []struct {
			query         string
			limit, offset float64
			n             int
		}{
			{"", 50, 0, 7}, {"?limit=0", 1, 0, 1}, {"?limit=-5", 1, 0, 1}, {"?limit=201", 200, 0, 7},
			{"?limit=99999999999999999999999", 200, 0, 7}, {"?limit=2&offset=-3", 2, 0, 2},
			{"?limit=2&offset=6", 2, 6, 1}, {"?offset=99999999999999999999", 50, 1e9, 0},
		} {
			r := b.do("GET", "/api/tasks"+c.query, nil).want(t, 200, "")
			if r.body["limit"] != c.limit || r.body["offset"] != c.offset || len(r.list("tasks")) != c.n {
				t.Fatalf("%s: %s", c.query, r.raw)
			}
		}
		// Newest first.
		l := b.do("GET", "/api/tasks?limit=200", nil).list("tasks")
		if l[0].(map[string]any)["idempotency_key"] != "c6" {
			t.Fatalf("first listed: %v", l[0])
		}
	})
}
