package httpapi_test

import (
	"testing"
)

// TestWrongTypeInAnArrayNamesTheIndex: a wrong type inside an array names
// the element's index, as an unknown field does (audit: a batch ack with
// a numeric id was refused as `acks.id`, a hook's headers ["a", 5] as
// `hook.headers`).
func TestWrongTypeInAnArrayNamesTheIndex(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.do("POST", "/v1/tasks/jobs/queues", `{"name":"q1","target":{"webhook":"http://127.0.0.1:1/x"}}`).want(t, 201, "")
	b.do("POST", "/v1/tasks/jobs/queues", `{"name":"pq","mode":"pull"}`).want(t, 201, "")
	hook := b.do("POST", "/v1/tasks/jobs/triggers", `{"queue":"jobs/pq","hook":{}}`).want(t, 201, "").obj("trigger")
	for _, c := range []struct{ method, path, body, want string }{
		{"POST", "/v1/tasks/jobs/queues/pq/ack", `{"acks":[{"id":"x","leaseId":"y"},{"id":5,"leaseId":"y"}]}`, "acks[1].id: must be a string, not number"},
		{"POST", "/v1/tasks/jobs/queues/pq/ack", `{"acks":[{"id":"x","leaseId":"y"},[]]}`, "acks[1]: must be an object, not array"},
		{"POST", "/v1/tasks/jobs/triggers", `{"queue":"jobs/pq","hook":{"headers":["X-A",5]}}`, "hook.headers[1]: must be a string, not number"},
		{"POST", "/v1/tasks/jobs/triggers", `{"queue":"jobs/pq","task":{"queue":"jobs/q1","on":["succeeded",true]}}`, "task.on[1]: must be a string, not boolean"},
		{"PATCH", "/v1/tasks/jobs/triggers/" + hook["id"].(string), `{"hook":{"headers":[1]}}`, "hook.headers[0]: must be a string, not number"},
		// An add names the task, as it did: each is decoded alone.
		{"POST", "/v1/tasks/jobs/queues/q1/tasks", `[{"payload":1},{"payload":[1],"target":{"webhook":5}}]`, "tasks[1].target.webhook: must be a string, not number"},
		{"POST", "/v1/tasks/jobs/queues/q1/tasks", `{"tasks":[{"payload":1},{"delay":"soon"}]}`, "tasks[1].delay: must be a number, not string"},
	} {
		r := b.do(c.method, c.path, c.body).want(t, 400, "INVALID_ARGUMENT")
		if r.message() != c.want {
			t.Errorf("%s %s %s: %q, want %q", c.method, c.path, c.body, r.message(), c.want)
		}
	}
}
