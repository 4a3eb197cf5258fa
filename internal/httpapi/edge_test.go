package httpapi_test

import (
	"encoding/base64"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/errandhq/errand/internal/testkit/stores"
)

// onBoth runs f as a subtest on every backend.
func onBoth(t *testing.T, f func(t *testing.T, b *bundle)) {
	for _, kind := range stores.Kinds {
		t.Run(kind, func(t *testing.T) { f(t, setupOn(t, kind)) })
	}
}

// randomKey is a webhook key in an answer: random base64, which may spell
// any short word ("…DDypgxQ=").
var randomKey = regexp.MustCompile(`"webhookKey":"whsec_[A-Za-z0-9+/=]*"`)

// noDriverText fails when an answer carries a store's or driver's words.
func noDriverText(t *testing.T, r res) {
	t.Helper()
	raw := randomKey.ReplaceAllString(string(r.raw), `"webhookKey":"whsec_…"`)
	for _, w := range []string{"SQLSTATE", "ERROR:", "sqlite", "store:", "pgx", "invalid byte sequence"} {
		if strings.Contains(raw, w) {
			t.Fatalf("the answer leaks %q: %s", w, r.raw)
		}
	}
}

// Defect 1: NUL bytes and invalid UTF-8 in ids, names, cursors and error
// texts are refused at the edge (or sanitised, for free text), never 500.
func TestNULAndInvalidUTF8AtTheEdge(t *testing.T) {
	t.Parallel()
	onBoth(t, func(t *testing.T, b *bundle) {
		b.do("POST", "/v1/tasks/jobs/queues", `{"name":"emails","target":{"webhook":"http://127.0.0.1:1/x"}}`).want(t, 201, "")
		b.do("POST", "/v1/tasks/jobs/queues", `{"name":"work","mode":"pull"}`).want(t, 201, "")
		for _, bad := range []string{"a%00b", "a%FFb", "%C0%80"} {
			for _, path := range []string{
				"/v1/tasks/jobs/tasks/" + bad,
				"/v1/tasks/jobs/queues/" + bad,
				"/v1/tasks/jobs/queues/" + bad + "/tasks",
			} {
				r := b.do("GET", path, nil).want(t, 404, "NOT_FOUND")
				noDriverText(t, r)
			}
			r := b.do("POST", "/v1/tasks/jobs/tasks/"+bad+"/run", nil).want(t, 404, "NOT_FOUND")
			noDriverText(t, r)
			r = b.do("GET", "/v1/tasks/jobs/queues/emails/tasks?name="+bad, nil).want(t, 400, "INVALID_ARGUMENT")
			if !strings.HasPrefix(r.message(), "name") {
				t.Fatalf("%s", r.raw)
			}
		}
		for _, id := range []string{"a\x00b", "a\xffb"} {
			for _, order := range []string{"c", "r", "f"} {
				cur := base64.RawURLEncoding.EncodeToString([]byte(order + "123:" + id))
				state := map[string]string{"c": "", "r": "&state=scheduled", "f": "&state=failed"}[order]
				r := b.do("GET", "/v1/tasks/jobs/queues/emails/tasks?cursor="+cur+state, nil).want(t, 400, "INVALID_ARGUMENT")
				if !strings.HasPrefix(r.message(), "cursor") {
					t.Fatalf("%s", r.raw)
				}
			}
		}
		r := b.do("POST", "/v1/tasks/jobs/queues/work/ack", `{"acks":[{"id":"a\u0000b","leaseId":"x"}]}`).want(t, 400, "INVALID_ARGUMENT")
		if !strings.HasPrefix(r.message(), "acks[0].id") {
			t.Fatalf("%s", r.raw)
		}
		r = b.do("POST", "/v1/tasks/jobs/queues/work/ack", `{"acks":[{"id":"abc","leaseId":"x\u0000"}]}`).want(t, 400, "INVALID_ARGUMENT")
		if !strings.HasPrefix(r.message(), "acks[0].leaseId") {
			t.Fatalf("%s", r.raw)
		}
		// A worker whose error text holds a NUL can release its task.
		b.do("POST", "/v1/tasks/jobs/queues/work/tasks", `{"payload":1}`).want(t, 201, "")
		id, lease := b.leaseOne("work", 60)
		b.do("POST", "/v1/tasks/jobs/tasks/"+id+"/release", `{"leaseId":"`+lease+`","error":"bad\u0000thing"}`).want(t, 200, "")
		g := b.do("GET", "/v1/tasks/jobs/tasks/"+id, nil).want(t, 200, "")
		if le, _ := g.obj("task")["lastError"].(string); le != "bad\ufffdthing" {
			t.Fatalf("lastError %q", le)
		}
		r = b.do("POST", "/v1/tasks/jobs/tasks/"+id+"/ack", `{"leaseId":"a\u0000"}`).want(t, 400, "INVALID_ARGUMENT")
		noDriverText(t, r)
	})
}

// Defect 3: invalid UTF-8 in payload, params and result is refused.
func TestInvalidUTF8InJSONRefused(t *testing.T) {
	t.Parallel()
	onBoth(t, func(t *testing.T, b *bundle) {
		b.do("POST", "/v1/tasks/jobs/queues", `{"name":"work","mode":"pull"}`).want(t, 201, "")
		for _, c := range []struct{ body, field string }{
			{"{\"payload\":\"a\xffb\"}", "payload"},
			{"{\"payload\":1,\"params\":{\"k\":\"\xc0\x80\"}}", "params"},
			{"[{\"payload\":1},{\"payload\":\"\xed\xa0\x80\"}]", "tasks[1].payload"},
		} {
			r := b.do("POST", "/v1/tasks/jobs/queues/work/tasks", c.body).want(t, 400, "INVALID_ARGUMENT")
			if !strings.HasPrefix(r.message(), c.field) {
				t.Fatalf("%q: %s", c.body, r.raw)
			}
		}
		if n := b.do("GET", "/v1/tasks/jobs/queues/work", nil).obj("queue")["counts"].(map[string]any)["scheduled"]; n != 0.0 {
			t.Fatalf("a refused add stored %v tasks", n)
		}
		b.do("POST", "/v1/tasks/jobs/queues/work/tasks", `{"payload":1}`).want(t, 201, "")
		id, lease := b.leaseOne("work", 60)
		r := b.do("POST", "/v1/tasks/jobs/tasks/"+id+"/ack", "{\"leaseId\":\""+lease+"\",\"result\":\"\xff\"}").want(t, 400, "INVALID_ARGUMENT")
		if !strings.HasPrefix(r.message(), "result") {
			t.Fatalf("%s", r.raw)
		}
		r = b.do("POST", "/v1/tasks/jobs/queues/work/ack", "{\"acks\":[{\"id\":\""+id+"\",\"leaseId\":\""+lease+"\",\"result\":\"\xff\"}]}").want(t, 400, "INVALID_ARGUMENT")
		if !strings.HasPrefix(r.message(), "acks[0].result") {
			t.Fatalf("%s", r.raw)
		}
		if s := b.do("GET", "/v1/tasks/jobs/tasks/"+id, nil).obj("task")["state"]; s != "leased" {
			t.Fatalf("a refused ack changed the task: %v", s)
		}
	})
}

// Defect 4: a task must be an object.
func TestAddTaskMustBeAnObject(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.do("POST", "/v1/tasks/jobs/queues", `{"name":"work","mode":"pull"}`).want(t, 201, "")
	for _, body := range []string{`[null]`, `{"tasks":[null]}`, `[{"payload":1},null]`, `[1]`, `{"tasks":["x"]}`, `{"tasks":null}`} {
		r := b.do("POST", "/v1/tasks/jobs/queues/work/tasks", body).want(t, 400, "INVALID_ARGUMENT")
		if !strings.HasPrefix(r.message(), "tasks") {
			t.Fatalf("%s: %s", body, r.raw)
		}
	}
	if n := b.do("GET", "/v1/tasks/jobs/queues/work", nil).obj("queue")["counts"].(map[string]any)["scheduled"]; n != 0.0 {
		t.Fatalf("a refused add stored %v tasks", n)
	}
}

// Defect 5: field names match exactly.
func TestFieldNamesMatchExactly(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.do("POST", "/v1/tasks/jobs/queues", `{"name":"work","mode":"pull"}`).want(t, 201, "")
	for _, c := range []struct{ method, path, body, field string }{
		{"POST", "/v1/tasks/jobs/queues/work/tasks", `{"PAYLOAD":1}`, "PAYLOAD"},
		{"POST", "/v1/tasks/jobs/queues/work/tasks", `{"payload":1,"Delay":5}`, "Delay"},
		{"POST", "/v1/tasks/jobs/queues/work/tasks", `[{"Name":"x"}]`, "tasks[0].Name"},
		{"POST", "/v1/tasks/jobs/queues/default/tasks", `{"target":{"Function":"app/x"}}`, "target.Function"},
		{"POST", "/v1/tasks/jobs/queues", `{"Name":"q2"}`, "Name"},
		{"POST", "/v1/tasks/jobs/queues", `{"name":"q3","target":{"webhook":"http://127.0.0.1:1/","bogus":1}}`, "target.bogus"},
		{"PATCH", "/v1/tasks/jobs/queues/work", `{"MaxAttempts":3}`, "MaxAttempts"},
		{"PATCH", "/v1/tasks/jobs/settings", `{"RateLimit":3}`, "RateLimit"},
		{"POST", "/v1/tasks/jobs/queues/work/lease", `{"Count":1}`, "Count"},
		{"POST", "/v1/tasks/jobs/queues/work/ack", `{"acks":[{"ID":"x","leaseId":"y"}]}`, "acks[0].ID"},
	} {
		r := b.do(c.method, c.path, c.body).want(t, 400, "INVALID_ARGUMENT")
		if !strings.HasPrefix(r.message(), c.field) {
			t.Fatalf("%s: %s", c.body, r.raw)
		}
	}
	if l := b.do("GET", "/v1/tasks/jobs/queues", nil).list("queues"); len(l) != 2 {
		t.Fatalf("a refused create added a queue: %d queues", len(l))
	}
}

// Defect 6: a known path with the wrong method answers 405 with Allow.
func TestWrongMethodIs405(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, c := range []struct{ method, path, allow string }{
		{"PUT", "/v1/tasks/jobs/tasks/abc", "DELETE, GET, HEAD, PATCH"},
		{"GET", "/v1/tasks/jobs/queues/emails/purge", "POST"},
		{"PUT", "/v1/tasks/jobs/queues/emails", "DELETE, GET, HEAD, PATCH"},
		{"PUT", "/v1/instances", "GET, HEAD, POST"},
	} {
		req, _ := http.NewRequest(c.method, b.srv.URL+c.path, nil)
		resp, err := b.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 405 || resp.Header.Get("Allow") != c.allow {
			t.Fatalf("%s %s: %d Allow %q, want 405 %q", c.method, c.path, resp.StatusCode, resp.Header.Get("Allow"), c.allow)
		}
	}
	b.do("GET", "/v1/nothing/here", nil).want(t, 404, "NOT_FOUND")
	// Under /api/ the operations API's lowercase codes.
	b.do("GET", "/api/tasks/x/cancel", nil).want(t, 405, "method_not_allowed")
	b.do("GET", "/api/dlq", nil).want(t, 405, "method_not_allowed")
	b.do("POST", "/api/nope", nil).want(t, 404, "not_found")
}

// Defects 2 and 9: every numeric setting has an upper bound, rateLimit a
// lower one that keeps Retry-After meaningful.
func TestSettingBounds(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.do("POST", "/v1/tasks/jobs/queues", `{"name":"work","mode":"pull"}`).want(t, 201, "")
	for _, c := range []struct{ path, body, field string }{
		{"/v1/tasks/jobs/queues/work", `{"maxAgeSeconds":1e16}`, "maxAgeSeconds"},
		{"/v1/tasks/jobs/queues/work", `{"maxAgeSeconds":315360001}`, "maxAgeSeconds"},
		{"/v1/tasks/jobs/queues/work", `{"ratePerSecond":1e-300}`, "ratePerSecond"},
		{"/v1/tasks/jobs/settings", `{"rateLimit":1e-300}`, "rateLimit"},
		{"/v1/tasks/jobs/settings", `{"rateLimit":1e-9}`, "rateLimit"},
		{"/v1/tasks/jobs/settings", `{"rateLimit":0.0099}`, "rateLimit"},
	} {
		r := b.do("PATCH", c.path, c.body).want(t, 400, "INVALID_ARGUMENT")
		if !strings.HasPrefix(r.message(), c.field) {
			t.Fatalf("%s: %s", c.body, r.raw)
		}
	}
	b.do("PATCH", "/v1/tasks/jobs/queues/work", `{"maxAgeSeconds":315360000}`).want(t, 200, "")
	b.do("PATCH", "/v1/tasks/jobs/settings", `{"rateLimit":0.01}`).want(t, 200, "")
	// The slowest rate answers a Retry-After of at most 100 s.
	b.do("GET", "/v1/tasks/jobs/queues", nil).want(t, 200, "")
	req, _ := http.NewRequest("GET", b.srv.URL+"/v1/tasks/jobs/queues", nil)
	resp, err := b.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "100" {
		t.Fatalf("%d Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	b.do("PATCH", "/v1/tasks/jobs/settings", `{"rateLimit":null}`).want(t, 200, "")
}
