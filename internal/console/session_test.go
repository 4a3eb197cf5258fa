package console_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestExpiredLoginClearsCookie: the live stream's "logout" sends the page
// to /console/login?why=expired; there a revoked key's cookie is cleared
// at once, a key still accepted goes back to the instances, and a request
// without the cookie (a link from elsewhere) clears nothing.
func TestExpiredLoginClearsCookie(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.fixture()
	k := e.key(e.org, "read:jobs")
	u := e.user()
	u.login(k)

	p := u.get("/console/login?why=expired")
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/console/" || p.header.Get("Set-Cookie") != "" {
		t.Fatalf("a key still accepted: %d %s %q", p.status, p.header.Get("Location"), p.header.Get("Set-Cookie"))
	}

	e.revoke(k)
	p = u.get("/console/login?why=expired").want(t, http.StatusOK, "no longer accepted")
	if ck := p.header.Get("Set-Cookie"); !strings.Contains(ck, "errand_console=;") || !strings.Contains(ck, "Max-Age=0") {
		t.Fatalf("the revoked key's cookie is not cleared: %q", ck)
	}
	if p = u.get("/console/login?why=expired").want(t, http.StatusOK, "no longer accepted"); p.header.Get("Set-Cookie") != "" {
		t.Fatalf("no cookie sent, yet one is set: %q", p.header.Get("Set-Cookie"))
	}
}

// TestLoginReturnsToThePageAsked: a page asked for without a session comes
// back after the login; a next that is not a page of the console goes to
// the instances instead (never elsewhere); a logout says so.
func TestLoginReturnsToThePageAsked(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.fixture()
	u := e.user()
	page := "/console/i/jobs/q/pull/?state=scheduled"
	p := u.get(page)
	want := "/console/login?next=" + url.QueryEscape(page)
	if p.status != http.StatusSeeOther || p.header.Get("Location") != want {
		t.Fatalf("a page without a session: %d to %q, want %q", p.status, p.header.Get("Location"), want)
	}
	u.get(want).want(t, http.StatusOK, `name="next" value="/console/i/jobs/q/pull/?state=scheduled"`)
	p = u.post("/console/login", url.Values{"key": {e.full}, "next": {page}})
	if p.status != http.StatusSeeOther || p.header.Get("Location") != page {
		t.Fatalf("login with next: %d to %q", p.status, p.header.Get("Location"))
	}
	for _, next := range []string{"//evil.example/", "https://evil.example/console/", "/console/../x", "/elsewhere", "/console/login", `/console/\evil`} {
		other := e.user()
		p := other.post("/console/login", url.Values{"key": {e.full}, "next": {next}})
		if p.status != http.StatusSeeOther || p.header.Get("Location") != "/console/" {
			t.Errorf("login with next %q: %d to %q, want /console/", next, p.status, p.header.Get("Location"))
		}
		e.user().get("/console/login?next="+url.QueryEscape(next)).want(t, http.StatusOK).lacks(t, `name="next"`)
	}
	p = u.post("/console/logout", url.Values{"csrf": {u.csrf("/console/")}})
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/console/login?why=out" {
		t.Fatalf("logout: %d to %q", p.status, p.header.Get("Location"))
	}
	u.get("/console/login?why=out").want(t, http.StatusOK, "You are logged out.")
}

// TestSessionKeptOnTheServer: the cookie holds a random session id, never
// the key, and the store holds the key only sealed; a copy of the cookie
// works while the session lives, and no longer once the session logs out
// (its row goes, for every node), nor after SessionTTL on the node's
// clock; a cookie of an earlier version (the key itself) is no session.
// Each ended session's request clears its cookie and goes to the login
// page, saying why.
func TestSessionKeptOnTheServer(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.fixture()
	u := e.user()
	u.login(e.full)
	base, _ := url.Parse(e.srv.URL + "/console/")
	cookie := func(jar http.CookieJar) *http.Cookie {
		for _, c := range jar.Cookies(base) {
			if c.Name == "errand_console" {
				return c
			}
		}
		t.Fatal("no session cookie")
		return nil
	}
	ck := cookie(u.hc.Jar)
	id, err := base64.RawURLEncoding.DecodeString(ck.Value)
	if err != nil || len(id) != 32 || strings.Contains(ck.Value, e.full) || strings.Contains(ck.Value, strings.TrimPrefix(e.full, "errk_")) {
		t.Fatalf("the cookie %q is no random session id (%v)", ck.Value, err)
	}
	h := sha256.Sum256(id)
	cs, err := e.st.ConsoleSessionGet(t.Context(), h[:], e.clock.Now().UnixMilli())
	if err != nil {
		t.Fatalf("the session in the store: %v", err)
	}
	if bytes.Contains(cs.Sealed, []byte(e.full)) || bytes.Contains(cs.Sealed, []byte(strings.TrimPrefix(e.full, "errk_"))) {
		t.Fatal("the store holds the key in the clear")
	}
	if got := cs.ExpiresAt - cs.CreatedAt; got != (12 * time.Hour).Milliseconds() {
		t.Fatalf("the session lasts %d ms, want 12 h", got)
	}

	// A copy of the cookie (another browser) works while the session lives.
	copied := e.user()
	copied.hc.Jar.SetCookies(base, []*http.Cookie{{Name: "errand_console", Value: ck.Value, Path: "/console/"}})
	copied.get("/console/").want(t, http.StatusOK, "Log out")
	// The logout ends it for the copy too.
	if p := u.post("/console/logout", url.Values{"csrf": {u.csrf("/console/")}}); p.status != http.StatusSeeOther {
		t.Fatalf("logout: %d", p.status)
	}
	ended := func(who *user) {
		t.Helper()
		p := who.get("/console/i/jobs/")
		if p.status != http.StatusSeeOther || p.header.Get("Location") != "/console/login?next=%2Fconsole%2Fi%2Fjobs%2F&why=expired" ||
			!strings.Contains(p.header.Get("Set-Cookie"), "Max-Age=0") {
			t.Fatalf("an ended session: %d %s %q", p.status, p.header.Get("Location"), p.header.Get("Set-Cookie"))
		}
	}
	ended(copied)
	if _, err := e.st.ConsoleSessionGet(t.Context(), h[:], e.clock.Now().UnixMilli()); err == nil {
		t.Fatal("the session is still stored after the logout")
	}

	// A session ends at its expiry, on the node's clock.
	u.login(e.full)
	u.get("/console/").want(t, http.StatusOK, "Log out")
	e.clock.Advance(12*time.Hour - time.Millisecond)
	u.get("/console/").want(t, http.StatusOK, "Log out")
	e.clock.Advance(time.Millisecond)
	ended(u)

	// A login from a browser that has a session ends that one.
	u.login(e.full)
	first := cookie(u.hc.Jar).Value
	u.login(e.full)
	if again := cookie(u.hc.Jar).Value; again == first {
		t.Fatal("a second login kept the session id")
	}
	firstID, _ := base64.RawURLEncoding.DecodeString(first)
	fh := sha256.Sum256(firstID)
	if _, err := e.st.ConsoleSessionGet(t.Context(), fh[:], e.clock.Now().UnixMilli()); err == nil {
		t.Fatal("the session a second login replaced is still stored")
	}

	// The key itself, as an earlier version's cookie held it, is no session.
	old := e.user()
	old.hc.Jar.SetCookies(base, []*http.Cookie{{Name: "errand_console", Value: e.full, Path: "/console/"}})
	ended(old)
}

// TestLogoutEndsLiveStream: a live stream outlives the request that
// checked its session, so it asks the store before each send: once the
// session logs out (here, from another browser sharing the cookie) its
// next send is the event "logout".
func TestLogoutEndsLiveStream(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.fixture()
	u := e.user()
	u.login(e.full)
	// The stream's tick is 2 s after it opens. The usage flush's timer is
	// 2 s after the node's start, so the clock moves a millisecond first
	// (nothing is due before a second): waiting for a timer at the tick's
	// instant then waits for the stream's own, not for one already there.
	e.clock.Advance(time.Millisecond)
	next := u.eventNames("/console/i/jobs/live")
	if name := next(); name != "counts" {
		t.Fatalf("first event %s", name)
	}
	// Another browser with the same cookie logs out.
	base, _ := url.Parse(e.srv.URL + "/console/")
	other := e.user()
	other.hc.Jar.SetCookies(base, u.hc.Jar.Cookies(base))
	if p := other.post("/console/logout", url.Values{"csrf": {other.csrf("/console/")}}); p.status != http.StatusSeeOther {
		t.Fatalf("logout: %d", p.status)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := e.clock.WaitForSleeperAt(ctx, e.clock.Now().Add(2*time.Second)); err != nil {
		t.Fatal("the stream never waited for its next send")
	}
	e.clock.Advance(2 * time.Second)
	if name := next(); name != "logout" {
		t.Fatalf("after the logout: %s, want logout", name)
	}
}
