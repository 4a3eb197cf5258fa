package httpapi_test

import (
	"bytes"
	"testing"
)

// TestJSONShapes: one task's answer carries attempts: [] when it has none
// (a list's tasks leave attempts out); capped is always a list, also in
// the answers of a queue create and patch, which carry no counts.
func TestJSONShapes(t *testing.T) {
	b := setup(t)
	r := b.do("POST", "/v1/tasks/jobs/queues", map[string]any{"name": "q", "mode": "pull"}).want(t, 201, "")
	if !bytes.Contains(r.raw, []byte(`"capped":[]`)) {
		t.Fatalf("create: %s", r.raw)
	}
	r = b.do("PATCH", "/v1/tasks/jobs/queues/q", map[string]any{"paused": true}).want(t, 200, "")
	if !bytes.Contains(r.raw, []byte(`"capped":[]`)) {
		t.Fatalf("patch: %s", r.raw)
	}
	add := b.do("POST", "/v1/tasks/jobs/queues/q/tasks", map[string]any{"payload": 1}).want(t, 201, "")
	id := add.body["tasks"].([]any)[0].(map[string]any)["id"].(string)
	for _, path := range []string{"/v1/tasks/jobs/tasks/" + id, "/v1/tasks/jobs/tasks/" + id + "/run"} {
		method := "GET"
		if path != "/v1/tasks/jobs/tasks/"+id {
			method = "POST"
		}
		r = b.do(method, path, nil).want(t, 200, "")
		if !bytes.Contains(r.raw, []byte(`"attempts":[]`)) {
			t.Fatalf("%s %s: %s", method, path, r.raw)
		}
	}
	r = b.do("GET", "/v1/tasks/jobs/queues/q/tasks", nil).want(t, 200, "")
	if bytes.Contains(r.raw, []byte(`"attempts"`)) {
		t.Fatalf("a list's tasks carry attempts: %s", r.raw)
	}
}

// TestDefaultQueueIsNotDeleted: every instance keeps its queue default:
// DELETE is refused naming the field, and adds still work; purge empties it.
func TestDefaultQueueIsNotDeleted(t *testing.T) {
	b := setup(t)
	b.do("POST", "/v1/tasks/jobs/queues/default/tasks", map[string]any{"payload": 1, "target": map[string]any{"webhook": "http://127.0.0.1:9/x"}, "delay": 60}).want(t, 201, "")
	r := b.do("DELETE", "/v1/tasks/jobs/queues/default?confirm=true", nil).want(t, 400, "INVALID_ARGUMENT")
	if msg := r.body["error"].(map[string]any)["message"].(string); !bytes.HasPrefix([]byte(msg), []byte("queue: ")) {
		t.Fatalf("message %q does not name the field", msg)
	}
	b.do("GET", "/v1/tasks/jobs/queues/default", nil).want(t, 200, "")
	r = b.do("POST", "/v1/tasks/jobs/queues/default/purge?confirm=true", nil).want(t, 200, "")
	if r.body["deleted"] != float64(1) {
		t.Fatalf("purge: %s", r.raw)
	}
}
