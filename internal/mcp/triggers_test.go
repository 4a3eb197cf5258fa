package mcp_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/errandhq/errand/errandapi"
)

// TestTriggerTools: the trigger tools refuse bad rules with the API's
// code and the field named, and store nothing; a delete without confirm
// deletes nothing; a read key reads rules; a hook rule made through MCP
// turns a real HTTP call of its URL into a task.
func TestTriggerTools(t *testing.T) {
	n := startNode(t, false)
	s := n.session(n.key("full:jobs"))
	s.ok("create_instance", obj{"name": "jobs"}, nil)
	s.ok("tasks_set_queue", obj{"instance": "jobs", "queue": "work", "mode": "pull"}, nil)

	for _, c := range []struct {
		args      obj
		code, msg string
	}{
		{obj{"instance": "jobs", "queue": "work", "schedule": obj{"cron": "99 * * * *"}}, "INVALID_ARGUMENT", "schedule.cron"},
		{obj{"instance": "jobs", "queue": "work", "schedule": obj{"cron": "@hourly", "timeZone": "Mars/Olympus"}}, "INVALID_ARGUMENT", "schedule.timeZone"},
		{obj{"instance": "jobs", "queue": "nosuch", "hook": obj{}}, "NOT_FOUND", ""},
		{obj{"instance": "jobs", "queue": "default", "hook": obj{}}, "NO_TARGET", ""},
		{obj{"instance": "jobs", "queue": "other/work", "hook": obj{}}, "INVALID_ARGUMENT", "queue"},
		{obj{"instance": "jobs", "queue": "work"}, "INVALID_ARGUMENT", ""},
		{obj{"instance": "jobs", "queue": "work", "hook": obj{}, "task": obj{"queue": "work"}}, "INVALID_ARGUMENT", ""},
		{obj{"instance": "jobs", "queue": "work", "task": obj{"queue": "work", "on": []any{"done"}}}, "INVALID_ARGUMENT", "task.on[0]: must be one of [succeeded failed]"},
		// The API's rule, not a second one in the tool's schema.
		{obj{"instance": "jobs", "queue": "work", "task": obj{"queue": "work", "on": []any{"succeeded", "succeeded"}}}, "INVALID_ARGUMENT", "task.on[1]: succeeded is named twice"},
		{obj{"instance": "jobs", "queue": "work", "schedule": obj{"cron": ""}}, "INVALID_ARGUMENT", "schedule.cron: must not be empty"},
		{obj{"instance": "jobs", "queue": "work", "task": obj{"queue": ""}}, "INVALID_ARGUMENT", "task.queue: must not be empty"},
		{obj{"instance": "jobs", "queue": "work", "hook": obj{"secret": "not-a-secret"}}, "INVALID_ARGUMENT", "hook.secret"},
		{obj{"instance": "jobs", "queue": "work", "params": []any{1}, "hook": obj{}}, "INVALID_ARGUMENT", "params"},
	} {
		data := s.refused("tasks_create_trigger", c.args, c.code)
		if !strings.Contains(data["message"].(string), c.msg) {
			t.Errorf("create %v: %v, want a message naming %q", c.args, data, c.msg)
		}
	}
	var tl errandapi.TriggerList
	s.ok("tasks_list_triggers", obj{"instance": "jobs"}, &tl)
	if len(tl.Triggers) != 0 {
		t.Fatalf("a refused create stored a rule: %+v", tl)
	}

	var tr errandapi.TriggerResponse
	s.ok("tasks_create_trigger", obj{"instance": "jobs", "queue": "work", "payload": obj{"empty": true}, "hook": obj{"headers": []any{"X-Event"}}}, &tr)
	hook := *tr.Trigger
	s.refused("tasks_update_trigger", obj{"instance": "jobs", "id": hook.ID, "schedule": obj{"cron": "@hourly"}}, "INVALID_ARGUMENT")
	// Another kind's block is refused as such whatever it holds — a null
	// or a value the tool's schema refuses — as the API's PATCH answers
	// it; on a rule of that kind the value's own refusal stands.
	for _, args := range []obj{
		{"instance": "jobs", "id": hook.ID, "task": obj{"on": nil}},
		{"instance": "jobs", "id": hook.ID, "task": obj{"on": []any{"done"}}},
		{"instance": "jobs", "id": hook.ID, "schedule": obj{"cron": nil}},
	} {
		block := "task"
		if args["schedule"] != nil {
			block = "schedule"
		}
		if data := s.refused("tasks_update_trigger", args, "INVALID_ARGUMENT"); data["message"] != block+": a rule's kind cannot change; this rule is a hook rule" {
			t.Errorf("update %v of a hook rule: %v", args, data)
		}
	}
	// A hook's own signature scheme: refused without a secret; set with
	// one (shown with its defaults); null removes both.
	if data := s.refused("tasks_update_trigger", obj{"instance": "jobs", "id": hook.ID, "hook": obj{"signature": obj{"header": "X-Acme-Signature"}}}, "INVALID_ARGUMENT"); !strings.HasPrefix(data["message"].(string), "hook.signature: a hook's own signature needs its secret") {
		t.Errorf("signature without a secret: %v", data)
	}
	s.ok("tasks_update_trigger", obj{"instance": "jobs", "id": hook.ID, "hook": obj{"secret": "acme-shared-secret-123", "signature": obj{"header": "x-acme-signature", "prefix": "v1="}}}, &tr)
	if sig := tr.Trigger.Hook.Signature; sig == nil || *sig != (errandapi.HookSignature{Header: "X-Acme-Signature", Hash: "sha256", Encoding: "hex", Prefix: "v1="}) {
		t.Fatalf("signature set: %+v", tr.Trigger.Hook)
	}
	s.ok("tasks_update_trigger", obj{"instance": "jobs", "id": hook.ID, "hook": obj{"secret": nil, "signature": nil}}, &tr)
	if tr.Trigger.Hook.Signature != nil || tr.Trigger.Hook.HasSecret {
		t.Fatalf("signature and secret removed: %+v", tr.Trigger.Hook)
	}
	s.refused("tasks_update_trigger", obj{"instance": "jobs", "id": "nosuch", "enabled": false}, "NOT_FOUND")
	s.ok("tasks_create_trigger", obj{"instance": "jobs", "queue": "work", "task": obj{"queue": "work"}}, &tr)
	chain := *tr.Trigger
	if data := s.refused("tasks_update_trigger", obj{"instance": "jobs", "id": chain.ID, "task": obj{"on": []any{"failed", "failed"}}}, "INVALID_ARGUMENT"); data["message"] != "task.on[1]: failed is named twice" {
		t.Errorf("update with on [failed failed]: %v", data)
	}
	if data := s.refused("tasks_update_trigger", obj{"instance": "jobs", "id": chain.ID, "task": obj{"on": nil}}, "INVALID_ARGUMENT"); data["message"] != "task.on: cannot be null: leave it out to keep the current value" {
		t.Errorf("update of a task rule with on null: %v", data)
	}
	s.ok("tasks_delete_trigger", obj{"instance": "jobs", "id": chain.ID, "confirm": true}, nil)
	for _, args := range []obj{{"instance": "jobs", "id": hook.ID}, {"instance": "jobs", "id": hook.ID, "confirm": false}} {
		if data := s.refused("tasks_delete_trigger", args, "CONFIRM_REQUIRED"); !strings.Contains(data["message"].(string), "confirm must be true") {
			t.Errorf("delete %v: %v", args, data)
		}
	}
	if data := s.refused("tasks_delete_trigger", obj{"instance": "jobs", "id": strings.Repeat("i", 100_000)}, "CONFIRM_REQUIRED"); len(data["message"].(string)) > 400 {
		t.Errorf("delete of a 100,000-byte id echoed it: %.400q", data["message"])
	}

	// A read key reads the rule; the rule's URL adds a task, no key needed.
	r := n.session(n.key("read:jobs"))
	r.ok("tasks_get_trigger", obj{"instance": "jobs", "id": hook.ID}, &tr)
	if tr.Trigger.ID != hook.ID || tr.Trigger.Hook.Path != hook.Hook.Path {
		t.Fatalf("read key got %+v", tr.Trigger)
	}
	resp, err := n.hc.Post(n.srv.URL+hook.Hook.Path, "application/json", bytes.NewBufferString(`{"n":1}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 202 {
		t.Fatalf("hook call: %d", resp.StatusCode)
	}
	var page errandapi.TaskPage
	r.ok("tasks_list", obj{"instance": "jobs", "queue": "work"}, &page)
	if len(page.Tasks) != 1 || page.Tasks[0].Source != "hook" {
		t.Fatalf("after the hook call: %+v", page.Tasks)
	}
}
