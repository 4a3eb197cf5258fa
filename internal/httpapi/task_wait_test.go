package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestGetTaskWaits: GET of a task with waitSeconds is held until the task
// ends and answers it ended (here acked, with its result); out-of-range
// waits are refused naming waitSeconds; a key revoked while the call waits
// ends it with 401 UNAUTHENTICATED when the node looks again.
func TestGetTaskWaits(t *testing.T) {
	s := setupServe(t)
	admin := s.as(s.key("acme", "full:*"))
	admin.do("POST", "/v1/instances", `{"name":"jobs"}`).want(t, 201, "")
	admin.do("POST", "/v1/tasks/jobs/queues", `{"name":"work","mode":"pull"}`).want(t, 201, "")
	for _, bad := range []string{"31", "-1", "soon"} {
		r := admin.do("GET", "/v1/tasks/jobs/tasks/x?waitSeconds="+bad, nil).want(t, 400, "INVALID_ARGUMENT").names(t, "waitSeconds")
		if !strings.Contains(r.message(), "0–30") {
			t.Fatalf("waitSeconds=%s: %s", bad, r.message())
		}
	}
	admin.do("GET", "/v1/tasks/jobs/tasks/nope?waitSeconds=1", nil).want(t, 404, "NOT_FOUND")

	wait := func(key, id string) <-chan heldAnswer {
		t.Helper()
		req, _ := http.NewRequest("GET", s.srv.URL+"/v1/tasks/jobs/tasks/"+id+"?waitSeconds=30", nil)
		req.Header.Set("Authorization", "Bearer "+key)
		done := s.background(req)
		// It waits once it arms its first pause before reading again.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.clock.WaitForSleeperAt(ctx, s.clock.Now().Add(50*time.Millisecond)); err != nil {
			t.Fatal("the call never waited")
		}
		return done
	}
	got := func(done <-chan heldAnswer) heldAnswer {
		t.Helper()
		select {
		case a := <-done:
			return a
		case <-time.After(10 * time.Second):
			t.Fatal("the waiting call did not answer")
			return heldAnswer{}
		}
	}
	addOne := func() string {
		r := admin.do("POST", "/v1/tasks/jobs/queues/work/tasks", `{"payload":1}`).want(t, 201, "")
		return r.body["tasks"].([]any)[0].(map[string]any)["id"].(string)
	}

	reader := s.key("acme", "read:jobs")
	id := addOne()
	done := wait(reader, id)
	l := admin.do("POST", "/v1/tasks/jobs/queues/work/lease", `{}`).want(t, 200, "")
	lease := l.body["tasks"].([]any)[0].(map[string]any)["leaseId"].(string)
	admin.do("POST", "/v1/tasks/jobs/tasks/"+id+"/ack", `{"leaseId":"`+lease+`","result":{"n":7}}`).want(t, 200, "")
	a := got(done)
	var body struct {
		Task struct {
			State  string
			Result json.RawMessage
		}
	}
	if err := json.Unmarshal([]byte(a.body), &body); err != nil || a.status != 200 || body.Task.State != "succeeded" || string(body.Task.Result) != `{"n":7}` {
		t.Fatalf("the wait answered %d %s; want 200, succeeded with its result", a.status, a.body)
	}

	id = addOne()
	k := s.key("acme", "read:jobs")
	done = wait(k, id)
	s.revoke(k)
	admin.do("POST", "/v1/tasks/jobs/tasks/"+id+"/cancel", nil).want(t, 200, "")
	var e struct{ Error struct{ Code string } }
	if a := got(done); json.Unmarshal([]byte(a.body), &e) != nil || a.status != 401 || e.Error.Code != "UNAUTHENTICATED" {
		t.Fatalf("the revoked key's wait answered %d %s; want 401 UNAUTHENTICATED", a.status, a.body)
	}
}
