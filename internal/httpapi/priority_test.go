package httpapi_test

import (
	"slices"
	"strings"
	"testing"
)

// TestPriority: a pull queue's lease takes its due tasks from the highest
// priority down, each priority in runAt order, the default (0) last; a
// task answers its priority (0 when none was given), in GET and in a list.
func TestPriority(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.do("POST", "/v1/tasks/jobs/queues", `{"name":"work","mode":"pull"}`).want(t, 201, "")
	b.do("POST", "/v1/tasks/jobs/queues/work/tasks", `[{"name":"plain-1"},{"name":"plain-2"},
		{"name":"urgent","priority":9},{"name":"soon","priority":3},{"name":"later","priority":9,"delay":60}]`).want(t, 201, "")
	var order []string
	for range 4 {
		l := b.do("POST", "/v1/tasks/jobs/queues/work/lease", `{"count":1}`).want(t, 200, "").list("tasks")
		if len(l) != 1 {
			t.Fatalf("leased %d tasks, want 1", len(l))
		}
		tk := l[0].(map[string]any)
		order = append(order, tk["name"].(string))
		if want := map[string]float64{"urgent": 9, "soon": 3}[tk["name"].(string)]; tk["priority"] != want {
			t.Errorf("lease: %s has priority %v, want %v", tk["name"], tk["priority"], want)
		}
	}
	if want := []string{"urgent", "soon", "plain-1", "plain-2"}; !slices.Equal(order, want) {
		t.Fatalf("leased %v, want %v (the task due in 60 s waits)", order, want)
	}
	for _, l := range b.do("GET", "/v1/tasks/jobs/queues/work/tasks", nil).want(t, 200, "").list("tasks") {
		tk := l.(map[string]any)
		want := map[string]float64{"urgent": 9, "soon": 3, "later": 9}[tk["name"].(string)]
		if tk["priority"] != want {
			t.Errorf("list: %s has priority %v, want %v", tk["name"], tk["priority"], want)
		}
	}
	id := b.do("GET", "/v1/tasks/jobs/queues/work/tasks?name=later", nil).want(t, 200, "").list("tasks")[0].(map[string]any)["id"].(string)
	if p := b.do("GET", "/v1/tasks/jobs/tasks/"+id, nil).want(t, 200, "").obj("task")["priority"]; p != 9.0 {
		t.Fatalf("GET: priority %v, want 9", p)
	}
}

// TestRulePriority: a rule's priority is the priority of the tasks it adds
// (a hook call's task here), answered with the rule and changed by PATCH.
func TestRulePriority(t *testing.T) {
	s := setupServe(t)
	a := s.as(s.key("acme", "full:*"))
	a.do("POST", "/v1/instances", `{"name":"jobs"}`).want(t, 201, "")
	a.do("POST", "/v1/tasks/jobs/queues", `{"name":"out","mode":"pull"}`).want(t, 201, "")
	tr := a.do("POST", "/v1/tasks/jobs/triggers", `{"queue":"jobs/out","hook":{},"priority":6}`).want(t, 201, "").obj("trigger")
	if tr["priority"] != 6.0 {
		t.Fatalf("created rule: priority %v", tr["priority"])
	}
	path := tr["hook"].(map[string]any)["path"].(string)
	id := s.hookCall(path, []byte(`{}`), nil).want(t, 202, "").body["id"].(string)
	if p := a.do("GET", "/v1/tasks/jobs/tasks/"+id, nil).want(t, 200, "").obj("task")["priority"]; p != 6.0 {
		t.Fatalf("the hook's task: priority %v, want 6", p)
	}
	up := a.do("PATCH", "/v1/tasks/jobs/triggers/"+tr["id"].(string), `{"priority":0}`).want(t, 200, "").obj("trigger")
	if up["priority"] != 0.0 {
		t.Fatalf("patched rule: priority %v", up["priority"])
	}
	id = s.hookCall(path, []byte(`{}`), nil).want(t, 202, "").body["id"].(string)
	if p := a.do("GET", "/v1/tasks/jobs/tasks/"+id, nil).want(t, 200, "").obj("task")["priority"]; p != 0.0 {
		t.Fatalf("after the PATCH: priority %v, want 0", p)
	}
}

// TestPatchTaskPriority: PATCH changes a waiting task's priority and the
// next lease follows it; a leased task takes one for its next wait and
// keeps its lease; a body without a field answers the task as it is; a
// priority out of range, not whole or of another type, and another field,
// are refused naming the field, changing nothing; a missing task is
// NOT_FOUND.
func TestPatchTaskPriority(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.do("POST", "/v1/tasks/jobs/queues", `{"name":"work","mode":"pull"}`).want(t, 201, "")
	b.do("POST", "/v1/tasks/jobs/queues/work/tasks", `[{"name":"first"},{"name":"second"},{"name":"third"}]`).want(t, 201, "")
	ids := map[string]string{}
	for _, l := range b.do("GET", "/v1/tasks/jobs/queues/work/tasks", nil).want(t, 200, "").list("tasks") {
		tk := l.(map[string]any)
		ids[tk["name"].(string)] = tk["id"].(string)
	}
	path := "/v1/tasks/jobs/tasks/" + ids["third"]
	got := b.do("PATCH", path, `{"priority":4}`).want(t, 200, "").obj("task")
	if got["priority"] != 4.0 || got["state"] != "scheduled" || got["id"] != ids["third"] {
		t.Fatalf("PATCH answered %v", got)
	}
	for _, bad := range []struct{ body, field string }{
		{`{"priority":10}`, "priority"}, {`{"priority":-1}`, "priority"}, {`{"priority":1.5}`, "priority"},
		{`{"priority":"high"}`, "priority"}, {`{"priority":null}`, "priority"}, {`{"name":"x"}`, "name"},
	} {
		r := b.do("PATCH", path, bad.body).want(t, 400, "INVALID_ARGUMENT")
		if msg := r.obj("error")["message"].(string); !strings.HasPrefix(msg, bad.field) {
			t.Errorf("PATCH %s: %q does not name %s", bad.body, msg, bad.field)
		}
	}
	if p := b.do("PATCH", path, ``).want(t, 200, "").obj("task")["priority"]; p != 4.0 {
		t.Fatalf("an empty PATCH answered priority %v; refused ones must not have changed it from 4", p)
	}
	l := b.do("POST", "/v1/tasks/jobs/queues/work/lease", `{"count":1}`).want(t, 200, "").list("tasks")[0].(map[string]any)
	if l["name"] != "third" {
		t.Fatalf("leased %v first, want the raised task", l["name"])
	}
	// The leased task keeps its lease; the priority is for its next wait.
	b.do("PATCH", path, `{"priority":0}`).want(t, 200, "")
	ack := `{"leaseId":"` + l["leaseId"].(string) + `"}`
	b.do("POST", path+"/ack", ack).want(t, 200, "")
	if p := b.do("GET", path, nil).want(t, 200, "").obj("task")["priority"]; p != 0.0 {
		t.Fatalf("after the ack: priority %v, want 0", p)
	}
	b.do("PATCH", "/v1/tasks/jobs/tasks/no-such-task", `{"priority":1}`).want(t, 404, "NOT_FOUND")
}
