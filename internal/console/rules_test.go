package console_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/errandhq/errand/client"
	"github.com/errandhq/errand/errandapi"
)

// TestRulesPage: the rules page lists each rule with what fires it, its
// queue, its state and counts; a hook's URL is shown to a key with write
// only; a full key disables and enables a rule, a read key gets no button
// and a forced switch is the API's refusal on the page; no rule says where
// rules are made.
func TestRulesPage(t *testing.T) {
	rule := func(tr *errandapi.Trigger, err error) *errandapi.Trigger {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	e := newEnv(t, envOptions{})
	e.fixture()
	u := e.user()
	u.login(e.full)
	u.get("/console/i/jobs/rules").want(t, http.StatusOK, `id="no-rules"`, "errand triggers create", `id="nav-rules"`)

	ctx := context.Background()
	q, on := "jobs/pull", "jobs/flaky"
	cron := rule(e.api.CreateTrigger(ctx, "jobs", errandapi.TriggerRequest{Queue: &q, Schedule: &errandapi.TriggerScheduleSpec{Cron: new("0 6 * * *"), TimeZone: new("Europe/Paris")}}))
	hook := rule(e.api.CreateTrigger(ctx, "jobs", errandapi.TriggerRequest{Queue: &q,
		Hook: &errandapi.TriggerHookSpec{Secret: errandapi.Value("my-github-secret"), Headers: &[]string{"X-GitHub-Event"}}}))
	chain := rule(e.api.CreateTrigger(ctx, "jobs", errandapi.TriggerRequest{Queue: &q, Task: &errandapi.TriggerTaskSpec{Queue: &on, On: &[]string{"failed"}}}))
	own := rule(e.api.CreateTrigger(ctx, "jobs", errandapi.TriggerRequest{Queue: &q,
		Hook: &errandapi.TriggerHookSpec{Secret: errandapi.Value("acme-shared-secret-123"), Signature: errandapi.Value(errandapi.HookSignature{Header: "X-Acme-Signature"})}}))

	p := u.get("/console/i/jobs/rules").want(t, http.StatusOK, `id="rule-`+cron.ID+`"`, "schedule <code>0 6 * * *</code> (Europe/Paris), next ",
		"hook <code class=\"hook-path\">POST "+hook.Hook.Path+"</code>, signed, copies X-Github-Event",
		`when a task of <a href="/console/i/jobs/q/flaky/">flaky</a> ends failed`, `id="switch-`+chain.ID+`"`,
		"hook <code class=\"hook-path\">POST "+own.Hook.Path+"</code>, signed with its own scheme (X-Acme-Signature)")
	p.lacks(t, `id="no-rules"`, "my-github-secret")

	tok := u.csrf("/console/i/jobs/rules")
	if r := u.post("/console/i/jobs/rules/"+cron.ID+"/disable", url.Values{"csrf": {tok}}); r.status != http.StatusSeeOther || r.header.Get("Location") != "/console/i/jobs/rules?done=disabled&rule="+cron.ID {
		t.Fatalf("disable: %d %s", r.status, r.header.Get("Location"))
	}
	if got := rule(e.api.GetTrigger(ctx, "jobs", cron.ID)); got.Enabled || got.Schedule.NextTickAt != nil {
		t.Fatalf("disabled rule %+v", got)
	}
	u.get("/console/i/jobs/rules?done=disabled&rule="+cron.ID).want(t, http.StatusOK, "Rule "+cron.ID+" is disabled", `<span class="badge">disabled</span>`, ">Enable</button>")
	// A notice is said only while the rule's state bears it out.
	u.get("/console/i/jobs/rules?done=disabled&rule="+hook.ID).lacks(t, "is disabled:")
	u.get("/console/i/jobs/rules?done=enabled&rule="+cron.ID).lacks(t, "is enabled.")
	u.post("/console/i/jobs/rules/"+cron.ID+"/enable", url.Values{"csrf": {tok}})
	if got := rule(e.api.GetTrigger(ctx, "jobs", cron.ID)); !got.Enabled {
		t.Fatalf("enabled rule %+v", got)
	}
	u.post("/console/i/jobs/rules/"+cron.ID+"/enable", url.Values{"csrf": {"forged"}}).want(t, http.StatusForbidden)
	u.post("/console/i/jobs/rules/nosuchrule/disable", url.Values{"csrf": {tok}}).want(t, http.StatusNotFound, "NOT_FOUND")

	// A read key sees the rules, not the hook's URL, and no button; a
	// switch it forces is refused by the API.
	r := e.user()
	r.login(e.key(e.org, "read:jobs"))
	r.get("/console/i/jobs/rules").want(t, http.StatusOK, `id="rule-`+hook.ID+`"`, "(its URL is shown with write), signed").
		lacks(t, hook.Hook.Path, `id="switch-`)
	r.post("/console/i/jobs/rules/"+cron.ID+"/disable", url.Values{"csrf": {r.csrf("/console/i/jobs/rules")}}).want(t, http.StatusForbidden, "PERMISSION_DENIED")
	if got := rule(e.api.GetTrigger(ctx, "jobs", cron.ID)); !got.Enabled {
		t.Fatal("a read key's forced switch disabled the rule")
	}
}

// TestRulesCreateAndDelete: a full key makes a schedule, a hook and a
// task rule from the rules page's form (the hook's notice gives its URL),
// sees the API's refusal naming the field with the form as sent (never
// the secret), and deletes a rule behind a confirmation page; a read key
// gets no form, and a create it forces is the API's refusal.
func TestRulesCreateAndDelete(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.fixture()
	ctx := context.Background()
	u := e.user()
	u.login(e.full)
	u.get("/console/i/jobs/rules").want(t, http.StatusOK, `id="create-rule"`, `id="no-rules"`)
	tok := u.csrf("/console/i/jobs/rules")
	create := func(form url.Values) page {
		t.Helper()
		form.Set("csrf", tok)
		return u.post("/console/i/jobs/rules", form)
	}
	created := func(r page) string {
		t.Helper()
		loc := r.header.Get("Location")
		id, ok := strings.CutPrefix(loc, "/console/i/jobs/rules?done=created&rule=")
		if r.status != http.StatusSeeOther || !ok {
			t.Fatalf("create: %d %s", r.status, loc)
		}
		return id
	}

	sched := created(create(url.Values{"kind": {"schedule"}, "queue": {"pull"}, "cron": {"0 6 * * *"}, "timeZone": {"Europe/Paris"}, "payload": {`{"report":"daily"}`}}))
	got, err := e.api.GetTrigger(ctx, "jobs", sched)
	if err != nil || got.Schedule == nil || got.Schedule.Cron != "0 6 * * *" || got.Schedule.TimeZone != "Europe/Paris" || string(got.Payload) != `{"report":"daily"}` || got.Queue != "jobs/pull" {
		t.Fatalf("schedule made by the form: %+v %v", got, err)
	}
	u.get("/console/i/jobs/rules?done=created&rule="+sched).want(t, http.StatusOK, "Rule "+sched+" is created.", "schedule <code>0 6 * * *</code> (Europe/Paris)")

	hook := created(create(url.Values{"kind": {"hook"}, "queue": {"pull"}, "secret": {"a-hook-secret-of-length"}}))
	got, err = e.api.GetTrigger(ctx, "jobs", hook)
	if err != nil || got.Hook == nil || !got.Hook.HasSecret {
		t.Fatalf("hook made by the form: %+v %v", got, err)
	}
	u.get("/console/i/jobs/rules?done=created&rule="+hook).want(t, http.StatusOK, "each POST to "+got.Hook.Path+" on this server adds a task").
		lacks(t, "a-hook-secret-of-length")

	own := created(create(url.Values{"kind": {"hook"}, "queue": {"pull"}, "secret": {"a-hook-secret-of-length"},
		"sigHeader": {"x-acme-signature"}, "sigHash": {"sha512"}, "sigEncoding": {"base64"}, "sigPrefix": {"v1="}, "sigIdHeader": {"X-Acme-Delivery"}}))
	got, err = e.api.GetTrigger(ctx, "jobs", own)
	if err != nil || got.Hook == nil || got.Hook.Signature == nil ||
		*got.Hook.Signature != (errandapi.HookSignature{Header: "X-Acme-Signature", Hash: "sha512", Encoding: "base64", Prefix: "v1=", IDHeader: "X-Acme-Delivery"}) {
		t.Fatalf("hook with its own signature made by the form: %+v %v", got.Hook, err)
	}
	u.get("/console/i/jobs/rules").want(t, http.StatusOK, "signed with its own scheme (X-Acme-Signature)")
	timed := created(create(url.Values{"kind": {"hook"}, "queue": {"pull"}, "secret": {"a-hook-secret-of-length"},
		"sigHeader": {"X-Acme-Signature"}, "sigTimestampHeader": {"x-acme-time"}, "sigSigned": {"{timestamp}:{body}"}}))
	if got, err = e.api.GetTrigger(ctx, "jobs", timed); err != nil || got.Hook == nil || got.Hook.Signature == nil ||
		got.Hook.Signature.TimestampHeader != "X-Acme-Time" || got.Hook.Signature.Signed != "{timestamp}:{body}" {
		t.Fatalf("hook signed with its time made by the form: %+v %v", got.Hook, err)
	}
	// Its refusals name the field, the form kept (the secret aside).
	create(url.Values{"kind": {"hook"}, "queue": {"pull"}, "sigHeader": {"X-Acme-Signature"}, "sigPrefix": {"v2="}}).
		want(t, http.StatusBadRequest, "hook.signature: a hook&#39;s own signature needs its secret", `value="X-Acme-Signature"`, `value="v2="`)
	create(url.Values{"kind": {"hook"}, "queue": {"pull"}, "secret": {"a-hook-secret-of-length"}, "sigHeader": {"X-Acme-Signature"}, "sigHash": {"md5"}}).
		want(t, http.StatusBadRequest, "hook.signature.hash").lacks(t, "a-hook-secret-of-length")
	if err := e.api.DeleteTrigger(ctx, "jobs", own); err != nil {
		t.Fatal(err)
	}

	onFail := created(create(url.Values{"kind": {"task"}, "queue": {"pull"}, "watch": {"flaky"}, "on": {"failed"}, "priority": {"4"}}))
	if got, err = e.api.GetTrigger(ctx, "jobs", onFail); err != nil || got.Task == nil || got.Task.Queue != "jobs/flaky" || len(got.Task.On) != 1 ||
		got.Task.On[0] != "failed" || got.Priority != 4 {
		t.Fatalf("task rule made by the form: %+v %v", got, err)
	}
	u.get("/console/i/jobs/rules").want(t, http.StatusOK, `priority 4</span>`)

	// Refusals: the API's, naming the field, with the form as sent but the
	// secret; the payload's JSON and the kind are the form's own.
	create(url.Values{"kind": {"schedule"}, "queue": {"pull"}, "cron": {"99 * * * *"}, "secret": {"never-shown-again-secret"}}).
		want(t, http.StatusBadRequest, "INVALID_ARGUMENT", "schedule.cron", `value="99 * * * *"`).lacks(t, "never-shown-again-secret")
	create(url.Values{"kind": {"task"}, "queue": {"pull"}, "watch": {"nosuch"}}).want(t, http.StatusNotFound, "nosuch")
	create(url.Values{"kind": {"schedule"}, "queue": {"pull"}, "cron": {"@hourly"}, "payload": {"{not json"}}).
		want(t, http.StatusBadRequest, "payload: must be JSON", "{not json")
	create(url.Values{"kind": {"sometimes"}, "queue": {"pull"}}).want(t, http.StatusBadRequest, "kind: must be schedule, hook or task")
	create(url.Values{"kind": {"hook"}, "queue": {"pull"}, "priority": {"10"}}).want(t, http.StatusBadRequest, "priority: must be 0–9", `value="10"`)
	create(url.Values{"kind": {"hook"}, "queue": {"pull"}, "priority": {"1.5"}}).want(t, http.StatusBadRequest, "priority: must be a whole number")
	if list, _ := e.api.ListTriggers(ctx, "jobs"); len(list) != 4 {
		t.Fatalf("%d rules after the refusals, want 4", len(list))
	}

	// Delete: behind a confirmation page; unconfirmed is refused.
	u.get("/console/i/jobs/rules/"+hook+"/confirm-delete").want(t, http.StatusOK, "Delete hook rule "+hook, "Its URL stops working", `action="/console/i/jobs/rules/`+hook+`/delete"`)
	u.post("/console/i/jobs/rules/"+hook+"/delete", url.Values{"csrf": {tok}}).want(t, http.StatusBadRequest, "CONFIRM_REQUIRED")
	if r := u.post("/console/i/jobs/rules/"+hook+"/delete", url.Values{"csrf": {tok}, "confirm": {"true"}}); r.status != http.StatusSeeOther ||
		r.header.Get("Location") != "/console/i/jobs/rules?done=deleted&rule="+hook {
		t.Fatalf("delete: %d %s", r.status, r.header.Get("Location"))
	}
	if _, err := e.api.GetTrigger(ctx, "jobs", hook); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("the deleted rule: %v", err)
	}
	u.get("/console/i/jobs/rules?done=deleted&rule="+hook).want(t, http.StatusOK, "Rule "+hook+" is deleted.").lacks(t, `id="rule-`+hook+`"`)
	u.get("/console/i/jobs/rules/nosuchrule/confirm-delete").want(t, http.StatusNotFound)

	// A read key: no form, no delete; what it forces, the API refuses.
	r := e.user()
	r.login(e.key(e.org, "read:jobs"))
	r.get("/console/i/jobs/rules").want(t, http.StatusOK, `id="rule-`+sched+`"`).lacks(t, `id="create-rule"`, `id="delete-`)
	rtok := r.csrf("/console/i/jobs/rules")
	r.post("/console/i/jobs/rules", url.Values{"csrf": {rtok}, "kind": {"schedule"}, "queue": {"pull"}, "cron": {"@hourly"}}).want(t, http.StatusForbidden, "PERMISSION_DENIED")
	r.get("/console/i/jobs/rules/"+sched+"/confirm-delete").want(t, http.StatusForbidden, "PERMISSION_DENIED")
	r.post("/console/i/jobs/rules/"+sched+"/delete", url.Values{"csrf": {rtok}, "confirm": {"true"}}).want(t, http.StatusForbidden, "PERMISSION_DENIED")
}
