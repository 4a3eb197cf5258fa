package console

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/errandhq/errand/client"
	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/inproc"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// cookieName is the session cookie. It holds the session's id, a random
// secret (seal.go), never the API key: HttpOnly (no script can read it),
// SameSite=Strict, Secure on TLS, scoped to /console/. The store keeps the
// session (Config.Sessions): the id's hash and the key sealed with a key
// derived from the id, until the session expires or logs out, on every
// node at once. The key is checked by the API on every request, so a
// revoked key's session ends at its next request too.
const cookieName = "errand_console"

// csrfField is the form field every state-changing request carries.
const csrfField = "csrf"

// session is the caller of one console request: its client (the API in
// process, with the session's key), what the key may do and the CSRF
// token of its forms.
type session struct {
	cl   *client.Client
	self *errandapi.KeySelf
	csrf string
	dev  bool
	// idHash is the stored session's key (nil in dev): a live stream asks
	// the store again before each send (Console.sessionLives).
	idHash []byte
}

// roleOn is the session's role on an instance: its grant there or on
// every instance, whichever is stronger ("" for none).
func (s *session) roleOn(instance string) errandapi.Role {
	var best errandapi.Role
	for _, g := range s.self.Grants {
		if (g.Instance == instance || g.Instance == "*") && (best == "" || !best.Includes(g.Role)) {
			best = g.Role
		}
	}
	return best
}

// newClient is a client of the node's API in process with key ("" in dev).
// A key client.New refuses (one holding a space or a line break: no key
// errand makes) is UNAUTHENTICATED, as the API answers an unknown key.
func (c *Console) newClient(key string) (*client.Client, error) {
	cl, err := client.New("http://localhost", client.Options{
		APIKey: key, HTTPClient: &http.Client{Transport: inproc.Transport{H: c.cfg.API}},
		Source: "console", UserAgent: "errand-console",
		// A refusal is shown at once: the page never waits out a
		// rate limit or retries a call the user made.
		Retry: client.RetryPolicy{MaxAttempts: 1, MaxRetryAfter: time.Millisecond},
	})
	if err != nil { // the URL is a constant: the key was refused
		return nil, &errandapi.Error{Code: errandapi.CodeUnauthenticated, Status: http.StatusUnauthorized, Message: err.Error()}
	}
	return cl, nil
}

// self reads the key's grants through the API (GET /v1/keys/self), with a
// client of that key.
func (c *Console) self(ctx context.Context, key string) (*client.Client, *errandapi.KeySelf, error) {
	cl, err := c.newClient(key)
	if err != nil {
		return nil, nil, err
	}
	self, err := cl.Self(ctx)
	return cl, self, err
}

// csrfToken is the token of a session's forms: an HMAC of a fixed label
// keyed with the session's cookie (a per-process secret in dev). It holds
// on every node, and cannot be made without the cookie, which no script
// can read.
func csrfToken(secret string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("errand-console-csrf-v1"))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// session returns the request's session, or nil after redirecting to the
// login page (no cookie, or a key the API no longer accepts, whose cookie
// is cleared at once).
func (c *Console) session(w http.ResponseWriter, r *http.Request) *session {
	key, secret := "", c.devSecret
	var idHash []byte
	if !c.cfg.Dev {
		ck, err := r.Cookie(cookieName)
		if err != nil || ck.Value == "" {
			c.toLogin(w, r, "")
			return nil
		}
		key, idHash, err = c.sessionKey(r.Context(), ck.Value)
		if errors.Is(err, errSessionGone) {
			c.clearCookie(w, r)
			c.toLogin(w, r, "expired")
			return nil
		}
		if err != nil {
			c.fail(w, r, nil, err)
			return nil
		}
		secret = ck.Value
	}
	cl, self, err := c.self(r.Context(), key)
	if errors.Is(err, client.ErrUnauthenticated) {
		c.endSession(w, r)
		c.toLogin(w, r, "expired")
		return nil
	}
	if err != nil {
		c.fail(w, r, nil, err)
		return nil
	}
	return &session{cl: cl, csrf: csrfToken(secret), dev: c.cfg.Dev, self: self, idHash: idHash}
}

// sessionLives reports whether s is still a stored, unexpired session (a
// dev session always is): a live stream, which outlives the request that
// checked its session, asks before each send, so a logout or the expiry
// ends it too. A store that cannot say keeps it (the stream's own read
// says what is wrong).
func (c *Console) sessionLives(ctx context.Context, s *session) bool {
	if s.idHash == nil {
		return true
	}
	_, err := c.cfg.Sessions.ConsoleSessionGet(ctx, s.idHash, c.cfg.Clock.Now().UnixMilli())
	return !task.IsCode(err, task.CodeNotFound)
}

// errSessionGone: the cookie names no session the store keeps (logged
// out, expired, or a cookie of an earlier version, which held the key).
var errSessionGone = errors.New("console: no such session")

// sessionKey is the API key of the session a cookie's value names, opened
// from the store's sealed copy, and the session's key in the store (its
// id's hash); errSessionGone when there is none, an UNAVAILABLE error when
// the store cannot say.
func (c *Console) sessionKey(ctx context.Context, cookie string) (key string, idHash []byte, err error) {
	id, ok := decodeSessionID(cookie)
	if !ok {
		return "", nil, errSessionGone
	}
	cs, err := c.cfg.Sessions.ConsoleSessionGet(ctx, sessionHash(id), c.cfg.Clock.Now().UnixMilli())
	if task.IsCode(err, task.CodeNotFound) {
		return "", nil, errSessionGone
	}
	if err != nil {
		return "", nil, &errandapi.Error{Code: errandapi.CodeUnavailable, Status: http.StatusServiceUnavailable,
			Message: "the console's sessions could not be read: try again"}
	}
	if key, err = openKey(id, cs.Sealed); err != nil {
		return "", nil, errSessionGone
	}
	return key, cs.IDHash, nil
}

// endSession removes the session of the request's cookie from the store,
// on every node (dropSession), and clears the cookie.
func (c *Console) endSession(w http.ResponseWriter, r *http.Request) {
	c.dropSession(r)
	c.clearCookie(w, r)
}

// dropSession removes the session of the request's cookie, if any, from
// the store. A store that fails to remove it leaves it to its expiry
// (logged).
func (c *Console) dropSession(r *http.Request) {
	ck, err := r.Cookie(cookieName)
	if err != nil {
		return
	}
	if id, ok := decodeSessionID(ck.Value); ok {
		if err := c.cfg.Sessions.ConsoleSessionDelete(r.Context(), sessionHash(id)); err != nil {
			c.cfg.Logger.Warn("console session not removed; it ends at its expiry", "reason", err)
		}
	}
}

// toLogin sends the browser to the login page (why "expired" says the
// session ended); the live stream instead gets the event "logout", on
// which its page goes there.
func (c *Console) toLogin(w http.ResponseWriter, r *http.Request, why string) {
	if strings.HasSuffix(r.URL.Path, "/live") {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte("event: logout\ndata: {}\n\n"))
		return
	}
	q := url.Values{}
	if why != "" {
		q.Set("why", why)
	}
	// A page asked for comes back after the login (a deep link, a
	// bookmark); a form posted does not.
	if r.Method == http.MethodGet && r.URL.RequestURI() != Prefix && localPage(r.URL.RequestURI()) {
		q.Set("next", r.URL.RequestURI())
	}
	u := Prefix + "login"
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	http.Redirect(w, r, u, http.StatusSeeOther)
}

// localPage reports whether next is a page of this console to return to
// after the login: a path under Prefix, with no scheme or host and no
// segment that would climb out of it (never a redirect elsewhere).
func localPage(next string) bool {
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || strings.ContainsAny(next, "\\\x00") ||
		!strings.HasPrefix(u.Path, Prefix) || strings.HasPrefix(u.Path, Prefix+"login") {
		return false
	}
	for _, seg := range strings.Split(u.Path, "/") {
		if seg == "." || seg == ".." {
			return false
		}
	}
	return true
}

// page registers a GET page: it runs with the caller's session.
func (c *Console) page(pattern string, h func(w http.ResponseWriter, r *http.Request, s *session)) {
	c.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		if s := c.session(w, r); s != nil {
			h(w, r, s)
		}
	})
}

// action registers a POST that changes something: it needs the session's
// CSRF token in the form, or it is refused with 403 before any call.
func (c *Console) action(pattern string, h func(w http.ResponseWriter, r *http.Request, s *session)) {
	c.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, maxForm)
		s := c.session(w, r)
		if s == nil {
			return
		}
		if err := r.ParseForm(); err != nil {
			if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
				c.fail(w, r, s, &errandapi.Error{Code: errandapi.CodePayloadTooLarge, Status: errandapi.StatusOf(errandapi.CodePayloadTooLarge),
					Message: fmt.Sprintf("the form is over %d MiB as the browser sent it: a task's payload and params are at most 64 KiB each", maxForm>>20)})
				return
			}
			c.fail(w, r, s, &errandapi.Error{Code: errandapi.CodeInvalidArgument, Status: http.StatusBadRequest, Message: "the form could not be read: " + err.Error()})
			return
		}
		if got := r.PostForm.Get(csrfField); !hmac.Equal([]byte(got), []byte(s.csrf)) {
			c.fail(w, r, s, &errandapi.Error{Code: errandapi.CodePermissionDenied, Status: http.StatusForbidden,
				Message: "the form's CSRF token is missing or wrong: reload the page and try again"})
			return
		}
		h(w, r, s)
	})
}

// maxForm bounds a form. A browser sends a form URL-encoded, a byte of
// non-ASCII text or JSON punctuation as three, so a task's payload and
// params (64 KiB each) may take ~400 KiB; past them there is room for a
// paste the API then refuses by name (PAYLOAD_TOO_LARGE naming payload,
// the form shown again as typed) rather than a form that cannot be read.
const maxForm = 4 << 20

func (c *Console) loginPage(w http.ResponseWriter, r *http.Request) {
	if c.cfg.Dev {
		http.Redirect(w, r, Prefix, http.StatusSeeOther)
		return
	}
	v := &view{Title: "Log in"}
	if next := r.URL.Query().Get("next"); localPage(next) {
		v.Data = next
	}
	switch r.URL.Query().Get("why") {
	case "expired":
		if c.sessionHolds(w, r) {
			http.Redirect(w, r, Prefix, http.StatusSeeOther)
			return
		}
		v.Notice = "Your session ended: it expired or was logged out, or its key is no longer accepted. Log in again."
	case "out":
		v.Notice = "You are logged out."
	}
	c.render(w, r, http.StatusOK, "login", v)
}

// sessionHolds checks the cookie of a session said to have ended (the live
// stream's "logout" comes here): a key the API refuses, or that has no
// grant left, has its cookie cleared; a key still accepted (the stream
// lost only its instance) reports true. Only the cookie the browser sent
// is cleared, so a link from elsewhere (which gets no SameSite=Strict
// cookie) cannot log anyone out.
func (c *Console) sessionHolds(w http.ResponseWriter, r *http.Request) bool {
	ck, err := r.Cookie(cookieName)
	if err != nil || ck.Value == "" {
		return false
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	key, _, err := c.sessionKey(ctx, ck.Value)
	if errors.Is(err, errSessionGone) {
		c.clearCookie(w, r)
		return false
	}
	if err != nil {
		return false
	}
	_, self, err := c.self(ctx, key)
	if err == nil && self.Strongest() != "" {
		return true
	}
	if err == nil || errors.Is(err, client.ErrUnauthenticated) {
		c.endSession(w, r)
	}
	return false
}

// login checks the pasted key with the API (GET /v1/keys/self) and, when
// it is accepted, stores a new session (the key sealed under its id) and
// sets the session cookie to the id. A session the browser had is ended.
func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	if c.cfg.Dev {
		http.Redirect(w, r, Prefix, http.StatusSeeOther)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
	key := strings.TrimSpace(r.PostFormValue("key"))
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	_, self, err := c.self(ctx, key)
	if err == nil && self.Strongest() == "" {
		err = &errandapi.Error{Code: errandapi.CodeUnauthenticated, Status: http.StatusUnauthorized, Message: "the key has no grant"}
	}
	next := r.PostFormValue("next")
	if !localPage(next) {
		next = Prefix
	}
	if err != nil {
		v := &view{Title: "Log in", Data: next}
		v.Err = apiError(err)
		if errors.Is(err, client.ErrUnauthenticated) {
			v.Err.Message = "That is not a valid API key (or it was revoked)."
		}
		c.render(w, r, v.Err.Status, "login", v)
		return
	}
	id := newSessionID()
	sealed, err := sealKey(id, key)
	if err == nil {
		now := c.cfg.Clock.Now().UnixMilli()
		err = c.cfg.Sessions.ConsoleSessionCreate(ctx, &store.ConsoleSession{IDHash: sessionHash(id), Sealed: sealed,
			CreatedAt: now, ExpiresAt: now + c.cfg.SessionTTL.Milliseconds()})
	}
	if err != nil {
		v := &view{Title: "Log in", Data: next}
		v.Err = &errandapi.Error{Code: errandapi.CodeUnavailable, Status: http.StatusServiceUnavailable, Message: "the session could not be stored: try again"}
		c.render(w, r, v.Err.Status, "login", v)
		return
	}
	c.dropSession(r)
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: encodeSessionID(id), Path: Prefix, HttpOnly: true, Secure: r.TLS != nil,
		SameSite: http.SameSiteStrictMode, MaxAge: int(c.cfg.SessionTTL.Seconds())})
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// logout ends the session on every node (its row goes) and clears the
// cookie. It needs the CSRF token, so a page elsewhere cannot log the user
// out.
func (c *Console) logout(w http.ResponseWriter, r *http.Request) {
	ck, err := r.Cookie(cookieName)
	if err == nil && !hmac.Equal([]byte(r.PostFormValue(csrfField)), []byte(csrfToken(ck.Value))) {
		http.Error(w, "the form's CSRF token is missing or wrong", http.StatusForbidden)
		return
	}
	c.endSession(w, r)
	http.Redirect(w, r, Prefix+"login?why=out", http.StatusSeeOther)
}

func (c *Console) clearCookie(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: Prefix, HttpOnly: true, Secure: r.TLS != nil,
		SameSite: http.SameSiteStrictMode, MaxAge: -1})
}
