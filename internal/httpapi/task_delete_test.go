package httpapi_test

import "testing"

// TestDeleteTask: DELETE of a task answers it as it was and removes it (a
// second DELETE and a GET are 404; its name takes a new add); a leased task
// is refused 400 RUNNING_NOT_CANCELLABLE and stays leased; a write key is
// refused 403 (the delete needs full); a body with a field is refused.
func TestDeleteTask(t *testing.T) {
	s := setupServe(t)
	admin := s.as(s.key("acme", "full:*"))
	admin.do("POST", "/v1/instances", `{"name":"jobs"}`).want(t, 201, "")
	admin.do("POST", "/v1/tasks/jobs/queues", `{"name":"work","mode":"pull"}`).want(t, 201, "")
	add := func(body string) string {
		r := admin.do("POST", "/v1/tasks/jobs/queues/work/tasks", body).want(t, 201, "")
		return r.body["tasks"].([]any)[0].(map[string]any)["id"].(string)
	}
	id := add(`{"payload":1,"name":"once","delay":60}`)
	s.as(s.key("acme", "write:jobs")).do("DELETE", "/v1/tasks/jobs/tasks/"+id, nil).want(t, 403, "PERMISSION_DENIED")
	admin.do("DELETE", "/v1/tasks/jobs/tasks/"+id, `{"confirm":true}`).want(t, 400, "INVALID_ARGUMENT").names(t, "confirm")
	r := admin.do("DELETE", "/v1/tasks/jobs/tasks/"+id, nil).want(t, 200, "")
	if tk := r.obj("task"); tk["id"] != id || tk["state"] != "scheduled" || tk["name"] != "once" {
		t.Fatalf("deleted: %s", r.raw)
	}
	admin.do("GET", "/v1/tasks/jobs/tasks/"+id, nil).want(t, 404, "NOT_FOUND")
	admin.do("DELETE", "/v1/tasks/jobs/tasks/"+id, nil).want(t, 404, "NOT_FOUND")
	leased := add(`{"payload":2,"name":"once"}`)
	admin.do("POST", "/v1/tasks/jobs/queues/work/lease", `{}`).want(t, 200, "")
	admin.do("DELETE", "/v1/tasks/jobs/tasks/"+leased, nil).want(t, 400, "RUNNING_NOT_CANCELLABLE")
	if tk := admin.do("GET", "/v1/tasks/jobs/tasks/"+leased, nil).want(t, 200, "").obj("task"); tk["state"] != "leased" {
		t.Fatalf("the leased task after the refusal: %v", tk)
	}
}
