package httpapi

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/task"
)

// hook serves POST /v1/hooks/{instance}/{hook}: it turns the request into a
// task of the hook rule's queue and answers 202 {id}. It needs no API key:
// the hook's URL (its random token) is the capability, and a hook with a
// secret also needs a valid Standard Webhooks signature. Calls count
// against the instance's rateLimit like any other call.
func (s *Server) hook(w http.ResponseWriter, r *http.Request) {
	h, err := s.eng.HookFind(r.Context(), r.PathValue("instance"), r.PathValue("hook"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if wait, err := s.limits.allow(r.Context(), h.Instance.Org, h.Instance.Name); err != nil {
		w.Header().Set("Retry-After", strconv.Itoa(retryAfter(wait)))
		s.writeError(w, r, err)
		return
	}
	// A gzip body is read decompressed, as the API's are: its signature is
	// over the body the sender compressed.
	body, err := readBodyUpTo(r, task.MaxPayloadBytes)
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		s.writeError(w, r, task.FieldErrorf(task.CodePayloadTooLarge, "body", "is over %d bytes (64 KiB)", task.MaxPayloadBytes))
		return
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	res, err := s.eng.HookFire(r.Context(), h, engine.HookCall{Body: body, Header: r.Header.Get, Copied: headerValues(r.Header)})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if res.Challenge != "" { // Slack's url_verification: nothing was added
		writeJSON(w, http.StatusOK, errandapi.HookChallenge{Challenge: res.Challenge})
		return
	}
	writeJSON(w, http.StatusAccepted, errandapi.HookResponse{ID: res.TaskID, Duplicate: res.Duplicate})
}

// headerValues reads a header a hook copies: a header sent more than once
// gives all its values, joined with ", " as HTTP combines them.
func headerValues(h http.Header) func(string) string {
	return func(k string) string { return strings.Join(h.Values(k), ", ") }
}
