package httpapi_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestRequestAndBacklogMetrics: every answer is counted by api and status,
// and the scrape reports the store's due work by mode (paused queues and
// tasks not yet due left out), read at most once in five seconds, and
// errand_store_up 0 once the store stops answering.
func TestRequestAndBacklogMetrics(t *testing.T) {
	onBoth(t, func(t *testing.T, b *bundle) {
		b.do("POST", "/v1/tasks/jobs/queues", map[string]any{"name": "emails", "mode": "pull"}).want(t, 201, "")
		b.do("POST", "/v1/tasks/jobs/queues/emails/tasks", map[string]any{"tasks": []any{
			map[string]any{"payload": 1}, map[string]any{"payload": 2}, map[string]any{"payload": 3, "delay": 3600}}}).want(t, 201, "")
		b.do("GET", "/v1/tasks/jobs/tasks/nosuchtask", nil).want(t, 404, "NOT_FOUND")
		b.do("GET", "/api/nowhere", nil).want(t, 404, "not_found")
		b.do("DELETE", "/healthz", nil).want(t, 405, "METHOD_NOT_ALLOWED")
		for name, want := range map[string]float64{
			`errand_http_requests_total{api="v1",code="201"}`:     2,
			`errand_http_requests_total{api="v1",code="404"}`:     1,
			`errand_http_requests_total{api="ops",code="404"}`:    1,
			`errand_http_requests_total{api="probes",code="405"}`: 1,
			`errand_store_up`:                             1,
			`errand_tasks_due{mode="pull"}`:               2,
			`errand_oldest_due_task_seconds{mode="pull"}`: 0,
			`errand_tasks_due{mode="push"}`:               0,
		} {
			if got := b.metric(name); got != want {
				t.Errorf("%s = %v, want %v", name, got, want)
			}
		}
		// Read again once five seconds have passed, not before.
		b.clock.Advance(4 * time.Second)
		if got := b.metric(`errand_oldest_due_task_seconds{mode="pull"}`); got != 0 {
			t.Errorf("oldest due read again within 5 s: %v", got)
		}
		b.clock.Advance(26 * time.Second)
		if got := b.metric(`errand_oldest_due_task_seconds{mode="pull"}`); got != 30 {
			t.Errorf("oldest due after 30 s = %v, want 30", got)
		}
		b.do("PATCH", "/v1/tasks/jobs/queues/emails", map[string]any{"paused": true}).want(t, 200, "")
		b.clock.Advance(5 * time.Second)
		if got := b.metric(`errand_tasks_due{mode="pull"}`); got != 0 {
			t.Errorf("due in a paused queue = %v, want 0", got)
		}
		if err := b.eng.Store().Close(); err != nil {
			t.Fatal(err)
		}
		b.clock.Advance(5 * time.Second)
		rec := httptest.NewRecorder()
		b.eng.Metrics().Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "\nerrand_store_up 0\n") || strings.Contains(rec.Body.String(), "errand_tasks_due{") {
			t.Errorf("with the store closed: %d\n%s", rec.Code, rec.Body.String())
		}
	})
}
