package console

import (
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
// added, refusals, the last one); "?done=enabled|disabled&rule=ID" after a
// switch (rulesNotice).
func (c *Console) rulesPage(w http.ResponseWriter, r *http.Request, s *session) {
	c.showRules(w, r, s, nil)
}

// showRules renders the rules page, with the API's refusal of a switch.
func (c *Console) showRules(w http.ResponseWriter, r *http.Request, s *session, refusal *errandapi.Error) {
	inst := r.PathValue("instance")
	rules, err := s.cl.ListTriggers(r.Context(), inst)
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	v := s.view(inst+" rules", inst)
	v.Data, v.Err = rules, refusal
	if refusal == nil {
		v.Notice = rulesNotice(r.URL.Query(), rules)
	}
	c.render(w, r, statusOf(refusal), "rules", v)
}

// switchRule enables or disables a rule (the API's PATCH {"enabled"}, which
// needs full) and redirects to the rules page; a refusal shows it there.
func (c *Console) switchRule(enabled bool) func(w http.ResponseWriter, r *http.Request, s *session) {
	return func(w http.ResponseWriter, r *http.Request, s *session) {
		inst, id := r.PathValue("instance"), r.PathValue("id")
		if _, err := s.cl.UpdateTrigger(r.Context(), inst, id, errandapi.TriggerRequest{Enabled: &enabled}); err != nil {
			c.showRules(w, r, s, apiError(err))
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
