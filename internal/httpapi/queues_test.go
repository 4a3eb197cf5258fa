package httpapi_test

import (
	"strings"
	"testing"
)

func TestQueueLifecycle(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// dev: the instance is created on first use, with its default queue.
	r := b.do("GET", "/v1/tasks/jobs/queues", nil).want(t, 200, "")
	if qs := r.list("queues"); len(qs) != 1 || qs[0].(map[string]any)["name"] != "default" {
		t.Fatalf("default queue: %s", r.raw)
	}
	r = b.do("POST", "/v1/tasks/jobs/queues", map[string]any{"name": "emails", "target": map[string]any{"webhook": "http://127.0.0.1:1/x"}, "ratePerSecond": 5}).want(t, 201, "")
	q := r.obj("queue")
	if q["ratePerSecond"] != 5.0 || q["maxAttempts"] != 10.0 || q["minBackoffSeconds"] != 10.0 || q["maxBackoffSeconds"] != 3600.0 ||
		q["maxDoublings"] != 16.0 || q["deadlineSeconds"] != 600.0 || q["targetControl"] != true || q["paused"] != false ||
		q["maxConcurrent"] != nil || q["maxAgeSeconds"] != nil || q["deadLetterQueue"] != nil || q["mode"] != "push" {
		t.Fatalf("defaults: %s", r.raw)
	}
	b.do("POST", "/v1/tasks/jobs/queues", map[string]any{"name": "emails"}).want(t, 409, "QUEUE_EXISTS")

	r = b.do("PATCH", "/v1/tasks/jobs/queues/emails", map[string]any{"maxAttempts": 3, "ratePerSecond": nil}).want(t, 200, "")
	if q := r.obj("queue"); q["maxAttempts"] != 3.0 || q["ratePerSecond"] != nil || q["target"] == nil {
		t.Fatalf("patch changed only what was sent? %s", r.raw)
	}
	r = b.do("GET", "/v1/tasks/jobs/queues/emails", nil).want(t, 200, "")
	counts := r.obj("queue")["counts"].(map[string]any)
	for _, s := range []string{"scheduled", "running", "retrying", "succeeded", "failed", "cancelled"} {
		if counts[s] != 0.0 {
			t.Fatalf("counts: %s", r.raw)
		}
	}
	b.do("DELETE", "/v1/tasks/jobs/queues/emails", nil).want(t, 400, "CONFIRM_REQUIRED")
	b.do("POST", "/v1/tasks/jobs/queues/emails/purge", nil).want(t, 400, "CONFIRM_REQUIRED")
	r = b.do("POST", "/v1/tasks/jobs/queues/emails/purge?confirm=true", nil).want(t, 200, "")
	if r.body["pending"] != false {
		t.Fatalf("purge: %s", r.raw)
	}
	r = b.do("DELETE", "/v1/tasks/jobs/queues/emails?confirm=true", nil).want(t, 200, "")
	if r.body["pending"] != false {
		t.Fatalf("delete: %s", r.raw)
	}
	b.do("GET", "/v1/tasks/jobs/queues/emails", nil).want(t, 404, "NOT_FOUND")
	b.do("PATCH", "/v1/tasks/jobs/queues/emails", map[string]any{}).want(t, 404, "NOT_FOUND")
	b.do("DELETE", "/v1/tasks/jobs/queues/emails?confirm=true", nil).want(t, 404, "NOT_FOUND")
}

func TestQueueValidationNamesTheField(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, c := range []struct {
		body  string
		field string
	}{
		{`{"name":"q","maxAttempts":0}`, "maxAttempts"},
		{`{"name":"q","maxAttempts":"3"}`, "maxAttempts"},
		{`{"name":"q","deadlineSeconds":841}`, "deadlineSeconds"},
		{`{"name":"q","owner":"someone"}`, "owner"},
		{`{"name":"q","mode":"sideways"}`, "mode"},
		{`{"name":"q","target":{"webhook":"ftp://x"}}`, "target.webhook"},
		{`{"name":"q","target":{"webhook":"https://a:b@x.example/"}}`, "target.webhook"},
		{`{"name":"q","mode":"pull","target":{"channel":"c"}}`, "target"},
		{`{"name":"q","deadLetterQueue":"nope"}`, "deadLetterQueue"},
		{`{"name":"q","ratePerSecond":-1}`, "ratePerSecond"},
		{`{"name":"bad name"}`, "name"},
		{`{}`, "name"},
		{`{"name":"q",`, "body"},
	} {
		r := b.do("POST", "/v1/tasks/jobs/queues", c.body).want(t, 400, "INVALID_ARGUMENT")
		if !strings.HasPrefix(r.message(), c.field) {
			t.Errorf("%s: message %q does not name %s", c.body, r.message(), c.field)
		}
	}
	b.do("POST", "/v1/tasks/jobs/queues", `{"name":"pq","mode":"pull"}`).want(t, 201, "")
	r := b.do("PATCH", "/v1/tasks/jobs/queues/pq", `{"mode":"push"}`).want(t, 400, "INVALID_ARGUMENT")
	if !strings.HasPrefix(r.message(), "mode") {
		t.Fatal(r.message())
	}
	// A push dead-letter queue without a target could deliver none of its
	// copies (they carry no target): refused, naming the field.
	b.do("POST", "/v1/tasks/jobs/queues", `{"name":"dead"}`).want(t, 201, "")
	if m := b.do("PATCH", "/v1/tasks/jobs/queues/pq", `{"deadLetterQueue":"dead"}`).want(t, 400, "NO_TARGET").message(); !strings.HasPrefix(m, "deadLetterQueue: ") {
		t.Fatal(m)
	}
	b.do("POST", "/v1/tasks/jobs/queues", `{"name":"q2","deadLetterQueue":"dead"}`).want(t, 400, "NO_TARGET")
	b.do("PATCH", "/v1/tasks/jobs/queues/dead", `{"target":{"webhook":"https://example.com/dead"}}`).want(t, 200, "")
	b.do("PATCH", "/v1/tasks/jobs/queues/pq", `{"deadLetterQueue":"dead"}`).want(t, 200, "")
	b.do("PATCH", "/v1/tasks/jobs/queues/pq", `{"deadLetterQueue":"gone"}`).want(t, 400, "INVALID_ARGUMENT").names(t, "deadLetterQueue")
	// Nor a dead-letter queue that leads back: a task that kept failing
	// would go round for ever.
	if m := b.do("PATCH", "/v1/tasks/jobs/queues/dead", `{"deadLetterQueue":"pq"}`).want(t, 400, "INVALID_ARGUMENT").names(t, "deadLetterQueue").message(); !strings.Contains(m, "dead → pq → dead") {
		t.Fatal(m)
	}
	// Nor may the dead-letter queue lose its target later.
	if m := b.do("PATCH", "/v1/tasks/jobs/queues/dead", `{"target":null}`).want(t, 400, "NO_TARGET").message(); !strings.HasPrefix(m, "target: ") || !strings.Contains(m, `"pq"`) {
		t.Fatal(m)
	}
	b.do("PATCH", "/v1/tasks/jobs/queues/pq", `{"deadLetterQueue":null}`).want(t, 200, "")
	// Nor while an enabled rule adds to it (its tasks carry no target).
	b.do("POST", "/v1/tasks/jobs/triggers", `{"id":"h1","queue":"jobs/dead","hook":{}}`).want(t, 201, "")
	if m := b.do("PATCH", "/v1/tasks/jobs/queues/dead", `{"target":null}`).want(t, 400, "NO_TARGET").message(); !strings.HasPrefix(m, "target: ") || !strings.Contains(m, `rule "h1"`) {
		t.Fatal(m)
	}
	b.do("PATCH", "/v1/tasks/jobs/triggers/h1", `{"enabled":false}`).want(t, 200, "")
	b.do("PATCH", "/v1/tasks/jobs/queues/dead", `{"target":null}`).want(t, 200, "")
}

func TestInstances(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.do("POST", "/v1/instances", map[string]any{"name": "shop"}).want(t, 201, "")
	b.do("POST", "/v1/instances", map[string]any{"name": "shop"}).want(t, 409, "INSTANCE_EXISTS")
	b.do("POST", "/v1/instances", map[string]any{"name": ""}).want(t, 400, "INVALID_ARGUMENT").names(t, "name")
	r := b.do("GET", "/v1/instances", nil).want(t, 200, "")
	if l := r.list("instances"); len(l) != 1 || l[0].(map[string]any)["name"] != "shop" {
		t.Fatalf("%s", r.raw)
	}
	b.do("DELETE", "/v1/instances/shop", nil).want(t, 400, "CONFIRM_REQUIRED")
	b.do("DELETE", "/v1/instances/shop?confirm=true", nil).want(t, 200, "")
	if l := b.do("GET", "/v1/instances", nil).list("instances"); len(l) != 0 {
		t.Fatal("not deleted")
	}
}

func TestSettingsAndWebhookKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.do("GET", "/v1/tasks/jobs/settings", nil).want(t, 200, "")
	s := r.obj("settings")
	if s["retentionDays"] != 7.0 || s["maxInFlight"] != 50.0 || s["rateLimit"] != nil {
		t.Fatalf("defaults %s", r.raw)
	}
	r = b.do("PATCH", "/v1/tasks/jobs/settings", map[string]any{"retentionDays": 1, "rateLimit": 100}).want(t, 200, "")
	if s := r.obj("settings"); s["retentionDays"] != 1.0 || s["rateLimit"] != 100.0 || s["maxInFlight"] != 50.0 {
		t.Fatalf("%s", r.raw)
	}
	r = b.do("PATCH", "/v1/tasks/jobs/settings", map[string]any{"retentionDays": 0}).want(t, 400, "INVALID_ARGUMENT")
	if !strings.HasPrefix(r.message(), "retentionDays") {
		t.Fatal(r.message())
	}
	k1 := b.do("GET", "/v1/tasks/jobs/settings/webhook-key", nil).want(t, 200, "").body["webhookKey"].(string)
	k2 := b.do("POST", "/v1/tasks/jobs/settings/webhook-key/rotate", nil).want(t, 200, "").body["webhookKey"].(string)
	k3 := b.do("GET", "/v1/tasks/jobs/settings/webhook-key", nil).want(t, 200, "").body["webhookKey"].(string)
	if !strings.HasPrefix(k1, "whsec_") || k1 == k2 || k2 != k3 {
		t.Fatalf("keys %q %q %q", k1, k2, k3)
	}
}
