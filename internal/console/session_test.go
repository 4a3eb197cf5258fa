package console_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
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
