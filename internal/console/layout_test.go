package console_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"testing"

	"github.com/errandhq/errand/errandapi"
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

var (
	controlRE = regexp.MustCompile(`<(?:input|select|textarea)\b[^>]*>`)
	idRE      = regexp.MustCompile(`\bid="([^"]+)"`)
)

// TestControlsAreLabelled: every form control a full key sees on the
// queues, queue and settings pages has a label (a <label for> or an
// aria-label); the state tab shown is marked aria-current; a skip link
// leads past the navigation to the page's main part.
func TestControlsAreLabelled(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.fixture()
	u := e.user()
	u.login(e.full)
	for _, path := range []string{"/console/i/jobs/", "/console/i/jobs/q/flaky/", "/console/i/jobs/q/pull/?state=scheduled", "/console/i/jobs/settings", "/console/i/jobs/rules"} {
		body := u.get(path).want(t, http.StatusOK, `<a class="skip" href="#main">`, `<main id="main">`).body
		for _, c := range controlRE.FindAllString(body, -1) {
			if regexp.MustCompile(`type="hidden"`).MatchString(c) || regexp.MustCompile(`aria-label="[^"]+"`).MatchString(c) {
				continue
			}
			m := idRE.FindStringSubmatch(c)
			if m == nil || !regexp.MustCompile(`<label for="`+regexp.QuoteMeta(m[1])+`"`).MatchString(body) {
				t.Errorf("%s: a control without a label: %s", path, c)
			}
		}
	}
	u.get("/console/i/jobs/q/pull/?state=scheduled").want(t, http.StatusOK, `class="on" aria-current="page">scheduled</a>`)
}

// TestModeStates: a queue's page shows the states its mode has — a pull
// queue's leased, a push queue's running, never the other — and the
// queues table marks the other as no state of the queue's.
func TestModeStates(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.fixture()
	u := e.user()
	u.login(e.full)
	u.get("/console/i/jobs/q/pull/").want(t, http.StatusOK, `?state=leased`, `data-state="leased"`).lacks(t, `?state=running`, `data-state="running"`)
	u.get("/console/i/jobs/q/flaky/").want(t, http.StatusOK, `?state=running`, `data-state="running"`).lacks(t, `?state=leased`, `data-state="leased"`)
	u.get("/console/i/jobs/").want(t, http.StatusOK, `title="not a state of a pull queue">–</td>`, `title="not a state of a push queue">–</td>`)
}

// TestNoticesFollowTheState: a task page's notice is said only while the
// task's state bears it out: a crafted or stale ?done= link claims
// nothing.
func TestNoticesFollowTheState(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.fixture()
	u := e.user()
	u.login(e.full)
	hour := 3600.0
	id := e.add("pull", errandapi.NewTask{Delay: &hour})
	base := "/console/i/jobs/t/" + id
	u.get(base+"?done=cancel").want(t, http.StatusOK, "scheduled").lacks(t, "The task is cancelled.")
	u.get(base+"?done=run-leased").want(t, http.StatusOK).lacks(t, "leased to a worker")
	u.get(base+"?done=run").want(t, http.StatusOK, "The task runs now.")
	if _, err := e.api.CancelTask(context.Background(), "jobs", id); err != nil {
		t.Fatal(err)
	}
	u.get(base+"?done=cancel").want(t, http.StatusOK, "The task is cancelled.")
	u.get(base+"?done=retry").want(t, http.StatusOK).lacks(t, "queued again")
	u.get(base+"?done=run").want(t, http.StatusOK).lacks(t, "runs now")
}

// TestCreatedSaysSo: creating a queue or an instance lands on its page
// saying so.
func TestCreatedSaysSo(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.fixture()
	u := e.user()
	u.login(e.full)
	tok := u.csrf("/console/")
	p := u.post("/console/instances", url.Values{"csrf": {tok}, "name": {"fresh"}})
	if p.status != http.StatusSeeOther {
		t.Fatalf("create instance: %d %s", p.status, p.body)
	}
	u.get(p.header.Get("Location")).want(t, http.StatusOK, "The instance is created, with its queue default.")
	p = u.post("/console/i/jobs/queues", url.Values{"csrf": {tok}, "name": {"new1"}, "mode": {"pull"}})
	if p.status != http.StatusSeeOther {
		t.Fatalf("create queue: %d %s", p.status, p.body)
	}
	u.get(p.header.Get("Location")).want(t, http.StatusOK, "The queue is created.")
}
