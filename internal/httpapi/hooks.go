package httpapi

import (
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/task"
)

// hookPrefix begins every hook URL's path: /v1/hooks/{instance}/{hook}.
const hookPrefix = engine.HookPathPrefix

// hook serves POST /v1/hooks/{instance}/{hook}: it turns the request into a
// task of the hook rule's queue and answers 202 {id} (a bare 200 to a
// Slack-signed form, a 200 with the answer to a sender's URL check, or as
// Discord, Meta, Dropbox and X want theirs answered: engine.HookAdded). It needs no API key:
// the hook's URL (its random token) is the capability, and a hook with a
// secret also needs a valid Standard Webhooks signature. Calls count
// against the instance's rateLimit like any other call.
func (s *Server) hook(w http.ResponseWriter, r *http.Request) {
	h := s.hookCalled(w, r)
	if h == nil {
		return
	}
	if engine.IsHookCheck(r.URL.Query()) { // Microsoft Graph's check of the URL
		s.answerCheck(w, r, h)
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
	res, err := s.eng.HookFire(r.Context(), h, engine.HookCall{Body: body, Header: r.Header.Get, Copied: headerValues(r.Header), URLs: hookURLs(r)})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	switch {
	case res.EchoSecret != "": // Asana's handshake: nothing was added
		w.Header().Set("X-Hook-Secret", res.EchoSecret)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		return
	case res.Text != "": // a signed check of the URL (Twitch's): nothing was added
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, res.Text)
		return
	case res.Empty: // Discord's webhook events, added or not
		w.WriteHeader(http.StatusNoContent)
		return
	case res.Reply != nil: // a sender's check of the URL: nothing was added
		writeJSON(w, http.StatusOK, res.Reply)
		return
	case res.Answer != nil: // added, answered as the sender wants
		writeJSON(w, http.StatusOK, res.Answer)
		return
	case res.OK:
		writeJSON(w, http.StatusOK, errandapi.HookResponse{ID: res.TaskID, Duplicate: res.Duplicate})
		return
	}
	if res.Ack { // a bare 200, as Slack's slash commands want: added
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		return
	}
	writeJSON(w, http.StatusAccepted, errandapi.HookResponse{ID: res.TaskID, Duplicate: res.Duplicate})
}

// hookCheck serves GET /v1/hooks/{instance}/{hook}: a sender's check of
// the URL — Meta's, Dropbox's or Okta's (engine.HookCheck) —, answered 200
// with the challenge as plain text (nosniff: the text is the caller's) or
// Okta's JSON; nothing is added. Like a call, it needs no key and counts
// against the instance's rateLimit.
func (s *Server) hookCheck(w http.ResponseWriter, r *http.Request) {
	if h := s.hookCalled(w, r); h != nil {
		s.answerCheck(w, r, h)
	}
}

// answerCheck answers a sender's check of hook h's URL (engine.HookCheck).
func (s *Server) answerCheck(w http.ResponseWriter, r *http.Request, h *engine.Hook) {
	ans, err := s.eng.HookCheck(h, r.URL.Query(), r.Header.Get)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if ans.Reply != nil {
		writeJSON(w, http.StatusOK, ans.Reply)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(w, ans.Text)
}

// hookCalled finds the enabled hook a request's path names and counts the
// call against its instance's rateLimit; nil when it answered the
// request with the refusal.
func (s *Server) hookCalled(w http.ResponseWriter, r *http.Request) *engine.Hook {
	h, err := s.eng.HookFind(r.Context(), r.PathValue("instance"), r.PathValue("hook"))
	if err != nil {
		s.writeError(w, r, err)
		return nil
	}
	if wait, err := s.limits.allow(r.Context(), h.Instance.Org, h.Instance.Name); err != nil {
		w.Header().Set("Retry-After", strconv.Itoa(retryAfter(wait)))
		s.writeError(w, r, err)
		return nil
	}
	return h
}

// headerValues reads a header a hook copies: a header sent more than once
// gives all its values, joined with ", " as HTTP combines them.
func headerValues(h http.Header) func(string) string {
	return func(k string) string { return strings.Join(h.Values(k), ", ") }
}

// hookURLs returns the URLs a hook call may have been made to, as its
// sender saw them (Twilio signs that URL): https and http, the Host
// header and X-Forwarded-Host (a proxy in front may change Host), each
// as sent and with or without its scheme's default port, and the path
// and query as received. Trying each is safe: a signature matches only
// the URL its sender signed.
func hookURLs(r *http.Request) func() []string {
	return func() []string {
		hosts := []string{r.Host}
		if fh, _, _ := strings.Cut(r.Header.Get("X-Forwarded-Host"), ","); strings.TrimSpace(fh) != "" {
			hosts = append(hosts, strings.TrimSpace(fh))
		}
		uri := r.URL.RequestURI()
		var out []string
		add := func(scheme, host string) {
			if u := scheme + "://" + host + uri; !slices.Contains(out, u) {
				out = append(out, u)
			}
		}
		for _, scheme := range []string{"https", "http"} {
			def := map[string]string{"https": "443", "http": "80"}[scheme]
			for _, h := range hosts {
				add(scheme, h)
				switch host, port, err := net.SplitHostPort(h); {
				case err != nil: // no port: try the default one
					add(scheme, net.JoinHostPort(strings.Trim(h, "[]"), def))
				case port == def:
					if strings.Contains(host, ":") {
						host = "[" + host + "]"
					}
					add(scheme, host)
				}
			}
		}
		return out
	}
}
