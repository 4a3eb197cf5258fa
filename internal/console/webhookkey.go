package console

import "net/http"

// webhookKeyURL is the page that shows an instance's webhook key.
func webhookKeyURL(inst string) string { return settingsURL(inst) + "/webhook-key" }

// revealKey answers the reveal's confirmation page: it checks that the API
// shows the key to the caller (the full grant), then redirects to the
// key's page, so a reload or Back repeats nothing.
func (c *Console) revealKey(w http.ResponseWriter, r *http.Request, s *session) {
	inst := r.PathValue("instance")
	err := confirmed(r, "showing the webhook key")
	if err == nil {
		_, err = s.cl.WebhookKey(r.Context(), inst)
	}
	if err != nil {
		c.showSettings(w, r, s, &settingsData{}, apiError(err), "")
		return
	}
	http.Redirect(w, r, webhookKeyURL(inst), http.StatusSeeOther)
}

// rotateKey replaces the webhook key, after the confirmation page, and
// redirects to the key's page, which shows the new key: reloading that
// page rotates nothing.
func (c *Console) rotateKey(w http.ResponseWriter, r *http.Request, s *session) {
	inst := r.PathValue("instance")
	err := confirmed(r, "rotating the webhook key")
	if err == nil {
		_, err = s.cl.RotateWebhookKey(r.Context(), inst)
	}
	if err != nil {
		c.showSettings(w, r, s, &settingsData{}, apiError(err), "")
		return
	}
	http.Redirect(w, r, doneURL(webhookKeyURL(inst), "rotated", -1), http.StatusSeeOther)
}

// keyPage is the settings page with the webhook key, read with the API's
// GET of the key (the full grant); "?done=rotated" after a rotation.
func (c *Console) keyPage(w http.ResponseWriter, r *http.Request, s *session) {
	inst := r.PathValue("instance")
	key, err := s.cl.WebhookKey(r.Context(), inst)
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	c.showSettings(w, r, s, &settingsData{WebhookKey: key}, nil, settingsNotice(r.URL.Query()))
}
