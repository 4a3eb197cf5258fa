package console_test

import (
	"net/http"
	"regexp"
	"testing"
)

// TestNotFoundKeepsSession: a path under an instance that is no console
// page is 404 with the page's header whole: the instance's navigation and
// Log out.
func TestNotFoundKeepsSession(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.fixture()
	u := e.user()
	u.login(e.full)
	for _, path := range []string{"/console/i/jobs/q/default/confirm/bogus", "/console/i/jobs/confirm/bogus", "/console/i/jobs/nope/thing"} {
		u.get(path).want(t, http.StatusNotFound, "NOT_FOUND", `id="nav-queues"`, `id="nav-settings"`, `id="logout"`)
	}
	u.get("/console/nope").want(t, http.StatusNotFound, "NOT_FOUND")
	// The page does not repeat the path: a link cannot make it speak.
	if p := u.get("/console/Security%20notice%3A%20visit%20evil.example").want(t, http.StatusNotFound, "NOT_FOUND"); regexp.MustCompile(`evil\.example`).MatchString(p.body) {
		t.Fatal("the 404 page repeats its path")
	}
}

var iconRE = regexp.MustCompile(`<link rel="icon" href="([^"]+)"`)

// TestFavicon: every page names its icon, a file of the console (the CSP's
// img-src 'self'), so the browser does not ask for /favicon.ico.
func TestFavicon(t *testing.T) {
	e := newEnv(t, envOptions{})
	u := e.user()
	m := iconRE.FindStringSubmatch(u.get("/console/login").want(t, http.StatusOK).body)
	if m == nil {
		t.Fatal("the page names no icon")
	}
	p := u.get(m[1]).want(t, http.StatusOK, "<svg")
	if ct := p.header.Get("Content-Type"); ct != "image/svg+xml" {
		t.Fatalf("icon %s: %s", m[1], ct)
	}
}
