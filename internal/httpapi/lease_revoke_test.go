package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestLongPollLeaseKeyRevokedWhileWaiting: a long-polling lease whose key
// is revoked while it waits answers 401 UNAUTHENTICATED when a task comes,
// and leases nothing: the lease handler hands the engine the same check
// an open subscription or worker connection makes. errand_leases_waiting
// counts the poll while it waits, and not after.
func TestLongPollLeaseKeyRevokedWhileWaiting(t *testing.T) {
	s := setupServe(t)
	admin := s.as(s.key("acme", "full:*"))
	admin.do("POST", "/v1/instances", `{"name":"jobs"}`).want(t, 201, "")
	admin.do("POST", "/v1/tasks/jobs/queues", `{"name":"work","mode":"pull"}`).want(t, 201, "")
	k := s.key("acme", "write:jobs")
	later := s.clock.Now().Add(time.Minute)
	admin.do("POST", "/v1/tasks/jobs/queues/work/tasks", `{"payload":0,"delay":60}`).want(t, 201, "")

	req, _ := http.NewRequest("POST", s.srv.URL+"/v1/tasks/jobs/queues/work/lease", strings.NewReader(`{"count":5,"waitSeconds":30}`))
	req.Header.Set("Authorization", "Bearer "+k)
	done := s.background(req)
	// The poll has found nothing and waits once it arms its timer for the
	// queue's next task, the one delayed a minute (on the fake clock).
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.clock.WaitForSleeperAt(ctx, later); err != nil {
		t.Fatal("the long poll never waited")
	}
	if n := s.metric("errand_leases_waiting"); n != 1 {
		t.Fatalf("errand_leases_waiting is %v while the poll waits; want 1", n)
	}
	s.revoke(k)
	r := admin.do("POST", "/v1/tasks/jobs/queues/work/tasks", `{"payload":1}`).want(t, 201, "")
	id := r.body["tasks"].([]any)[0].(map[string]any)["id"].(string)
	select {
	case a := <-done:
		var e struct{ Error struct{ Code string } }
		_ = json.Unmarshal([]byte(a.body), &e)
		if a.status != http.StatusUnauthorized || e.Error.Code != "UNAUTHENTICATED" {
			t.Fatalf("the long poll answered %d %s; want 401 UNAUTHENTICATED", a.status, a.body)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the long poll did not end when the task came")
	}
	if n := s.metric("errand_leases_waiting"); n != 0 {
		t.Fatalf("errand_leases_waiting is %v after the poll ended; want 0", n)
	}
	got := admin.do("GET", "/v1/tasks/jobs/tasks/"+id, nil).want(t, 200, "")
	if tk, _ := got.body["task"].(map[string]any); tk["state"] != "scheduled" || tk["attempt"] != 0.0 {
		t.Fatalf("the task after the refused lease: %s; want it scheduled, unattempted", got.raw)
	}
}

// heldAnswer is the status and body of a call sent in the background.
type heldAnswer struct {
	status int
	body   string
}

// background sends req from another goroutine, for a call the node holds
// (a long poll), and returns the channel of its answer (status 0 and the
// error's words when it got none).
func (s *served) background(req *http.Request) <-chan heldAnswer {
	done := make(chan heldAnswer, 1)
	go func() {
		resp, err := s.client.Do(req)
		if err != nil {
			done <- heldAnswer{0, err.Error()}
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		done <- heldAnswer{resp.StatusCode, string(b)}
	}()
	return done
}
