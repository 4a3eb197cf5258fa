package console

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"

	"github.com/errandhq/errand/errandapi"
)

// rulesURL is an instance's trigger rules page.
func rulesURL(inst string) string { return Prefix + "i/" + url.PathEscape(inst) + "/rules" }

// rulesPage lists the instance's trigger rules, oldest first: what fires
// each (its schedule and next tick, its hook URL, the queue it watches),
// the queue it adds to, whether it is enabled, and what it did (tasks
// added, refusals, the last one); "?done=created|enabled|disabled|deleted&rule=ID"
// after a change (rulesNotice). A full key gets the new-rule form.
func (c *Console) rulesPage(w http.ResponseWriter, r *http.Request, s *session) {
	c.showRules(w, r, s, nil, nil)
}

// rulesData is the rules page: the rules, and the new-rule form as sent,
// shown again with a refusal.
type rulesData struct {
	Rules []errandapi.Trigger
	Form  map[string]string
}

// newRuleFields are the new-rule form's fields shown again with a
// refusal: not the hook secret, which a page never shows.
var newRuleFields = []string{"kind", "queue", "cron", "timeZone", "watch", "on", "payload", "priority",
	"sigHeader", "sigHash", "sigEncoding", "sigPrefix", "sigIdHeader", "sigTimestampHeader", "sigSigned"}

// showRules renders the rules page, with the API's refusal of a change and
// the form as sent.
func (c *Console) showRules(w http.ResponseWriter, r *http.Request, s *session, refusal *errandapi.Error, form map[string]string) {
	inst := r.PathValue("instance")
	rules, err := s.cl.ListTriggers(r.Context(), inst)
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	v := s.view(inst+" rules", inst)
	v.Data, v.Err = &rulesData{Rules: rules, Form: form}, refusal
	if refusal == nil {
		v.Notice = rulesNotice(r.URL.Query(), rules)
	}
	c.render(w, r, statusOf(refusal), "rules", v)
}

// createRule makes a rule from the new-rule form (the API's POST
// …/triggers, which needs full) and goes to the rules page, which says
// so; the API's refusal, naming the field, is shown with the form as sent.
func (c *Console) createRule(w http.ResponseWriter, r *http.Request, s *session) {
	inst, f := r.PathValue("instance"), r.PostForm
	req, bad := ruleRequest(inst, f)
	if bad != nil {
		c.showRules(w, r, s, bad, formValues(f, newRuleFields...))
		return
	}
	tr, err := s.cl.CreateTrigger(r.Context(), inst, req)
	if err != nil {
		c.showRules(w, r, s, apiError(err), formValues(f, newRuleFields...))
		return
	}
	http.Redirect(w, r, doneURL(rulesURL(inst), "created", -1)+"&rule="+url.QueryEscape(tr.ID), http.StatusSeeOther)
}

// ruleRequest is the new-rule form as the API's request: the queues are
// this instance's; every bound is the API's. Only a payload that is not
// JSON (which cannot travel), a priority that is not a whole number and a
// kind the form does not offer are refused here.
func ruleRequest(inst string, f url.Values) (errandapi.TriggerRequest, *errandapi.Error) {
	queue := inst + "/" + strings.TrimSpace(f.Get("queue"))
	req := errandapi.TriggerRequest{Queue: &queue}
	if p := strings.TrimSpace(f.Get("payload")); p != "" {
		if !json.Valid([]byte(p)) {
			return req, badField("payload", "must be JSON (or empty: a schedule's tasks then carry null, a hook's the request body, a task rule's the ended task)")
		}
		req.Payload = json.RawMessage(p)
	}
	var bad *errandapi.Error
	if req.Priority, bad = parseOptionalWhole("priority", f.Get("priority")); bad != nil {
		return req, bad
	}
	switch f.Get("kind") {
	case "schedule":
		cron, tz := strings.TrimSpace(f.Get("cron")), strings.TrimSpace(f.Get("timeZone"))
		req.Schedule = &errandapi.TriggerScheduleSpec{Cron: &cron}
		if tz != "" {
			req.Schedule.TimeZone = &tz
		}
	case "hook":
		req.Hook = &errandapi.TriggerHookSpec{}
		if secret := f.Get("secret"); secret != "" {
			req.Hook.Secret = errandapi.Value(secret)
		}
		if h := strings.TrimSpace(f.Get("sigHeader")); h != "" {
			req.Hook.Signature = errandapi.Value(errandapi.HookSignature{Header: h, Hash: f.Get("sigHash"), Encoding: f.Get("sigEncoding"),
				Prefix: strings.TrimSpace(f.Get("sigPrefix")), IDHeader: strings.TrimSpace(f.Get("sigIdHeader")),
				TimestampHeader: strings.TrimSpace(f.Get("sigTimestampHeader")), Signed: strings.TrimSpace(f.Get("sigSigned"))})
		}
	case "task":
		watch := inst + "/" + strings.TrimSpace(f.Get("watch"))
		req.Task = &errandapi.TriggerTaskSpec{Queue: &watch}
		if on := f.Get("on"); on == "succeeded" || on == "failed" {
			req.Task.On = &[]string{on}
		}
	default:
		return req, badField("kind", "must be schedule, hook or task")
	}
	return req, nil
}

// confirmRuleDelete asks before a rule is deleted.
func (c *Console) confirmRuleDelete(w http.ResponseWriter, r *http.Request, s *session) {
	inst := r.PathValue("instance")
	tr, err := s.cl.GetTrigger(r.Context(), inst, r.PathValue("id"))
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	what := "It adds nothing more."
	if tr.Kind == errandapi.KindHook {
		what = "Its URL stops working: calls to it answer 404."
	}
	c.showConfirm(w, r, s, inst, "", confirmation{
		Question: "Delete " + string(tr.Kind) + " rule " + tr.ID + ", which adds to " + queueName(tr.Queue) + "? " + what + " This cannot be undone.",
		Action:   rulesURL(inst) + "/" + url.PathEscape(tr.ID) + "/delete", Button: "Delete the rule", Back: rulesURL(inst),
	})
}

// deleteRule deletes a rule, confirmed, and goes to the rules page, which
// says so; a refusal is shown there.
func (c *Console) deleteRule(w http.ResponseWriter, r *http.Request, s *session) {
	inst, id := r.PathValue("instance"), r.PathValue("id")
	err := confirmed(r, "deleting a rule stops what it adds")
	if err == nil {
		err = s.cl.DeleteTrigger(r.Context(), inst, id)
	}
	if err != nil {
		c.showRules(w, r, s, apiError(err), nil)
		return
	}
	http.Redirect(w, r, doneURL(rulesURL(inst), "deleted", -1)+"&rule="+url.QueryEscape(id), http.StatusSeeOther)
}

// switchRule enables or disables a rule (the API's PATCH {"enabled"}, which
// needs full) and redirects to the rules page; a refusal shows it there.
func (c *Console) switchRule(enabled bool) func(w http.ResponseWriter, r *http.Request, s *session) {
	return func(w http.ResponseWriter, r *http.Request, s *session) {
		inst, id := r.PathValue("instance"), r.PathValue("id")
		if _, err := s.cl.UpdateTrigger(r.Context(), inst, id, errandapi.TriggerRequest{Enabled: &enabled}); err != nil {
			c.showRules(w, r, s, apiError(err), nil)
			return
		}
		done := "disabled"
		if enabled {
			done = "enabled"
		}
		http.Redirect(w, r, doneURL(rulesURL(inst), done, -1)+"&rule="+url.QueryEscape(id), http.StatusSeeOther)
	}
}

// queueName is the queue of an "<instance>/<queue>" a rule names.
func queueName(target string) string {
	_, q, _ := strings.Cut(target, "/")
	return q
}
