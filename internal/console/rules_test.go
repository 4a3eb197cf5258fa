package console_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"

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

	p := u.get("/console/i/jobs/rules").want(t, http.StatusOK, `id="rule-`+cron.ID+`"`, "schedule <code>0 6 * * *</code> (Europe/Paris), next ",
		"hook <code class=\"hook-path\">POST "+hook.Hook.Path+"</code>, signed, copies X-Github-Event",
		`when a task of <a href="/console/i/jobs/q/flaky/">flaky</a> ends failed`, `id="switch-`+chain.ID+`"`)
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
