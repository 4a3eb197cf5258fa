package embedded

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/errandhq/errand/errandapi"
)

// TestTriggers: trigger rules made in process act: a task rule adds a task
// to its queue when a task of the queue it watches succeeds, a hook rule's
// path on HTTPHandler adds one for each POST, and a schedule answers its
// next tick; rules are listed, disabled, deleted, and refused as the v1
// API refuses them.
func TestTriggers(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, kind string) {
		e, _ := open(t, kind)
		ctx := context.Background()
		for _, q := range []string{"orders", "receipts", "inbox"} {
			must(t, e.CreateQueue(ctx, "jobs", q, QueueOptions{Pull: true}))
		}
		onTask, err := e.CreateTrigger(ctx, "jobs", errandapi.TriggerRequest{Queue: new("jobs/receipts"),
			Task: &errandapi.TriggerTaskSpec{Queue: new("jobs/orders")}})
		if err != nil || onTask.Kind != errandapi.KindTask || onTask.Task.Queue != "jobs/orders" {
			t.Fatalf("task rule: %+v %v", onTask, err)
		}
		hook, err := e.CreateTrigger(ctx, "jobs", errandapi.TriggerRequest{Queue: new("jobs/inbox"), Hook: &errandapi.TriggerHookSpec{}})
		if err != nil || hook.Hook == nil || hook.Hook.Path == "" {
			t.Fatalf("hook rule: %+v %v", hook, err)
		}
		every := "@every 30s"
		sched, err := e.CreateTrigger(ctx, "jobs", errandapi.TriggerRequest{Queue: new("jobs/inbox"),
			Schedule: &errandapi.TriggerScheduleSpec{Cron: &every}, Payload: json.RawMessage(`{"tick":true}`)})
		if err != nil || sched.Schedule == nil || sched.Schedule.NextTickAt == nil || *sched.Schedule.NextTickAt != t0.Add(30*time.Second).UnixMilli() {
			t.Fatalf("schedule: %+v %v; want its next tick 30 s on", sched, err)
		}

		// The task rule: an order acked adds a receipt task whose payload
		// is the ended task with its result; a long-polling lease is woken
		// by the add (the fake clock never moves).
		add(t, e, "orders", NewTask{Payload: json.RawMessage(`{"order":42}`)})
		got, err := e.Lease(ctx, "jobs", "orders", 1, time.Minute, 0)
		if err != nil || len(got) != 1 {
			t.Fatalf("Lease orders: %v %v", got, err)
		}
		errs, err := e.AckMany(ctx, "jobs", "orders", []Ack{{ID: got[0].ID, LeaseID: got[0].LeaseID, Result: json.RawMessage(`{"paid":42}`)}})
		if err != nil || errs[0] != nil {
			t.Fatalf("ack: %v %v", errs, err)
		}
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		chained, err := e.Lease(wctx, "jobs", "receipts", 1, time.Minute, 30*time.Second)
		if err != nil || len(chained) != 1 {
			t.Fatalf("the task rule's task: %v %v", chained, err)
		}
		var ended struct {
			Task   struct{ ID, State string }
			Result struct{ Paid int }
		}
		if err := json.Unmarshal(chained[0].Payload, &ended); err != nil || ended.Task.ID != got[0].ID ||
			ended.Task.State != "succeeded" || ended.Result.Paid != 42 || chained[0].Depth != 1 || chained[0].Source != "task" {
			t.Fatalf("the task rule's task: %+v, payload %s (%v)", chained[0], chained[0].Payload, err)
		}

		// The hook rule: a POST to its path on HTTPHandler adds a task.
		srv := httptest.NewServer(e.HTTPHandler())
		defer srv.Close()
		resp, err := http.Post(srv.URL+hook.Hook.Path, "application/json", bytes.NewReader([]byte(`{"from":"a sender"}`)))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("hook call: %d, want 202", resp.StatusCode)
		}
		if q, err := e.Queue(ctx, "jobs", "inbox"); err != nil || q.Counts["scheduled"] != 1 {
			t.Fatalf("inbox after the hook call: %+v %v", q, err)
		}

		list, err := e.Triggers(ctx, "jobs")
		if err != nil || len(list) != 3 {
			t.Fatalf("Triggers: %d rules, %v; want 3", len(list), err)
		}
		if tr, err := e.Trigger(ctx, "jobs", onTask.ID); err != nil || tr.Fired != 1 {
			t.Fatalf("the task rule after firing: %+v %v; want fired 1", tr, err)
		}
		off := false
		if tr, err := e.UpdateTrigger(ctx, "jobs", sched.ID, errandapi.TriggerRequest{Enabled: &off}); err != nil || tr.Enabled {
			t.Fatalf("disabled: %+v %v", tr, err)
		}
		_, err = e.UpdateTrigger(ctx, "jobs", hook.ID, errandapi.TriggerRequest{Schedule: &errandapi.TriggerScheduleSpec{Cron: &every}})
		wantCode(t, err, "INVALID_ARGUMENT", "schedule", "UpdateTrigger(a schedule on a hook rule)")
		bad := "99 * * * *"
		_, err = e.CreateTrigger(ctx, "jobs", errandapi.TriggerRequest{Queue: new("jobs/inbox"), Schedule: &errandapi.TriggerScheduleSpec{Cron: &bad}})
		wantCode(t, err, "INVALID_ARGUMENT", "schedule.cron", "CreateTrigger(bad cron)")
		must(t, e.DeleteTrigger(ctx, "jobs", hook.ID))
		_, err = e.Trigger(ctx, "jobs", hook.ID)
		wantCode(t, err, "NOT_FOUND", "", "Trigger(deleted)")
		resp, err = http.Post(srv.URL+hook.Hook.Path, "application/json", bytes.NewReader([]byte(`{}`)))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Fatalf("a deleted hook's call: %d, want 404", resp.StatusCode)
		}
	})
}
