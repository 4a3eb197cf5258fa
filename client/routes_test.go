package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/errandhq/errand/client"
	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/httpapi"
)

// TestEveryRoute drives every route of the server's route table through
// the client, checks each answer's content, and fails if a route of the
// table was never reached (so a new route needs its client method).
func TestEveryRoute(t *testing.T) {
	eachStore(t, func(t *testing.T, kind string) {
		e := start(t, options{kind: kind})
		c, ctx := e.c, context.Background()

		if _, err := c.CreateInstance(ctx, "jobs"); err != nil {
			t.Fatal(err)
		}
		self := must(c.Self(ctx)).of(t)
		if !self.Dev || self.Org != "dev" || len(self.Grants) != 1 || self.Strongest() != errandapi.RoleFull {
			t.Fatalf("self %+v", self)
		}
		insts := must(c.ListInstances(ctx)).of(t)
		if len(insts) != 1 || insts[0].Name != "jobs" || insts[0].CreatedAt != t0.UnixMilli() {
			t.Fatalf("instances %+v", insts)
		}

		push := must(c.CreateQueue(ctx, "jobs", "push", errandapi.QueueRequest{
			Target:        errandapi.Value(errandapi.Target{Webhook: "http://127.0.0.1:9/x"}),
			RatePerSecond: errandapi.Value(5.0), MaxAttempts: new(3),
		})).of(t)
		if push.Mode != errandapi.ModePush || push.Target.Webhook != "http://127.0.0.1:9/x" || *push.RatePerSecond != 5 || push.MaxAttempts != 3 {
			t.Fatalf("push queue %+v", push)
		}
		pull := must(c.CreateQueue(ctx, "jobs", "pull", errandapi.QueueRequest{Mode: new(errandapi.ModePull), MaxAttempts: new(1)})).of(t)
		if pull.Mode != errandapi.ModePull || pull.Target != nil {
			t.Fatalf("pull queue %+v", pull)
		}
		patched := must(c.UpdateQueue(ctx, "jobs", "push", errandapi.QueueRequest{RatePerSecond: errandapi.Null[float64](), Paused: new(true)})).of(t)
		if patched.RatePerSecond != nil || !patched.Paused || patched.Target == nil || patched.MaxAttempts != 3 {
			t.Fatalf("patched %+v", patched)
		}
		one := must(c.GetQueue(ctx, "jobs", "pull")).of(t)
		if one.Name != "pull" || len(one.Counts) != 6 || one.Counts[errandapi.StateScheduled] != 0 {
			t.Fatalf("queue %+v", one)
		}
		act := must(c.QueueActivity(ctx, "jobs", "pull")).of(t)
		if len(act.Minutes) != 60 || act.Minutes[59].At > t0.UnixMilli() || act.Minutes[59].At+60_000 <= t0.UnixMilli() || act.Capped == nil {
			t.Fatalf("activity %+v", act)
		}
		qs := must(c.ListQueues(ctx, "jobs")).of(t)
		if len(qs) != 3 || qs[0].Name != "default" || qs[2].Counts[errandapi.StateLeased] != 0 || qs[2].Capped == nil {
			t.Fatalf("queues %+v", qs)
		}

		// Add: one task, a batch with a duplicate, an iteration over pages.
		first := must(c.AddTask(ctx, "jobs", "pull", errandapi.NewTask{Name: "n1", Payload: json.RawMessage(`{"a":1}`)})).of(t)
		if !first.OK || first.ID == "" || *first.Name != "n1" || first.State != errandapi.StateScheduled {
			t.Fatalf("added %+v", first)
		}
		res := must(c.AddTasks(ctx, "jobs", "pull",
			errandapi.NewTask{Name: "n1"}, errandapi.NewTask{Payload: json.RawMessage(`2`), Delay: new(5.0)})).of(t)
		if len(res) != 2 || res[0].OK || res[0].ID != first.ID || !res[1].OK || res[1].RunAt != t0.UnixMilli()+5000 {
			t.Fatalf("batch %+v", res)
		}
		page := must(c.ListTasks(ctx, "jobs", "pull", client.ListOptions{Limit: 1})).of(t)
		if len(page.Tasks) != 1 || page.Cursor == nil {
			t.Fatalf("page %+v", page)
		}
		var ids []string
		for tk, err := range c.Tasks(ctx, "jobs", "pull", client.ListOptions{State: errandapi.StateScheduled, Limit: 1}) {
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, tk.ID)
		}
		if len(ids) != 2 || ids[0] != first.ID {
			t.Fatalf("iterated %v, want %s first", ids, first.ID)
		}
		got := must(c.GetTask(ctx, "jobs", first.ID)).of(t)
		if string(got.Payload) != `{"a":1}` || string(got.Result) != "null" || len(got.Attempts) != 0 {
			t.Fatalf("task %+v", got)
		}

		// Pull: lease, extend, release with an error (maxAttempts 1: failed),
		// retry, run, lease again, ack; a batch ack of the delayed task.
		leased := must(c.Lease(ctx, "jobs", "pull", errandapi.LeaseRequest{LeaseSeconds: new(30)})).of(t)
		if len(leased) != 1 || leased[0].ID != first.ID || leased[0].LeaseID == "" || leased[0].Attempts != 1 {
			t.Fatalf("leased %+v", leased)
		}
		lease := leased[0].LeaseID
		ext := must(c.Extend(ctx, "jobs", first.ID, errandapi.ExtendRequest{LeaseID: lease, LeaseSeconds: new(90)})).of(t)
		if *ext.LeaseExpiresAt != t0.UnixMilli()+90_000 {
			t.Fatalf("extended %+v", ext)
		}
		rel := must(c.Release(ctx, "jobs", first.ID, errandapi.ReleaseRequest{LeaseID: lease, Error: "boom"})).of(t)
		if rel.State != errandapi.StateFailed || *rel.LastError != "boom" {
			t.Fatalf("released %+v", rel)
		}
		if r := must(c.RetryTask(ctx, "jobs", first.ID)).of(t); r.State != errandapi.StateScheduled || r.Attempt != 0 {
			t.Fatalf("retried %+v", r)
		}
		if r := must(c.RunTask(ctx, "jobs", first.ID)).of(t); r.State != errandapi.StateScheduled {
			t.Fatalf("run %+v", r)
		}
		if r := must(c.UpdateTask(ctx, "jobs", first.ID, errandapi.TaskPatchRequest{Priority: new(7)})).of(t); r.Priority != 7 || r.State != errandapi.StateScheduled {
			t.Fatalf("updated %+v", r)
		}
		leased = must(c.Lease(ctx, "jobs", "pull", errandapi.LeaseRequest{Count: new(10)})).of(t)
		if len(leased) != 1 {
			t.Fatalf("leased %+v", leased)
		}
		acked := must(c.Ack(ctx, "jobs", first.ID, errandapi.AckRequest{LeaseID: leased[0].LeaseID, Result: json.RawMessage(`{"ok":true}`)})).of(t)
		if acked.State != errandapi.StateSucceeded || string(acked.Result) != `{"ok":true}` {
			t.Fatalf("acked %+v", acked)
		}
		e.clock.Advance(5e9)
		leased = must(c.Lease(ctx, "jobs", "pull", errandapi.LeaseRequest{})).of(t)
		if len(leased) != 1 || leased[0].ID != res[1].ID {
			t.Fatalf("leased %+v", leased)
		}
		results := must(c.AckMany(ctx, "jobs", "pull", []errandapi.BatchAck{{ID: leased[0].ID, LeaseID: leased[0].LeaseID}})).of(t)
		if len(results) != 1 || !results[0].OK || results[0].Err() != nil {
			t.Fatalf("batch ack %+v", results)
		}

		// Cancel a scheduled task of the push queue (paused: it stays).
		other := must(c.AddTask(ctx, "jobs", "push", errandapi.NewTask{})).of(t)
		if r := must(c.CancelTask(ctx, "jobs", other.ID)).of(t); r.State != errandapi.StateCancelled {
			t.Fatalf("cancelled %+v", r)
		}
		// Delete another: answered as it was, then gone.
		gone := must(c.AddTask(ctx, "jobs", "push", errandapi.NewTask{})).of(t)
		if r := must(c.DeleteTask(ctx, "jobs", gone.ID)).of(t); r.ID != gone.ID || r.State != errandapi.StateScheduled {
			t.Fatalf("deleted %+v", r)
		}
		if _, err := c.GetTask(ctx, "jobs", gone.ID); !errors.Is(err, errandapi.ErrNotFound) {
			t.Fatalf("a deleted task: %v", err)
		}

		// Settings and the webhook key.
		s := must(c.Settings(ctx, "jobs")).of(t)
		if s.RetentionDays != 7 || s.RateLimit != nil || s.MaxInFlight != 50 {
			t.Fatalf("settings %+v", s)
		}
		s = must(c.UpdateSettings(ctx, "jobs", errandapi.SettingsRequest{RetentionDays: new(3), RateLimit: errandapi.Value(100.0)})).of(t)
		if s.RetentionDays != 3 || *s.RateLimit != 100 {
			t.Fatalf("settings %+v", s)
		}
		key := must(c.WebhookKey(ctx, "jobs")).of(t)
		rotated := must(c.RotateWebhookKey(ctx, "jobs")).of(t)
		if len(key) < 10 || key[:6] != "whsec_" || rotated == key || must(c.WebhookKey(ctx, "jobs")).of(t) != rotated {
			t.Fatalf("webhook keys %q %q", key, rotated)
		}

		// Usage: the tasks added above, counted on this node.
		u := must(c.Usage(ctx, "jobs")).of(t)
		if u.Instance != "jobs" || u.TasksAdded == 0 || len(u.Days) == 0 || u.Days[len(u.Days)-1].TasksAdded != u.TasksAdded {
			t.Fatalf("usage %+v", u)
		}

		// Functions: a queue's function, which nothing serves here.
		must(c.CreateQueue(ctx, "jobs", "fn", errandapi.QueueRequest{Target: errandapi.Value(errandapi.Target{Function: "app/x"})})).of(t)
		if fs := must(c.Functions(ctx, "jobs")).of(t); len(fs) != 1 || fs[0].Function != "app/x" || fs[0].Slots != 0 || len(fs[0].Queues) != 1 || fs[0].Queues[0] != "fn" {
			t.Fatalf("functions %+v", fs)
		}

		// Trigger rules.
		rule := must(c.CreateTrigger(ctx, "jobs", errandapi.TriggerRequest{Queue: new("jobs/pull"),
			Schedule: &errandapi.TriggerScheduleSpec{Cron: new("@hourly"), TimeZone: new("Europe/Paris")}})).of(t)
		if rule.Kind != errandapi.KindSchedule || rule.Queue != "jobs/pull" || rule.Schedule.TimeZone != "Europe/Paris" || rule.Schedule.NextTickAt == nil {
			t.Fatalf("rule %+v", rule)
		}
		if l := must(c.ListTriggers(ctx, "jobs")).of(t); len(l) != 1 || l[0].ID != rule.ID {
			t.Fatalf("rules %+v", l)
		}
		if off := must(c.UpdateTrigger(ctx, "jobs", rule.ID, errandapi.TriggerRequest{Enabled: new(false)})).of(t); off.Enabled || off.Schedule.NextTickAt != nil {
			t.Fatalf("disabled %+v", off)
		}
		if g := must(c.GetTrigger(ctx, "jobs", rule.ID)).of(t); g.Enabled || g.ID != rule.ID {
			t.Fatalf("rule %+v", g)
		}
		if err := c.DeleteTrigger(ctx, "jobs", rule.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := c.GetTrigger(ctx, "jobs", rule.ID); !errors.Is(err, errandapi.ErrNotFound) {
			t.Fatalf("deleted rule: %v", err)
		}

		// Purge, delete a queue, delete the instance.
		if n := must(c.PurgeQueue(ctx, "jobs", "pull")).of(t); n != 2 {
			t.Fatalf("purged %d, want 2", n)
		}
		if n := must(c.DeleteQueue(ctx, "jobs", "push")).of(t); n != 1 {
			t.Fatalf("deleted %d, want 1", n)
		}
		if tok := must(c.ChannelToken(ctx, "jobs", "room-1")).of(t); !strings.HasPrefix(tok.Token, "ect_") || tok.ExpiresAt == 0 {
			t.Fatalf("channel token %+v", tok)
		}
		sub := must(c.Subscribe(ctx, "jobs", "room-1", "")).of(t)
		if sub.Head() != "0" {
			t.Fatalf("a new channel's head %q", sub.Head())
		}
		_ = sub.Close()
		// Counted once its handler returns, as a refusal's does at once
		// (a subscription's, when the server sees the client gone).
		if _, err := c.Subscribe(ctx, "jobs", "room-1", "1"); !errors.Is(err, client.ErrInvalidArgument) {
			t.Fatalf("subscribe after an id never given: %v", err)
		}
		if err := c.DeleteInstance(ctx, "jobs"); err != nil {
			t.Fatal(err)
		}
		if insts := must(c.ListInstances(ctx)).of(t); len(insts) != 0 {
			t.Fatalf("instances after delete %+v", insts)
		}

		e.mu.Lock()
		defer e.mu.Unlock()
		for _, rt := range httpapi.Routes {
			if rt.Pattern == "/v1/workers/{instance}" {
				continue // the worker package's (worker/), tested there
			}
			if e.routes[rt.Method+" "+rt.Pattern] == 0 {
				t.Errorf("route %s %s was not reached through the client", rt.Method, rt.Pattern)
			}
		}
	})
}
