package console

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/errandhq/errand/errandapi"
)

// settingsData is the settings page: the instance's settings and, once
// revealed or rotated, its webhook key.
type settingsData struct {
	Settings   *errandapi.Settings
	WebhookKey string
	Rotated    bool
}

func (c *Console) settingsPage(w http.ResponseWriter, r *http.Request, s *session) {
	c.showSettings(w, r, s, &settingsData{}, nil, "")
}

func (c *Console) showSettings(w http.ResponseWriter, r *http.Request, s *session, d *settingsData, refusal *errandapi.Error, notice string) {
	inst := r.PathValue("instance")
	st, err := s.cl.Settings(r.Context(), inst)
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	d.Settings = st
	v := s.view(inst+" settings", inst)
	v.Data, v.Err, v.Notice = d, refusal, notice
	status := http.StatusOK
	if refusal != nil {
		status = refusal.Status
	}
	c.render(w, r, status, "settings", v)
}

// updateSettings changes the settings the form sends; an empty rate limit
// removes it.
func (c *Console) updateSettings(w http.ResponseWriter, r *http.Request, s *session) {
	f := r.PostForm
	var req errandapi.SettingsRequest
	bad := func(field string) {
		c.showSettings(w, r, s, &settingsData{}, &errandapi.Error{Code: errandapi.CodeInvalidArgument, Status: http.StatusBadRequest,
			Message: field + ": must be a number"}, "")
	}
	if v := strings.TrimSpace(f.Get("retentionDays")); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			bad("retentionDays")
			return
		}
		req.RetentionDays = &n
	}
	if v := strings.TrimSpace(f.Get("maxInFlight")); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			bad("maxInFlight")
			return
		}
		req.MaxInFlight = &n
	}
	if v := strings.TrimSpace(f.Get("rateLimit")); v != "" {
		n, err := strconv.ParseFloat(v, 64)
		if err != nil {
			bad("rateLimit")
			return
		}
		req.RateLimit = errandapi.Value(n)
	} else {
		req.RateLimit = errandapi.Null[float64]()
	}
	if _, err := s.cl.UpdateSettings(r.Context(), r.PathValue("instance"), req); err != nil {
		c.showSettings(w, r, s, &settingsData{}, apiError(err), "")
		return
	}
	c.showSettings(w, r, s, &settingsData{}, nil, "Settings saved.")
}

// revealKey shows the webhook key (the API's full grant), after the
// confirmation page.
func (c *Console) revealKey(w http.ResponseWriter, r *http.Request, s *session) {
	c.webhookKey(w, r, s, false)
}

// rotateKey replaces the webhook key and shows the new one.
func (c *Console) rotateKey(w http.ResponseWriter, r *http.Request, s *session) {
	c.webhookKey(w, r, s, true)
}

func (c *Console) webhookKey(w http.ResponseWriter, r *http.Request, s *session, rotate bool) {
	inst := r.PathValue("instance")
	err := confirmed(r)
	var key string
	if err == nil {
		if rotate {
			key, err = s.cl.RotateWebhookKey(r.Context(), inst)
		} else {
			key, err = s.cl.WebhookKey(r.Context(), inst)
		}
	}
	if err != nil {
		c.showSettings(w, r, s, &settingsData{}, apiError(err), "")
		return
	}
	notice := ""
	if rotate {
		notice = "The webhook key is rotated: the next delivery is signed with it."
	}
	c.showSettings(w, r, s, &settingsData{WebhookKey: key, Rotated: rotate}, nil, notice)
}
