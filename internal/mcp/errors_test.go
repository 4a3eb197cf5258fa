package mcp_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/errandhq/errand/errandapi"
)

// TestErrorsCarryCodes: refusals of the API come back as tool errors with
// its code, status and message, and a next step; arguments that do not fit
// a tool's schema are INVALID_ARGUMENT before any call.
func TestErrorsCarryCodes(t *testing.T) {
	n := startNode(t, false)
	s := n.session(n.key("full:jobs"))
	s.ok("create_instance", obj{"name": "jobs"}, nil)
	s.ok("tasks_set_queue", obj{"instance": "jobs", "queue": "work", "mode": "pull"}, nil)
	var added errandapi.AddResponse
	s.ok("tasks_add", obj{"instance": "jobs", "queue": "work", "tasks": []any{obj{"name": "a"}}}, &added)
	id := added.Tasks[0].ID

	cases := []struct {
		tool   string
		args   obj
		code   string
		status float64
		msg    string
	}{
		{"tasks_get", obj{"instance": "jobs", "id": "0nosuchtask"}, "NOT_FOUND", 404, ""},
		{"tasks_list_queues", obj{"instance": "elsewhere"}, "NOT_FOUND", 404, ""},
		{"tasks_add", obj{"instance": "jobs", "queue": "work", "tasks": []any{obj{"name": "a"}}}, "TASK_EXISTS", 409, ""},
		{"tasks_add", obj{"instance": "jobs", "queue": "default", "tasks": []any{obj{"payload": 1}}}, "NO_TARGET", 400, ""},
		{"tasks_add", obj{"instance": "jobs", "queue": "work", "tasks": []any{obj{"name": "bad name!"}}}, "INVALID_ARGUMENT", 400, "name: "},
		{"tasks_lease", obj{"instance": "jobs", "queue": "default"}, "WRONG_MODE", 400, ""},
		{"tasks_ack", obj{"instance": "jobs", "id": id, "leaseId": "nolease"}, "LEASE_LOST", 409, ""},
		{"tasks_retry", obj{"instance": "jobs", "id": id}, "NOT_RETRYABLE", 400, ""},
		// A schema's refusal names the argument first, as the API does.
		{"tasks_set_queue", obj{"instance": "jobs", "queue": "work", "maxAttempts": 0}, "INVALID_ARGUMENT", 400, "maxAttempts: must be at least 1"},
		{"tasks_list", obj{"instance": "jobs", "queue": "work", "limit": 500}, "INVALID_ARGUMENT", 400, "limit: must be at most 200"},
		{"tasks_list", obj{"instance": "jobs", "queue": "work", "state": "done"}, "INVALID_ARGUMENT", 400, "state: must be one of"},
		{"tasks_get", obj{"instance": "jobs", "id": id, "owner": "other"}, "INVALID_ARGUMENT", 400, "owner: is not an argument of this tool"},
		{"tasks_get", obj{"instance": "jobs"}, "INVALID_ARGUMENT", 400, "id: is required"},
		{"tasks_get", obj{"instance": "jobs", "id": 7}, "INVALID_ARGUMENT", 400, "id: must be of type string"},
		{"tasks_get", obj{"instance": "jobs", "id": id, "b": 1, "a": 2}, "INVALID_ARGUMENT", 400, "a: is not an argument of this tool (nor are b)"},
		{"tasks_set_queue", obj{"instance": "jobs", "queue": "work", "maxAttempts": "x"}, "INVALID_ARGUMENT", 400, "maxAttempts: must be of type integer"},
		{"tasks_add", obj{"instance": "jobs", "queue": "work", "tasks": []any{}}, "INVALID_ARGUMENT", 400, "tasks: must hold at least 1 item"},
		{"tasks_add", obj{"instance": "jobs", "queue": "work", "tasks": []any{obj{}, obj{"priority": 10}}}, "INVALID_ARGUMENT", 400, "tasks[1].priority: must be at most 9"},
		{"tasks_set_queue", obj{"instance": "jobs", "queue": "bad name!"}, "INVALID_ARGUMENT", 400, "queue: "},
		{"tasks_add", obj{"instance": "jobs", "queue": "work", "tasks": hundredAndOne()}, "INVALID_ARGUMENT", 400, "tasks: must hold at most 100 items"},
		{"tasks_update_trigger", obj{"instance": "jobs", "id": "r", "task": obj{"on": []any{"succeeded", "done"}}}, "INVALID_ARGUMENT", 400, "task.on[1]: must be one of"},
		{"tasks_update_trigger", obj{"instance": "jobs", "id": "r", "priority": -1}, "INVALID_ARGUMENT", 400, "priority: must be at least 0"},
		{"tasks_set_priority", obj{"instance": "jobs", "id": id, "priority": 10}, "INVALID_ARGUMENT", 400, "priority: must be at most 9"},
		{"tasks_set_priority", obj{"instance": "jobs", "id": id}, "INVALID_ARGUMENT", 400, "priority: is required"},
		{"tasks_reschedule", obj{"instance": "jobs", "id": id}, "INVALID_ARGUMENT", 400, "delay: send delay or runAt"},
		{"tasks_reschedule", obj{"instance": "jobs", "id": id, "delay": -1}, "INVALID_ARGUMENT", 400, "delay: must be at least 0"},
		{"tasks_reschedule", obj{"instance": "jobs", "id": id, "delay": 1, "runAt": 1}, "INVALID_ARGUMENT", 400, "delay: send delay or runAt, not both"},
		// A tool that changes settings refuses a null that cannot clear
		// one, as the API's PATCH does (a null that can clear, taken).
		{"tasks_set_queue", obj{"instance": "jobs", "queue": "work", "maxAttempts": nil}, "INVALID_ARGUMENT", 400, "maxAttempts: cannot be null: leave it out to keep the current value"},
		{"tasks_set_queue", obj{"instance": "jobs", "queue": "work", "paused": nil}, "INVALID_ARGUMENT", 400, "paused: cannot be null: leave it out to keep the current value"},
		{"patch_instance_config", obj{"instance": "jobs", "retentionDays": nil}, "INVALID_ARGUMENT", 400, "retentionDays: cannot be null: leave it out to keep the current value"},
		{"tasks_update_trigger", obj{"instance": "jobs", "id": "r", "enabled": nil}, "INVALID_ARGUMENT", 400, "enabled: cannot be null: leave it out to keep the current value"},
		{"tasks_update_trigger", obj{"instance": "jobs", "id": "r", "schedule": obj{"cron": nil}}, "INVALID_ARGUMENT", 400, "schedule.cron: cannot be null: leave it out to keep the current value"},
		// A value that reads like the validator's own words is not taken
		// for them.
		{"tasks_list", obj{"instance": "jobs", "queue": "work", "state": "validating x: y"}, "INVALID_ARGUMENT", 400, "state: must be one of"},
		// An empty name is refused, not sent as none (which would add the
		// task again on a second call), nor made a path with a hole in it.
		{"tasks_add", obj{"instance": "jobs", "queue": "work", "tasks": []any{obj{"name": ""}}}, "INVALID_ARGUMENT", 400, "tasks[0].name: must not be empty"},
		// The item refused is named by its index, as the API names it.
		{"tasks_add", obj{"instance": "jobs", "queue": "work", "tasks": []any{obj{"name": "a"}, obj{}, obj{"name": "c", "delay": "soon"}}}, "INVALID_ARGUMENT", 400, "tasks[2].delay: must be of type"},
		{"tasks_add", obj{"instance": "jobs", "queue": "work", "tasks": []any{obj{}, obj{"nmae": "b"}}}, "INVALID_ARGUMENT", 400, "tasks[1].nmae: is not an argument of this tool"},
		// With another argument refused as well, the item is still the
		// one refused (item 0 alone is refused for the other argument).
		{"tasks_add", obj{"instance": "jobs", "queue": "work", "zz": 1, "tasks": []any{obj{}, obj{"delay": "soon"}}}, "INVALID_ARGUMENT", 400, "tasks[1].delay: must be of type"},
		{"tasks_add", obj{"instance": "jobs", "queue": 5, "tasks": []any{obj{}, obj{"delay": "soon"}}}, "INVALID_ARGUMENT", 400, ": must be of type"},
		// Numbers the schema passes but the field cannot hold.
		{"tasks_set_queue", obj{"instance": "jobs", "queue": "work", "maxAgeSeconds": 1e30}, "INVALID_ARGUMENT", 400, "maxAgeSeconds: number 1e+30 is out of range"},
		{"tasks_add", obj{"instance": "jobs", "queue": "work", "tasks": []any{obj{"payload": 1}, obj{"runAt": 1e20}}}, "INVALID_ARGUMENT", 400, "tasks[1].runAt: number 100000000000000000000 is out of range"},
		{"tasks_list_queues", obj{"instance": ""}, "INVALID_ARGUMENT", 400, "instance: must not be empty"},
		{"tasks_get", obj{"instance": "jobs", "id": ""}, "INVALID_ARGUMENT", 400, "id: must not be empty"},
		{"create_instance", obj{"name": "other"}, "PERMISSION_DENIED", 403, "full"},
	}
	for _, c := range cases {
		data := s.refused(c.tool, c.args, c.code)
		if data["status"] != c.status || !strings.Contains(data["message"].(string), c.msg) {
			t.Errorf("%s(%v): %v, want status %v and a message with %q", c.tool, c.args, data, c.status, c.msg)
		}
		if c.code == "TASK_EXISTS" && data["id"] != id {
			t.Errorf("TASK_EXISTS names id %v, want %s", data["id"], id)
		}
	}

	// A huge id is quoted once, to its first 128 bytes and its length:
	// the refusal's text stays short.
	long := strings.Repeat("x", 100_000)
	res := s.call("tasks_get", obj{"instance": "jobs", "id": long})
	want := `NOT_FOUND: task "` + strings.Repeat("x", 128) + `"… (100000 bytes) not found in instance "jobs"`
	if txt := text(res); !res.IsError || !strings.HasPrefix(txt, want) || len(txt) > 1000 {
		t.Fatalf("tasks_get with a 100 KB id: %d bytes: %.300q", len(txt), txt)
	}

	// RATE_LIMITED comes back at once with the wait (the fake clock
	// never refills the bucket).
	s.ok("patch_instance_config", obj{"instance": "jobs", "rateLimit": 1}, nil)
	s.ok("tasks_list_queues", obj{"instance": "jobs"}, nil)
	res = s.call("tasks_list_queues", obj{"instance": "jobs"})
	if !res.IsError || !strings.HasPrefix(text(res), "RATE_LIMITED: ") || !strings.Contains(text(res), "wait 1 s") {
		t.Fatalf("past the rate limit: %q", text(res))
	}
	s.ok("patch_instance_config", obj{"instance": "jobs", "rateLimit": nil}, nil)

	// A key that lists the write tools because of another instance is
	// still checked by the API on each call.
	w := n.session(n.key("read:jobs", "write:other"))
	w.refused("tasks_add", obj{"instance": "jobs", "queue": "work", "tasks": []any{obj{}}}, "PERMISSION_DENIED")
	w.refused("tasks_cancel", obj{"instance": "jobs", "id": id}, "PERMISSION_DENIED")
}

// TestConfirmRequired: purge and delete without confirm: true answer
// CONFIRM_REQUIRED and change nothing.
func TestConfirmRequired(t *testing.T) {
	n := startNode(t, true)
	s := n.session("")
	s.ok("tasks_set_queue", obj{"instance": "jobs", "queue": "work", "mode": "pull"}, nil)
	s.ok("tasks_add", obj{"instance": "jobs", "queue": "work", "tasks": []any{obj{}, obj{}}}, nil)
	for _, tool := range []string{"tasks_purge_queue", "tasks_delete_queue"} {
		for _, args := range []obj{{"instance": "jobs", "queue": "work"}, {"instance": "jobs", "queue": "work", "confirm": false}} {
			data := s.refused(tool, args, "CONFIRM_REQUIRED")
			if !strings.Contains(data["message"].(string), "confirm must be true") {
				t.Errorf("%s: %v", tool, data)
			}
		}
		// What the refusal names is quoted, bounded: a 100,000-byte
		// queue name is not echoed back whole.
		long := strings.Repeat("q", 100_000)
		data := s.refused(tool, obj{"instance": "jobs", "queue": long}, "CONFIRM_REQUIRED")
		if msg := data["message"].(string); len(msg) > 400 || !strings.Contains(msg, `of instance "jobs"`) || !strings.Contains(msg, "(100000 bytes)") {
			t.Errorf("%s of a 100,000-byte queue name: %.400q", tool, msg)
		}
	}
	var page errandapi.TaskPage
	s.ok("tasks_list", obj{"instance": "jobs", "queue": "work"}, &page)
	if len(page.Tasks) != 2 {
		t.Fatalf("a refused purge or delete removed tasks: %+v", page)
	}
}

// TestSessionBoundToKey: a session's later request with another key is
// refused, and a request without a key never reaches the session.
func TestSessionBoundToKey(t *testing.T) {
	n := startNode(t, false)
	s := n.session(n.key("full:*"))
	other := n.key("full:*")
	body := `{"jsonrpc":"2.0","id":99,"method":"tools/list"}`
	for key, want := range map[string]int{other: http.StatusForbidden, "": http.StatusUnauthorized, "errk_unknown": http.StatusUnauthorized} {
		req, _ := http.NewRequest("POST", n.srv.URL+"/mcp", bytes.NewBufferString(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", s.cs.ID())
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := n.hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("key %q on another key's session: %d, want %d", key, resp.StatusCode, want)
		}
		if got := resp.Header.Get("WWW-Authenticate"); (want == http.StatusUnauthorized) != (got == errandapi.BearerChallenge) {
			t.Errorf("key %q: %d with WWW-Authenticate %q", key, resp.StatusCode, got)
		}
	}
	if got := s.tools(); len(got) != 28 {
		t.Fatalf("the session's own key: %v", got)
	}
}

// hundredAndOne is 101 empty tasks, one more than an add takes.
func hundredAndOne() []any {
	out := make([]any, 101)
	for i := range out {
		out[i] = obj{}
	}
	return out
}
