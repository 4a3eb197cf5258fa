package httpapi_test

import (
	"strings"
	"testing"
)

// TestRefusalsNameTheFullPath: a refusal's message starts with the full
// path of the field at fault, at any depth and in any item of an array,
// in the API's own words (audit: nested unknown fields lost their path,
// integers were "a number", the ops payload leaked encoding/json's words).
func TestRefusalsNameTheFullPath(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.do("POST", "/v1/tasks/jobs/queues", `{"name":"q1","target":{"webhook":"http://127.0.0.1:1/x"}}`).want(t, 201, "")
	b.do("POST", "/v1/tasks/jobs/queues", `{"name":"pq","mode":"pull"}`).want(t, 201, "")
	for _, c := range []struct{ method, path, body, code, want string }{
		{"POST", "/v1/tasks/jobs/queues/default/tasks", `{"payload":1,"target":{"webhook":"http://x","Extra":1}}`, "INVALID_ARGUMENT", "target.Extra: unknown field"},
		{"POST", "/v1/tasks/jobs/queues/default/tasks", `[{"payload":1},{"payload":1,"target":{"function":"a/b","x":1}}]`, "INVALID_ARGUMENT", "tasks[1].target.x: unknown field"},
		{"POST", "/v1/tasks/jobs/triggers", `{"queue":"jobs/pq","hook":{"bogus":1}}`, "INVALID_ARGUMENT", "hook.bogus: unknown field"},
		{"POST", "/v1/tasks/jobs/triggers", `{"queue":"jobs/pq","schedule":{"cron":"@daily","Bogus":1}}`, "INVALID_ARGUMENT", "schedule.Bogus: unknown field"},
		{"POST", "/v1/tasks/jobs/triggers", `{"queue":"jobs/pq","task":{"queue":"jobs/q1","x":1}}`, "INVALID_ARGUMENT", "task.x: unknown field"},
		{"POST", "/v1/tasks/jobs/queues/pq/ack", `{"acks":[{"id":"x","leaseId":"y","extra":1}]}`, "INVALID_ARGUMENT", "acks[0].extra: unknown field"},
		{"PATCH", "/v1/tasks/jobs/queues/q1", `{"maxAttempts":1.0}`, "INVALID_ARGUMENT", "maxAttempts: must be an integer, not 1.0"},
		{"PATCH", "/v1/tasks/jobs/queues/q1", `{"minBackoffSeconds":5,"maxBackoffSeconds":1}`, "INVALID_ARGUMENT", "maxBackoffSeconds: must not be below minBackoffSeconds (5)"},
		{"PATCH", "/v1/tasks/jobs/queues/q1", `{"minBackoffSeconds":7200}`, "INVALID_ARGUMENT", "minBackoffSeconds: must not be above maxBackoffSeconds (3600)"},
		// An empty name is not "no name": a name is 1–500 characters.
		{"POST", "/v1/tasks/jobs/queues/q1/tasks", `{"payload":1,"name":""}`, "INVALID_ARGUMENT", "name: must be 1–500 characters"},
		{"POST", "/v1/tasks/jobs/queues/q1/tasks", `{"tasks":[{"name":"a"},{"name":""}]}`, "INVALID_ARGUMENT", "tasks[1].name: must be 1–500 characters"},
		{"POST", "/v1/tasks/jobs/queues/q1/tasks", `{"tasks":[{"name":"a"},{"name":"b","name":"c"}]}`, "INVALID_ARGUMENT", "tasks[1].name: is given twice"},
		{"POST", "/v1/tasks/jobs/queues/q1/tasks", `{"tasks":[{"name":"a"}],"tasks":[{"name":"b"}]}`, "INVALID_ARGUMENT", "tasks: is given twice"},
		// A field error comes before the queue's lack of a target.
		// The one task of a batch body is tasks[0], as in a larger batch;
		// a body of one task object is the task itself.
		{"POST", "/v1/tasks/jobs/queues/default/tasks", `[{"payload":1,"deadlineSeconds":841}]`, "INVALID_ARGUMENT", "tasks[0].deadlineSeconds: must be 1–840"},
		{"POST", "/v1/tasks/jobs/queues/default/tasks", `{"payload":1,"deadlineSeconds":841}`, "INVALID_ARGUMENT", "deadlineSeconds: must be 1–840"},
		// ... and a later task's refused field before an earlier task's
		// lack of a target.
		{"POST", "/v1/tasks/jobs/queues/default/tasks", `[{"payload":1},{"payload":1,"deadlineSeconds":841}]`, "INVALID_ARGUMENT", "tasks[1].deadlineSeconds: must be 1–840"},
		{"POST", "/v1/tasks/jobs/queues/pq/tasks", `{"tasks":[{"payload":1,"target":{"webhook":"http://127.0.0.1:1/x"}}]}`, "INVALID_ARGUMENT", "tasks[0].target"},
		// The operations API: lowercase codes, the payload's fields under payload.
		{"POST", "/api/tasks", `{"idempotency_key":"k","payload":{"instance":"jobs","queue":"q1"}}`, "invalid_argument", "kind: is required"},
		{"POST", "/api/tasks", `{"kind":"dlq.replay","idempotency_key":"k","payload":"x"}`, "invalid_argument", "payload: must be an object, not string"},
		{"POST", "/api/tasks", `{"kind":"dlq.replay","idempotency_key":"k","payload":{"instance":"jobs","queue":1}}`, "invalid_argument", "payload.queue: must be a string, not number"},
		{"POST", "/api/tasks", `{"kind":"dlq.purge","idempotency_key":"k","payload":{"instance":"jobs","queue":"q1","x":1}}`, "invalid_argument", "payload.x: unknown field"},
		{"DELETE", "/api/dlq", `{"payload":{"instance":"jobs","queue":"q1","x":1}}`, "invalid_argument", "payload.x: unknown field"},
		{"POST", "/api/backup/export", `{"payload":{"surprise":true}}`, "invalid_argument", "payload.surprise: unknown field"},
	} {
		r := b.do(c.method, c.path, c.body).want(t, 400, c.code)
		if msg := r.message(); !strings.HasPrefix(msg, c.want) || strings.Contains(msg, "json:") || strings.Contains(msg, "Go ") {
			t.Errorf("%s %s %s: %q, want %q…", c.method, c.path, c.body, msg, c.want)
		}
	}
}
