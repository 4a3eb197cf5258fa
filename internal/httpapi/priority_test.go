package httpapi_test

import (
	"slices"
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
