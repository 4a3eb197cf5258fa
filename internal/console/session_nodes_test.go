package console_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/errandhq/errand/internal/testkit/stores"
)

// TestSessionAcrossNodes: two serve nodes on one PostgreSQL database share
// the console's sessions: a login on one node holds on the other, and a
// logout on the other ends it on the first at its next request.
func TestSessionAcrossNodes(t *testing.T) {
	open := stores.OpenPostgresShared(t)
	a := newEnv(t, envOptions{store: open(), realClock: true})
	b := newEnv(t, envOptions{store: open(), realClock: true})
	a.fixture()
	ua, ub := a.user(), b.user()
	ua.login(a.full)
	baseA, _ := url.Parse(a.srv.URL + "/console/")
	baseB, _ := url.Parse(b.srv.URL + "/console/")
	ub.hc.Jar.SetCookies(baseB, ua.hc.Jar.Cookies(baseA))
	ub.get("/console/i/jobs/").want(t, http.StatusOK, "Log out")
	if p := ub.post("/console/logout", url.Values{"csrf": {ub.csrf("/console/")}}); p.status != http.StatusSeeOther {
		t.Fatalf("logout on the other node: %d", p.status)
	}
	p := ua.get("/console/i/jobs/")
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/console/login?next=%2Fconsole%2Fi%2Fjobs%2F&why=expired" {
		t.Fatalf("the first node after a logout on the other: %d %s", p.status, p.header.Get("Location"))
	}
}
