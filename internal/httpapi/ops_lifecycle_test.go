package httpapi_test

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestOpsLifecycleRows walks every row of the transition table through the
// operations API, and every refused move out of each state.
func TestOpsLifecycleRows(t *testing.T) {
	onEach(t, func(t *testing.T, b *bundle) {
		t0 := b.clock.Now().Unix()
		for _, inst := range []string{"ghost", "later"} {
			b.do("POST", "/v1/instances", `{"name":"`+inst+`"}`).want(t, 201, "")
			b.do("POST", "/v1/tasks/"+inst+"/queues", `{"name":"q","mode":"pull"}`).want(t, 201, "")
		}
		// PENDING → CANCELLED; then CANCELLED is terminal.
		c := b.job("dlq.replay", "cancel-me", map[string]any{"instance": "ghost", "queue": "q"}).want(t, 201, "")
		cid := c.body["id"].(string)
		r := b.do("POST", "/api/tasks/"+cid+"/retry", nil).want(t, 400, "not_retryable")
		if !strings.Contains(r.message(), "scheduled") {
			t.Fatalf("message %q", r.message())
		}
		r = b.do("POST", "/api/tasks/"+cid+"/cancel", nil).want(t, 200, "")
		if r.body["status"] != "CANCELLED" || r.obj("task")["status"] != "CANCELLED" || r.body["id"] != cid {
			t.Fatalf("cancel: %s", r.raw)
		}
		b.do("POST", "/api/tasks/"+cid+"/cancel", nil).want(t, 400, "not_cancellable")
		b.do("POST", "/api/tasks/"+cid+"/retry", nil).want(t, 400, "not_retryable")

		// PENDING → RUNNING (a node claims it); a running job is not
		// cancelled, and the row stays RUNNING.
		run := b.job("dlq.purge", "running", map[string]any{"instance": "ghost", "queue": "q"}).want(t, 201, "")
		rid := run.body["id"].(string)
		b.claimJob("dlq.purge")
		b.do("POST", "/api/tasks/"+rid+"/cancel", nil).want(t, 400, "running_not_cancellable")
		b.do("POST", "/api/tasks/"+rid+"/retry", nil).want(t, 400, "not_retryable")
		if g := b.do("GET", "/api/tasks/"+rid, nil).obj("task"); g["status"] != "RUNNING" || g["attempt"] != 1.0 {
			t.Fatalf("after the refused cancel: %v", g)
		}

		// RUNNING → RETRY_WAIT (5 s), RETRY_WAIT → RUNNING → RETRY_WAIT
		// (20 s), → RUNNING → FAILED with the budget of 3 spent: the job
		// names an instance deleted after the job was stored.
		f := b.job("dlq.replay", "fails", map[string]any{"instance": "later", "queue": "q"}).want(t, 201, "")
		fid := f.body["id"].(string)
		b.do("DELETE", "/v1/instances/later?confirm=true", nil).want(t, 200, "")
		b.start()
		w := b.waitJob(fid, "RETRY_WAIT").obj("task")
		if w["attempt"] != 1.0 || w["run_at"] != float64(t0+5) || !strings.Contains(w["last_error"].(string), "later") {
			t.Fatalf("after attempt 1: %v", w)
		}
		b.do("POST", "/api/tasks/"+fid+"/retry", nil).want(t, 400, "not_retryable")
		b.clock.Advance(5 * time.Second)
		w = b.waitJob(fid, "RETRY_WAIT").obj("task")
		for w["attempt"] != 2.0 {
			w = b.waitJob(fid, "RETRY_WAIT").obj("task")
		}
		if w["run_at"] != float64(t0+5+20) {
			t.Fatalf("after attempt 2: %v", w)
		}
		b.clock.Advance(20 * time.Second)
		w = b.waitJob(fid, "FAILED").obj("task")
		if w["attempt"] != 3.0 || w["max_attempts"] != 3.0 || w["finished_at"] != float64(t0+25) {
			t.Fatalf("failed: %v", w)
		}
		b.do("POST", "/api/tasks/"+fid+"/cancel", nil).want(t, 400, "not_cancellable")

		// FAILED → PENDING (explicit retry, fresh budget), then PENDING →
		// RUNNING → SUCCEEDED now that the cause is fixed.
		b.do("POST", "/v1/instances", map[string]any{"name": "later"}).want(t, 201, "")
		b.do("POST", "/v1/tasks/later/queues", map[string]any{"name": "q", "mode": "pull"}).want(t, 201, "")
		r = b.do("POST", "/api/tasks/"+fid+"/retry", nil).want(t, 200, "")
		if st := r.body["status"]; st != "PENDING" && st != "RUNNING" && st != "SUCCEEDED" {
			t.Fatalf("retry: %s", r.raw)
		}
		w = b.waitJob(fid, "SUCCEEDED").obj("task")
		if w["attempt"] != 1.0 || w["result"] == nil || w["progress"] == nil {
			t.Fatalf("succeeded: %v", w)
		}
		b.do("POST", "/api/tasks/"+fid+"/cancel", nil).want(t, 400, "not_cancellable")
		b.do("POST", "/api/tasks/"+fid+"/retry", nil).want(t, 400, "not_retryable")
	})
}

// TestOpsCancelWhileWaiting: RETRY_WAIT → CANCELLED, the owner stops a job
// while it waits out its backoff (its instance was deleted after the job
// was stored, so its first attempt failed).
func TestOpsCancelWhileWaiting(t *testing.T) {
	onEach(t, func(t *testing.T, b *bundle) {
		b.do("POST", "/v1/instances", `{"name":"nowhere"}`).want(t, 201, "")
		b.do("POST", "/v1/tasks/nowhere/queues", `{"name":"q","mode":"pull"}`).want(t, 201, "")
		rw := b.job("dlq.replay", "waits", map[string]any{"instance": "nowhere", "queue": "q"}).want(t, 201, "")
		wid := rw.body["id"].(string)
		b.do("DELETE", "/v1/instances/nowhere?confirm=true", nil).want(t, 200, "")
		b.start()
		b.waitJob(wid, "RETRY_WAIT")
		b.do("POST", "/api/tasks/"+wid+"/cancel", nil).want(t, 200, "")
		b.clock.Advance(time.Hour)
		if g := b.do("GET", "/api/tasks/"+wid, nil).obj("task"); g["status"] != "CANCELLED" || g["attempt"] != 1.0 {
			t.Fatalf("cancelled while waiting: %v", g)
		}
	})
}

// TestOpsRetentionKeepsUnfinished: finished jobs go after 30 days, and an
// unfinished one is never purged.
func TestOpsRetentionKeepsUnfinished(t *testing.T) {
	b := setup(t)
	done := b.job("backup.export", "gone", nil).want(t, 201, "").body["id"].(string)
	b.do("POST", "/api/tasks/"+done+"/cancel", nil).want(t, 200, "")
	waiting := b.job("backup.export", "stays", nil).want(t, 201, "").body["id"].(string)
	b.clock.Advance(30*24*time.Hour - time.Minute)
	if n, _ := b.eng.Cleaner().RunOnce(context.Background()); n != 0 {
		t.Fatalf("cleaned %d before 30 days", n)
	}
	b.clock.Advance(2 * time.Minute)
	if n, _ := b.eng.Cleaner().RunOnce(context.Background()); n != 1 {
		t.Fatalf("cleaned %d after 30 days, want 1", n)
	}
	b.do("GET", "/api/tasks/"+done, nil).want(t, 404, "not_found")
	b.do("GET", "/api/tasks/"+waiting, nil).want(t, 200, "")
}
