package httpapi_test

import (
	"fmt"
	"strings"
	"testing"
)

// TestPatchTaskDueTime: PATCH with delay or runAt reschedules a scheduled
// task (later: a lease finds nothing; a past runAt: due now) and a
// retrying one, which stays retrying; a leased or finished task is refused
// NOT_RUNNABLE; a refused PATCH changes nothing, its priority included;
// delay and runAt are refused as an add refuses them.
func TestPatchTaskDueTime(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.do("POST", "/v1/tasks/jobs/queues", `{"name":"work","mode":"pull","maxAttempts":3}`).want(t, 201, "")
	id := b.do("POST", "/v1/tasks/jobs/queues/work/tasks", `{"name":"once"}`).want(t, 201, "").list("tasks")[0].(map[string]any)["id"].(string)
	path := "/v1/tasks/jobs/tasks/" + id
	now := b.clock.Now().UnixMilli()
	got := b.do("PATCH", path, `{"delay":60,"priority":2}`).want(t, 200, "").obj("task")
	if got["runAt"] != float64(now+60_000) || got["priority"] != 2.0 || got["state"] != "scheduled" {
		t.Fatalf("PATCH delay 60: %v", got)
	}
	if l := b.do("POST", "/v1/tasks/jobs/queues/work/lease", `{"count":1}`).want(t, 200, "").list("tasks"); len(l) != 0 {
		t.Fatalf("leased %d tasks of a task due in a minute", len(l))
	}
	for _, bad := range []struct{ body, field string }{
		{`{"delay":-1}`, "delay"}, {`{"delay":40000000}`, "delay"}, {`{"delay":1,"runAt":1}`, "delay"},
		{`{"runAt":-5}`, "runAt"}, {fmt.Sprintf(`{"runAt":%d}`, now+400*86_400_000), "runAt"},
		{`{"runAt":"soon"}`, "runAt"}, {`{"priority":9,"delay":-1}`, "delay"},
	} {
		r := b.do("PATCH", path, bad.body).want(t, 400, "INVALID_ARGUMENT")
		if msg := r.obj("error")["message"].(string); !strings.HasPrefix(msg, bad.field) {
			t.Errorf("PATCH %s: %q does not name %s", bad.body, msg, bad.field)
		}
	}
	if got := b.do("GET", path, nil).want(t, 200, "").obj("task"); got["runAt"] != float64(now+60_000) || got["priority"] != 2.0 {
		t.Fatalf("after the refusals: %v", got)
	}
	b.do("PATCH", path, `{"runAt":1}`).want(t, 200, "")
	l := b.do("POST", "/v1/tasks/jobs/queues/work/lease", `{"count":1}`).want(t, 200, "").list("tasks")
	if len(l) != 1 {
		t.Fatalf("leased %d tasks after runAt moved to now", len(l))
	}
	lease := l[0].(map[string]any)["leaseId"].(string)
	b.do("PATCH", path, `{"delay":5}`).want(t, 400, "NOT_RUNNABLE")
	// A failed attempt waits out its backoff; a PATCH moves its retry.
	b.do("POST", path+"/release", `{"leaseId":"`+lease+`","error":"boom"}`).want(t, 200, "")
	got = b.do("PATCH", path, `{"delay":0}`).want(t, 200, "").obj("task")
	if got["state"] != "retrying" || got["runAt"] != float64(now) {
		t.Fatalf("a retrying task rescheduled to now: %v", got)
	}
	l = b.do("POST", "/v1/tasks/jobs/queues/work/lease", `{"count":1}`).want(t, 200, "").list("tasks")
	if len(l) != 1 {
		t.Fatalf("leased %d tasks after the retry moved to now", len(l))
	}
	b.do("POST", path+"/ack", `{"leaseId":"`+l[0].(map[string]any)["leaseId"].(string)+`"}`).want(t, 200, "")
	b.do("PATCH", path, `{"runAt":1}`).want(t, 400, "NOT_RUNNABLE")
	if p := b.do("PATCH", path, `{"priority":5}`).want(t, 200, "").obj("task")["priority"]; p != 5.0 {
		t.Fatalf("a finished task's priority: %v, want 5", p)
	}
}
