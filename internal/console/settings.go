package console

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/errandhq/errand/errandapi"
)

// settingsData is the settings page: the instance's settings as the form's
// fields (what was sent, after a refusal) and, on the key's page, its
// webhook key.
type settingsData struct {
	Settings   *errandapi.Settings
	Form       map[string]string
	WebhookKey string
}

// settingsFields are the settings form's fields, shown again with a
// refusal.
var settingsFields = []string{"retentionDays", "rateLimit", "maxInFlight", wasField}

// settingsURL is an instance's settings page.
func settingsURL(inst string) string { return Prefix + "i/" + url.PathEscape(inst) + "/settings" }

// settingsPage shows the settings; "?done=saved" after a save.
func (c *Console) settingsPage(w http.ResponseWriter, r *http.Request, s *session) {
	c.showSettings(w, r, s, &settingsData{}, nil, settingsNotice(r.URL.Query()))
}

// showSettings renders the settings page with d's key and form (the
// stored settings when d has no form).
func (c *Console) showSettings(w http.ResponseWriter, r *http.Request, s *session, d *settingsData, refusal *errandapi.Error, notice string) {
	inst := r.PathValue("instance")
	st, err := s.cl.Settings(r.Context(), inst)
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	d.Settings = st
	if d.Form == nil {
		d.Form = settingsForm(st)
	}
	v := s.view(inst+" settings", inst)
	v.Data, v.Err, v.Notice = d, refusal, notice
	c.render(w, r, statusOf(refusal), "settings", v)
}

// settingsForm is an instance's settings as the form's fields, wasField
// included.
func settingsForm(st *errandapi.Settings) map[string]string {
	f := map[string]string{"retentionDays": strconv.Itoa(st.RetentionDays), "maxInFlight": strconv.Itoa(st.MaxInFlight)}
	if st.RateLimit != nil {
		f["rateLimit"] = fmtNumber(*st.RateLimit)
	}
	return withWas(f)
}

// updateSettings changes the settings the user changed in the form (see
// wasField); an empty rate limit removes it. It redirects to the settings page; a refusal shows the form
// as sent.
func (c *Console) updateSettings(w http.ResponseWriter, r *http.Request, s *session) {
	inst, sent := r.PathValue("instance"), formValues(r.PostForm, settingsFields...)
	req, bad := settingsPatchOf(sent)
	if bad == nil {
		if _, err := s.cl.UpdateSettings(r.Context(), inst, req); err != nil {
			bad = apiError(err)
		}
	}
	if bad != nil {
		c.showSettings(w, r, s, &settingsData{Form: sent}, bad, "")
		return
	}
	http.Redirect(w, r, doneURL(settingsURL(inst), "saved", -1), http.StatusSeeOther)
}

// settingsPatchOf reads the settings form's changed fields; only text
// that is no number (or no whole number) is refused here, naming its
// field. An empty field is left as it is, but the rate limit, which an
// empty field removes.
func settingsPatchOf(f map[string]string) (errandapi.SettingsRequest, *errandapi.Error) {
	var req errandapi.SettingsRequest
	var bad *errandapi.Error
	changedFromShown := changedFrom(f[wasField])
	changed := func(field string) bool { return changedFromShown(field, f[field]) }
	whole := func(field string) *int {
		if bad != nil || strings.TrimSpace(f[field]) == "" || !changed(field) {
			return nil
		}
		n, err := parseWhole(field, f[field])
		bad = err
		return &n
	}
	req.RetentionDays = whole("retentionDays")
	req.MaxInFlight = whole("maxInFlight")
	if !changed("rateLimit") {
		return req, bad
	}
	req.RateLimit = errandapi.Null[float64]()
	if strings.TrimSpace(f["rateLimit"]) != "" && bad == nil {
		v, err := parseNumber("rateLimit", f["rateLimit"])
		req.RateLimit, bad = errandapi.Value(v), err
	}
	return req, bad
}
