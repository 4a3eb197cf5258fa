package console_test

import (
	"net/http"
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
