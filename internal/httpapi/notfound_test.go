package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestNotFoundNamesWhat: a NOT_FOUND says what was not found, in the
// caller's own words (the instance, queue or id it gave).
func TestNotFoundNamesWhat(t *testing.T) {
	b := setup(t)
	b.do("POST", "/v1/tasks/jobs/queues", map[string]any{"name": "q", "mode": "pull"}).want(t, 201, "")
	for _, c := range []struct{ method, path, want string }{
		{"GET", "/v1/tasks/jobs/queues/emails", `queue "emails" not found in instance "jobs"`},
		{"PATCH", "/v1/tasks/jobs/queues/emails", `queue "emails" not found in instance "jobs"`},
		{"DELETE", "/v1/tasks/jobs/queues/emails?confirm=true", `queue "emails" not found in instance "jobs"`},
		{"POST", "/v1/tasks/jobs/queues/emails/purge?confirm=true", `queue "emails" not found in instance "jobs"`},
		{"POST", "/v1/tasks/jobs/queues/emails/tasks", `queue "emails" not found in instance "jobs"`},
		{"GET", "/v1/tasks/jobs/queues/emails/tasks", `queue "emails" not found in instance "jobs"`},
		{"POST", "/v1/tasks/jobs/queues/emails/lease", `queue "emails" not found in instance "jobs"`},
		{"GET", "/v1/tasks/jobs/tasks/01nope", `task "01nope" not found in instance "jobs"`},
		{"POST", "/v1/tasks/jobs/tasks/01nope/cancel", `task "01nope" not found in instance "jobs"`},
		{"POST", "/v1/tasks/jobs/tasks/01nope/ack", `task "01nope" not found in instance "jobs"`},
		{"DELETE", "/v1/instances/nope?confirm=true", `instance "nope" not found`},
		{"GET", "/v1/tasks/jobs/tasks/a%20b", `task "a b" not found in instance "jobs"`},
		{"GET", "/v1/tasks/jobs/tasks/" + strings.Repeat("x", 128), `task "` + strings.Repeat("x", 128) + `" not found in instance "jobs"`},
		// A longer id is quoted to its first 128 bytes and its length,
		// not echoed back whole (a 100 KB path segment).
		{"GET", "/v1/tasks/jobs/tasks/" + strings.Repeat("x", 129), `task "` + strings.Repeat("x", 128) + `"… (129 bytes) not found in instance "jobs"`},
		{"POST", "/v1/tasks/jobs/tasks/" + strings.Repeat("y", 100_000) + "/cancel", `task "` + strings.Repeat("y", 128) + `"… (100000 bytes) not found in instance "jobs"`},
		{"GET", "/v1/tasks/" + strings.Repeat("i", 200) + "/queues/q", `instance "` + strings.Repeat("i", 128) + `"… (200 bytes) not found`},
		{"GET", "/v1/tasks/jobs/queues/a%20b", `queue "a b" not found in instance "jobs"`},
		{"GET", "/v1/tasks/jobs/triggers/nope", `trigger "nope" not found in instance "jobs"`},
		{"PATCH", "/v1/tasks/jobs/triggers/nope", `trigger "nope" not found in instance "jobs"`},
		{"DELETE", "/v1/tasks/jobs/triggers/nope", `trigger "nope" not found in instance "jobs"`},
		{"GET", "/v1/tasks/jobs/triggers/a%20b", `trigger "a b" not found in instance "jobs"`},
		{"POST", "/v1/tasks/jobs/triggers", `queue "emails" not found in instance "jobs"`},
		{"POST", "/v1/hooks/jobs/hk_nope", `no enabled hook of instance "jobs" has this URL`},
		{"POST", "/v1/hooks/" + strings.Repeat("h", 300) + "/hk_nope", `no enabled hook of instance "` + strings.Repeat("h", 128) + `"… (300 bytes) has this URL`},
	} {
		var body any
		switch {
		case c.method == "PATCH" && strings.Contains(c.path, "/triggers/"):
			body = map[string]any{"enabled": false}
		case c.method == "PATCH":
			body = map[string]any{"paused": true}
		case strings.HasSuffix(c.path, "/triggers"):
			body = map[string]any{"queue": "jobs/emails", "hook": map[string]any{}}
		case strings.HasSuffix(c.path, "/tasks") && c.method == "POST":
			body = map[string]any{"payload": 1}
		case strings.HasSuffix(c.path, "/ack"):
			body = map[string]any{"leaseId": "x"}
		case c.method == "POST":
			body = map[string]any{}
		}
		r := b.do(c.method, c.path, body).want(t, 404, "NOT_FOUND")
		if msg := r.body["error"].(map[string]any)["message"]; msg != c.want {
			t.Errorf("%s %s: message %q, want %q", c.method, c.path, msg, c.want)
		}
	}
}

// TestDotSegmentsAreNotFound: a path with an empty, "." or ".." segment is
// a 404 in errand's shape, not the mux's HTML redirect to the cleaned path
// (which a client following it would POST to again).
func TestDotSegmentsAreNotFound(t *testing.T) {
	b := setup(t)
	for _, c := range []struct{ method, path, code string }{
		{"POST", "/v1/tasks/jobs/queues/../queues/q/tasks", "NOT_FOUND"},
		{"GET", "/v1/tasks/jobs//queues/q", "NOT_FOUND"},
		{"GET", "/v1/tasks/jobs/./queues", "NOT_FOUND"},
		{"GET", "/api/tasks/../tasks", "not_found"},
	} {
		req, _ := http.NewRequest(c.method, b.srv.URL+c.path, nil)
		req.URL.Opaque = c.path // sent as written, not cleaned by the client
		r := b.send(req)
		r.want(t, 404, c.code)
		if !strings.Contains(r.message(), "no empty, '.' or '..' segments") {
			t.Errorf("%s %s: %s", c.method, c.path, r.raw)
		}
	}
}
