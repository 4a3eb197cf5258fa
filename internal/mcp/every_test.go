package mcp_test

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/errandhq/errand/errandapi"
	errandmcp "github.com/errandhq/errand/internal/mcp"
)

type obj = map[string]any

// TestEveryTool calls every tool over HTTP with a full key against a real
// node and checks each answer, then fails if a tool was never called.
func TestEveryTool(t *testing.T) {
	n := startNode(t, false)
	s := n.session(n.key("full:*"))

	var inst errandapi.InstanceResponse
	if sum := s.ok("create_instance", obj{"name": "jobs"}, &inst); inst.Instance.Name != "jobs" || !strings.Contains(sum, "created instance jobs") {
		t.Fatalf("create_instance: %+v %q", inst, sum)
	}

	// tasks_set_queue creates, then changes only what it is given.
	var sq struct {
		Queue   errandapi.Queue `json:"queue"`
		Created bool            `json:"created"`
	}
	s.ok("tasks_set_queue", obj{"instance": "jobs", "queue": "hooks", "target": obj{"webhook": "https://example.com/h"}, "maxAttempts": 3}, &sq)
	if !sq.Created || sq.Queue.Mode != "push" || sq.Queue.Target.Webhook != "https://example.com/h" || sq.Queue.MaxAttempts != 3 {
		t.Fatalf("created %+v", sq)
	}
	sum := s.ok("tasks_set_queue", obj{"instance": "jobs", "queue": "hooks", "ratePerSecond": 5, "paused": true}, &sq)
	if sq.Created || *sq.Queue.RatePerSecond != 5 || !sq.Queue.Paused || sq.Queue.MaxAttempts != 3 || !strings.HasPrefix(sum, "changed queue jobs/hooks") {
		t.Fatalf("changed %+v %q", sq, sum)
	}
	s.ok("tasks_set_queue", obj{"instance": "jobs", "queue": "hooks", "ratePerSecond": nil}, &sq)
	if sq.Queue.RatePerSecond != nil {
		t.Fatalf("null did not clear ratePerSecond: %+v", sq.Queue)
	}
	s.ok("tasks_set_queue", obj{"instance": "jobs", "queue": "work", "mode": "pull", "maxAttempts": 1}, &sq)

	var ql errandapi.QueueList
	sum = s.ok("tasks_list_queues", obj{"instance": "jobs"}, &ql)
	if len(ql.Queues) != 3 || ql.Queues[1].Name != "hooks" || !strings.Contains(sum, "3 queues in jobs") {
		t.Fatalf("queues %+v %q", ql, sum)
	}

	// tasks_add: tasks get source mcp; a taken name is refused alone; a
	// priority makes a task leased before the others due.
	var added errandapi.AddResponse
	sum = s.ok("tasks_add", obj{"instance": "jobs", "queue": "work", "tasks": []any{
		obj{"payload": obj{"n": 1}, "name": "one"}, obj{"payload": 2, "delay": 60, "priority": 4}, obj{"name": "one"},
	}}, &added)
	if len(added.Tasks) != 3 || !added.Tasks[0].OK || !added.Tasks[1].OK || added.Tasks[2].OK ||
		added.Tasks[2].Code != "TASK_EXISTS" || added.Tasks[2].ID != added.Tasks[0].ID {
		t.Fatalf("added %+v", added)
	}
	if !strings.Contains(sum, "added 2 of 3") || !strings.Contains(sum, "TASK_EXISTS") {
		t.Fatalf("add summary %q", sum)
	}
	first, delayed := added.Tasks[0].ID, added.Tasks[1].ID
	if added.Tasks[1].RunAt != t0.UnixMilli()+60_000 {
		t.Fatalf("delay: runAt %d", added.Tasks[1].RunAt)
	}

	var got errandapi.TaskResponse
	s.ok("tasks_get", obj{"instance": "jobs", "id": first}, &got)
	if got.Task.Source != "mcp" || string(got.Task.Payload) != `{"n":1}` || got.Task.State != "scheduled" {
		t.Fatalf("task %+v", got.Task)
	}

	var page errandapi.TaskPage
	sum = s.ok("tasks_list", obj{"instance": "jobs", "queue": "work", "limit": 1}, &page)
	if len(page.Tasks) != 1 || page.Cursor == nil || !strings.Contains(sum, "cursor") {
		t.Fatalf("page %+v %q", page, sum)
	}
	s.ok("tasks_list", obj{"instance": "jobs", "queue": "work", "cursor": *page.Cursor}, &page)
	if len(page.Tasks) != 1 || page.Cursor != nil {
		t.Fatalf("second page %+v", page)
	}

	s.ok("tasks_run", obj{"instance": "jobs", "id": delayed}, &got)
	if got.Task.RunAt != t0.UnixMilli() {
		t.Fatalf("run now: %+v", got.Task)
	}
	sum = s.ok("tasks_set_priority", obj{"instance": "jobs", "id": delayed, "priority": 6}, &got)
	if got.Task.Priority != 6 || !strings.HasPrefix(sum, "priority changed: ") {
		t.Fatalf("set priority: %+v %q", got.Task, sum)
	}
	sum = s.ok("tasks_reschedule", obj{"instance": "jobs", "id": delayed, "delay": 30}, &got)
	if got.Task.RunAt != t0.UnixMilli()+30_000 || !strings.HasPrefix(sum, "rescheduled: ") {
		t.Fatalf("rescheduled: %+v %q", got.Task, sum)
	}
	s.ok("tasks_reschedule", obj{"instance": "jobs", "id": delayed, "runAt": 0}, &got)
	if got.Task.RunAt != t0.UnixMilli() {
		t.Fatalf("rescheduled to now: %+v", got.Task)
	}

	// The pull tools: lease both, extend one, ack it, release the other
	// with an error (maxAttempts 1: it fails), retry it, cancel it.
	var leased errandapi.LeaseResponse
	sum = s.ok("tasks_lease", obj{"instance": "jobs", "queue": "work", "count": 5, "leaseSeconds": 30}, &leased)
	if len(leased.Tasks) != 2 || !strings.Contains(sum, "leased 2 tasks") || leased.Tasks[0].ID != delayed {
		t.Fatalf("leased %+v %q; want the prioritized %s first", leased, sum, delayed)
	}
	a, b := leased.Tasks[0], leased.Tasks[1]
	s.ok("tasks_extend", obj{"instance": "jobs", "id": a.ID, "leaseId": a.LeaseID, "leaseSeconds": 600}, &got)
	if *got.Task.LeaseExpiresAt != t0.UnixMilli()+600_000 {
		t.Fatalf("extended %+v", got.Task)
	}
	s.ok("tasks_ack", obj{"instance": "jobs", "id": a.ID, "leaseId": a.LeaseID, "result": obj{"ok": true}}, &got)
	if got.Task.State != "succeeded" || string(got.Task.Result) != `{"ok":true}` {
		t.Fatalf("acked %+v", got.Task)
	}
	s.ok("tasks_release", obj{"instance": "jobs", "id": b.ID, "leaseId": b.LeaseID, "error": "boom"}, &got)
	if got.Task.State != "failed" || *got.Task.LastError != "boom" {
		t.Fatalf("released %+v", got.Task)
	}
	s.ok("tasks_retry", obj{"instance": "jobs", "id": b.ID}, &got)
	if got.Task.State != "scheduled" {
		t.Fatalf("retried %+v", got.Task)
	}
	sum = s.ok("tasks_cancel", obj{"instance": "jobs", "id": b.ID}, &got)
	if got.Task.State != "cancelled" || !strings.HasPrefix(sum, "cancelled: task "+b.ID) {
		t.Fatalf("cancelled %+v %q", got.Task, sum)
	}
	sum = s.ok("tasks_delete", obj{"instance": "jobs", "id": b.ID}, &got)
	if got.Task.State != "cancelled" || !strings.HasPrefix(sum, "deleted: task "+b.ID) {
		t.Fatalf("deleted %+v %q", got.Task, sum)
	}
	s.refused("tasks_get", obj{"instance": "jobs", "id": b.ID}, "NOT_FOUND")

	// Settings: none given reads them; then a change.
	var st errandapi.SettingsResponse
	s.ok("patch_instance_config", obj{"instance": "jobs"}, &st)
	if st.Settings.RetentionDays != 7 || st.Settings.RateLimit != nil || st.Settings.MaxInFlight != 50 {
		t.Fatalf("settings %+v", st)
	}
	s.ok("patch_instance_config", obj{"instance": "jobs", "retentionDays": 3, "rateLimit": 100}, &st)
	if st.Settings.RetentionDays != 3 || *st.Settings.RateLimit != 100 || st.Settings.MaxInFlight != 50 {
		t.Fatalf("patched settings %+v", st)
	}

	var k1, k2 errandapi.WebhookKeyResponse
	s.ok("tasks_reveal_webhook_secret", obj{"instance": "jobs"}, &k1)
	s.ok("tasks_rotate_webhook_secret", obj{"instance": "jobs"}, &k2)
	if !strings.HasPrefix(k1.WebhookKey, "whsec_") || !strings.HasPrefix(k2.WebhookKey, "whsec_") || k1 == k2 {
		t.Fatalf("webhook keys %q %q", k1.WebhookKey, k2.WebhookKey)
	}
	s.ok("tasks_reveal_webhook_secret", obj{"instance": "jobs"}, &k1)
	if k1 != k2 {
		t.Fatalf("reveal after rotate %q, want %q", k1.WebhookKey, k2.WebhookKey)
	}

	// Trigger rules: create one of each kind, read, change, delete.
	var tr errandapi.TriggerResponse
	sum = s.ok("tasks_create_trigger", obj{"instance": "jobs", "queue": "hooks", "params": obj{"team": "ops"},
		"schedule": obj{"cron": "*/5 * * * *", "timeZone": "Europe/Paris"}}, &tr)
	sched := *tr.Trigger
	if sched.Kind != "schedule" || sched.Queue != "jobs/hooks" || sched.Schedule.TimeZone != "Europe/Paris" || string(sched.Params) != `{"team":"ops"}` ||
		!strings.HasPrefix(sum, "created schedule rule "+sched.ID+" → jobs/hooks") {
		t.Fatalf("schedule rule %+v %q", sched, sum)
	}
	s.ok("tasks_create_trigger", obj{"instance": "jobs", "queue": "jobs/work", "hook": obj{"headers": []any{"X-Event"}}}, &tr)
	if tr.Trigger.Kind != "hook" || !strings.HasPrefix(tr.Trigger.Hook.Path, "/v1/hooks/jobs/") || tr.Trigger.Hook.HasSecret {
		t.Fatalf("hook rule %+v", tr.Trigger)
	}
	s.ok("tasks_create_trigger", obj{"instance": "jobs", "queue": "hooks", "task": obj{"queue": "work", "on": []any{"failed"}}}, &tr)
	if tr.Trigger.Kind != "task" || tr.Trigger.Task.Queue != "jobs/work" || tr.Trigger.Task.On[0] != "failed" {
		t.Fatalf("task rule %+v", tr.Trigger)
	}
	var tl errandapi.TriggerList
	sum = s.ok("tasks_list_triggers", obj{"instance": "jobs"}, &tl)
	if len(tl.Triggers) != 3 || tl.Triggers[0].ID != sched.ID || !strings.HasPrefix(sum, "3 trigger rules in jobs: schedule rule") {
		t.Fatalf("rules %+v %q", tl, sum)
	}
	sum = s.ok("tasks_update_trigger", obj{"instance": "jobs", "id": sched.ID, "enabled": false, "params": nil, "priority": 2}, &tr)
	if tr.Trigger.Enabled || tr.Trigger.Schedule.Cron != "*/5 * * * *" || string(tr.Trigger.Params) != "null" || !strings.Contains(sum, ", disabled") ||
		tr.Trigger.Priority != 2 {
		t.Fatalf("changed rule %+v %q", tr.Trigger, sum)
	}
	s.ok("tasks_get_trigger", obj{"instance": "jobs", "id": sched.ID}, &tr)
	if tr.Trigger.Enabled || tr.Trigger.Schedule.NextTickAt != nil {
		t.Fatalf("got rule %+v", tr.Trigger)
	}
	var trDel errandapi.TriggerDeleteResponse
	s.ok("tasks_delete_trigger", obj{"instance": "jobs", "id": sched.ID, "confirm": true}, &trDel)
	if !trDel.Deleted {
		t.Fatalf("deleted %+v", trDel)
	}
	s.refused("tasks_get_trigger", obj{"instance": "jobs", "id": sched.ID}, "NOT_FOUND")

	var us errandapi.UsageResponse
	sum = s.ok("tasks_usage", obj{"instance": "jobs"}, &us)
	if us.Usage.Instance != "jobs" || us.Usage.TasksAdded == 0 || !strings.Contains(sum, "tasks added") {
		t.Fatalf("usage %+v %q", us.Usage, sum)
	}

	s.ok("tasks_set_queue", obj{"instance": "jobs", "queue": "fn", "target": obj{"function": "app/none"}}, &sq)
	var fl errandapi.FunctionList
	sum = s.ok("tasks_list_functions", obj{"instance": "jobs"}, &fl)
	if len(fl.Functions) != 1 || fl.Functions[0].Function != "app/none" || fl.Functions[0].Slots != 0 || !strings.Contains(sum, "no worker serves app/none") {
		t.Fatalf("functions %+v %q", fl, sum)
	}
	s.ok("tasks_delete_queue", obj{"instance": "jobs", "queue": "fn", "confirm": true}, &errandapi.DeleteResponse{})

	var del errandapi.DeleteResponse
	s.ok("tasks_purge_queue", obj{"instance": "jobs", "queue": "work", "confirm": true}, &del)
	if del.Deleted != 1 { // of the two left above, one was deleted by tasks_delete
		t.Fatalf("purged %+v", del)
	}
	s.ok("tasks_delete_queue", obj{"instance": "jobs", "queue": "work", "confirm": true}, &del)
	s.ok("tasks_list_queues", obj{"instance": "jobs"}, &ql)
	if len(ql.Queues) != 2 {
		t.Fatalf("after delete %+v", ql)
	}

	for _, name := range slices.Sorted(maps.Keys(errandmcp.ToolNames())) {
		if !s.called[name] {
			t.Errorf("tool %s was not called: add it to this test", name)
		}
	}
}
