package console_test

import (
	"bufio"
	"context"
	"encoding/json"
	"html"
	"net/http"
	"net/url"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// TestSecurityHeaders: every console answer (the login page, a page, a
// static file, a 404) forbids framing and inline script, and nothing is
// stored by a cache.
func TestSecurityHeaders(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.fixture()
	u := e.user()
	u.login(e.full)
	for _, path := range []string{"/console/login", "/console/", "/console/i/jobs/q/pull/", "/console/static/console.js", "/console/nope"} {
		p := u.get(path)
		h := p.header
		if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") ||
			!strings.Contains(csp, "default-src 'none'") || strings.Contains(csp, "unsafe-inline") {
			t.Fatalf("%s: CSP %q", path, csp)
		}
		if h.Get("X-Frame-Options") != "DENY" || h.Get("Cache-Control") != "no-store" || h.Get("X-Content-Type-Options") != "nosniff" {
			t.Fatalf("%s: headers %v", path, h)
		}
		if strings.Contains(p.body, "<script>") || strings.Contains(p.body, " style=") {
			t.Fatalf("%s: an inline script or style:\n%s", path, p.body)
		}
	}
}

// TestLogin: no session goes to the login page; a wrong key is refused
// there; a good one sets an HttpOnly, SameSite=Strict cookie scoped to
// the console; logout needs the CSRF token and clears the cookie.
func TestLogin(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.fixture()
	u := e.user()
	if p := u.get("/console/"); p.status != http.StatusSeeOther || p.header.Get("Location") != "/console/login" {
		t.Fatalf("no session: %d %s", p.status, p.header.Get("Location"))
	}
	u.post("/console/login", url.Values{"key": {"errk_" + strings.Repeat("0", 64)}}).want(t, http.StatusUnauthorized, "not a valid API key")
	u.post("/console/login", url.Values{"key": {"<script>x</script>"}}).want(t, http.StatusUnauthorized).lacks(t, "<script>x")
	// A key split by a space or a line break (a bad paste) cannot travel
	// in a header: it is not a valid key (it panicked the handler).
	u.post("/console/login", url.Values{"key": {"errk_abc def"}}).want(t, http.StatusUnauthorized, "not a valid API key")
	u.post("/console/login", url.Values{"key": {"errk_abc\ndef"}}).want(t, http.StatusUnauthorized, "not a valid API key")

	resp, err := u.hc.PostForm(e.srv.URL+"/console/login", url.Values{"key": {e.full}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cookies := resp.Cookies()
	if len(cookies) != 1 {
		t.Fatalf("cookies %v", cookies)
	}
	ck := cookies[0]
	if !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Path != "/console/" || ck.Secure || ck.MaxAge <= 0 {
		t.Fatalf("cookie %+v", ck)
	}
	u.get("/console/").want(t, http.StatusOK, `href="/console/i/jobs/"`, "Log out")

	u.post("/console/logout", url.Values{"csrf": {"forged"}}).want(t, http.StatusForbidden)
	u.get("/console/").want(t, http.StatusOK)
	tok := u.csrf("/console/")
	if p := u.post("/console/logout", url.Values{"csrf": {tok}}); p.status != http.StatusSeeOther {
		t.Fatalf("logout: %d", p.status)
	}
	if p := u.get("/console/"); p.status != http.StatusSeeOther {
		t.Fatalf("after logout: %d", p.status)
	}
}

// TestSecureCookieOverTLS: served over TLS, the session cookie is Secure.
func TestSecureCookieOverTLS(t *testing.T) {
	e := newEnv(t, envOptions{tls: true})
	resp, err := e.user().hc.PostForm(e.srv.URL+"/console/login", url.Values{"key": {e.full}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if cs := resp.Cookies(); len(cs) != 1 || !cs[0].Secure || !cs[0].HttpOnly {
		t.Fatalf("cookies %+v", cs)
	}
}

// TestRevokedKeyLogsOut: once its key is revoked, the session's next
// request clears the cookie and goes to the login page, saying why.
func TestRevokedKeyLogsOut(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.fixture()
	k := e.key(e.org, "read:jobs")
	u := e.user()
	u.login(k)
	u.get("/console/i/jobs/").want(t, http.StatusOK)
	e.revoke(k)
	p := u.get("/console/i/jobs/")
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/console/login?next=%2Fconsole%2Fi%2Fjobs%2F&why=expired" {
		t.Fatalf("revoked: %d %s", p.status, p.header.Get("Location"))
	}
	if !strings.Contains(p.header.Get("Set-Cookie"), "Max-Age=0") {
		t.Fatalf("cookie not cleared: %q", p.header.Get("Set-Cookie"))
	}
	u.get("/console/login?why=expired").want(t, http.StatusOK, "no longer accepted")
	// A form posted after that goes to the login page too, and the live
	// stream tells its page to go there.
	if p := u.post("/console/i/jobs/q/pull/pause", url.Values{"csrf": {"x"}}); p.status != http.StatusSeeOther || p.header.Get("Location") != "/console/login" {
		t.Fatalf("a post without a session: %d %s", p.status, p.header.Get("Location"))
	}
	u.get("/console/i/jobs/live").want(t, http.StatusOK, "event: logout")
}

// TestCSRF: a state-changing request without the session's token, or with
// another session's, is refused before any call; with it, it is made.
func TestCSRF(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.fixture()
	id := e.add("pull", errandapi.NewTask{Payload: json.RawMessage(`{}`)})
	u, other := e.user(), e.user()
	u.login(e.full)
	other.login(e.key(e.org, "full:*"))
	path := "/console/i/jobs/t/" + id + "/cancel"
	u.post(path, nil).want(t, http.StatusForbidden, "CSRF token")
	u.post(path, url.Values{"csrf": {other.csrf("/console/i/jobs/t/" + id)}}).want(t, http.StatusForbidden, "CSRF token")
	for _, p := range []string{"/console/i/jobs/q/pull/purge", "/console/i/jobs/settings/webhook-key/rotate", "/console/instances"} {
		u.post(p, url.Values{"csrf": {"x"}, "confirm": {"true"}, "name": {"fresh"}}).want(t, http.StatusForbidden, "CSRF token")
	}
	if tk, _ := e.api.GetTask(context.Background(), "jobs", id); tk.State != errandapi.StateScheduled {
		t.Fatalf("a forged cancel changed the task: %s", tk.State)
	}
	p := u.post(path, url.Values{"csrf": {u.csrf("/console/i/jobs/t/" + id)}})
	if p.status != http.StatusSeeOther {
		t.Fatalf("cancel with the token: %d %s", p.status, p.body)
	}
	e.waitState(id, errandapi.StateCancelled)
}

// TestGrants: a read-only key sees no button or form that writes, and a
// write it forces anyway is the API's PERMISSION_DENIED; a write key sees
// the task buttons but not the queue's or the instance's settings; a key
// of another organization gets NOT_FOUND for the instance, as in the API.
func TestGrants(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.fixture()
	id := e.add("pull", errandapi.NewTask{Payload: json.RawMessage(`{}`)})
	failed := e.failed()

	ro := e.user()
	ro.login(e.key(e.org, "read:jobs"))
	ro.get("/console/i/jobs/q/pull/").want(t, http.StatusOK, id).lacks(t, `id="add-task"`, `id="pause"`, `id="purge"`, `id="delete"`)
	ro.get("/console/i/jobs/t/"+id).want(t, http.StatusOK).lacks(t, `id="cancel"`, `id="run"`, `id="retry"`)
	ro.get("/console/i/jobs/settings").want(t, http.StatusOK, "retentionDays").lacks(t, `id="settings-form"`, `id="reveal-key"`, `id="rotate-key"`)
	ro.get("/console/i/jobs/q/flaky/dead").want(t, http.StatusOK, failed).lacks(t, `id="replay-selected"`, `type="checkbox"`)
	ro.get("/console/").lacks(t, `id="create-instance"`)
	ro.get("/console/i/jobs/").lacks(t, `id="create-queue"`)
	tok := ro.csrf("/console/i/jobs/t/" + id)
	ro.post("/console/i/jobs/t/"+id+"/cancel", url.Values{"csrf": {tok}}).want(t, http.StatusForbidden, "PERMISSION_DENIED")
	ro.post("/console/i/jobs/q/pull/tasks", url.Values{"csrf": {tok}, "payload": {`{}`}}).want(t, http.StatusForbidden, "PERMISSION_DENIED")
	ro.post("/console/i/jobs/settings/webhook-key", url.Values{"csrf": {tok}, "confirm": {"true"}}).want(t, http.StatusForbidden, "PERMISSION_DENIED").lacks(t, "whsec_")
	ro.post("/console/i/jobs/q/flaky/replay", url.Values{"csrf": {tok}, "id": {failed}}).want(t, http.StatusForbidden, "PERMISSION_DENIED")
	if tk, _ := e.api.GetTask(context.Background(), "jobs", id); tk.State != errandapi.StateScheduled {
		t.Fatalf("a refused cancel changed the task: %s", tk.State)
	}

	rw := e.user()
	rw.login(e.key(e.org, "write:jobs"))
	rw.get("/console/i/jobs/t/"+id).want(t, http.StatusOK, `id="cancel"`, `id="run"`)
	rw.get("/console/i/jobs/q/pull/").want(t, http.StatusOK, `id="add-task"`).lacks(t, `id="purge"`, `id="pause"`)
	rw.get("/console/i/jobs/settings").lacks(t, `id="reveal-key"`)

	// Another organization's key, even full:*, does not see jobs.
	stranger := e.user()
	stranger.login(e.key("globex", "full:*"))
	stranger.get("/console/").lacks(t, "/console/i/jobs/")
	stranger.get("/console/i/jobs/").want(t, http.StatusNotFound, "NOT_FOUND")
	stranger.get("/console/i/jobs/t/"+id).want(t, http.StatusNotFound, "NOT_FOUND")
	tok = stranger.csrf("/console/")
	stranger.post("/console/i/jobs/t/"+id+"/cancel", url.Values{"csrf": {tok}}).want(t, http.StatusNotFound)
}

// TestCreateInstanceForm: the form to create an instance is offered as the
// API allows a create: to full:* with any name; to full:jobs only while
// jobs does not exist, and then with jobs alone.
func TestCreateInstanceForm(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.fixture()
	// full:jobs may create only jobs: no form while jobs exists; once it
	// is deleted the form offers jobs alone, and creates it.
	fj := e.user()
	fj.login(e.key(e.org, "full:jobs"))
	fj.get("/console/").want(t, http.StatusOK, "/console/i/jobs/").lacks(t, `id="create-instance"`)
	fa := e.user()
	fa.login(e.key(e.org, "full:*"))
	fa.get("/console/").want(t, http.StatusOK, `id="create-instance"`, `<input id="instance-name"`)
	if err := e.api.DeleteInstance(context.Background(), "jobs"); err != nil {
		t.Fatal(err)
	}
	p := fj.get("/console/").want(t, http.StatusOK, `id="create-instance"`, `<option>jobs</option>`).lacks(t, `<input id="instance-name"`)
	fj.post("/console/instances", url.Values{"csrf": {csrfRE.FindStringSubmatch(p.body)[1]}, "name": {"jobs"}}).want(t, http.StatusSeeOther)
	fj.get("/console/").want(t, http.StatusOK, "/console/i/jobs/").lacks(t, `id="create-instance"`)

	ro := e.user()
	ro.login(e.key(e.org, "read:*", "write:*"))
	ro.get("/console/").want(t, http.StatusOK).lacks(t, `id="create-instance"`)
}

// TestTaskPage: one task with its payload pretty-printed and escaped, its
// params, every attempt; run, cancel and retry show the API's refusal at
// its status.
func TestTaskPage(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.fixture()
	u := e.user()
	u.login(e.full)
	running := e.leased()
	tok := u.csrf("/console/i/jobs/t/" + running)
	u.post("/console/i/jobs/t/"+running+"/cancel", url.Values{"csrf": {tok}}).
		want(t, http.StatusBadRequest, `id="refusal"`, "RUNNING_NOT_CANCELLABLE", "the task is leased; it is left leased")
	u.post("/console/i/jobs/t/"+running+"/retry", url.Values{"csrf": {tok}}).want(t, http.StatusBadRequest, "NOT_RETRYABLE")
	u.post("/console/i/jobs/t/"+running+"/nope", url.Values{"csrf": {tok}}).want(t, http.StatusNotFound)

	failed := e.failed()
	u.get("/console/i/jobs/t/"+failed).want(t, http.StatusOK, "&#34;kind&#34;: &#34;receipt&#34;", "boom &lt;b&gt;not bold&lt;/b&gt;", `id="attempts"`).
		lacks(t, "<b>not bold</b>")
	if p := u.post("/console/i/jobs/t/"+failed+"/retry", url.Values{"csrf": {tok}}); p.status != http.StatusSeeOther {
		t.Fatalf("retry: %d %s", p.status, p.body)
	}
	tk := e.waitState(failed, errandapi.StateSucceeded)
	p := u.get("/console/i/jobs/t/"+failed).want(t, http.StatusOK, "succeeded", "&#34;ok&#34;: true")
	if strings.Count(p.body, "<td class=\"num\">") < 2*len(tk.Attempts) {
		t.Fatalf("not every attempt is listed:\n%s", p.body)
	}

	// HTML in a payload, a name and params is text.
	x := e.add("pull", errandapi.NewTask{Name: "n-script", Payload: json.RawMessage(`{"html":"<script>alert(1)</script>"}`),
		Params: json.RawMessage(`{"p":"<img src=x onerror=alert(2)>"}`)})
	p = u.get("/console/i/jobs/t/"+x).want(t, http.StatusOK, "&lt;script&gt;alert(1)&lt;/script&gt;", "&lt;img src=x onerror=alert(2)&gt;")
	p.lacks(t, "<script>alert", "<img src=x")
	u.get("/console/i/jobs/t/NOPE").want(t, http.StatusNotFound, "NOT_FOUND")
}

// TestAddTask: the add form adds a task through the API, with a priority
// when one is given; a refusal (a payload that is not JSON, a name taken,
// a priority out of range) is shown with the form as sent.
func TestAddTask(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.fixture()
	u := e.user()
	u.login(e.full)
	tok := u.csrf("/console/i/jobs/q/pull/")
	p := u.post("/console/i/jobs/q/pull/tasks", url.Values{"csrf": {tok}, "name": {"first"}, "payload": {`{"a": 1}`}, "delay": {"60"}})
	if p.status != http.StatusSeeOther || !strings.HasPrefix(p.header.Get("Location"), "/console/i/jobs/t/") {
		t.Fatalf("add: %d %s %s", p.status, p.header.Get("Location"), p.body)
	}
	u.get(p.header.Get("Location")).want(t, http.StatusOK, "The task is added.", "first", "scheduled")
	u.post("/console/i/jobs/q/pull/tasks", url.Values{"csrf": {tok}, "name": {"first"}, "payload": {`{}`}}).want(t, http.StatusConflict, "TASK_EXISTS")
	u.post("/console/i/jobs/q/pull/tasks", url.Values{"csrf": {tok}, "payload": {`{"a": `}}).want(t, http.StatusBadRequest, "payload: is not valid JSON", "{&#34;a&#34;: ")
	u.post("/console/i/jobs/q/default/tasks", url.Values{"csrf": {tok}, "payload": {`{}`}}).want(t, http.StatusBadRequest, "NO_TARGET")
	u.post("/console/i/jobs/q/pull/tasks", url.Values{"csrf": {tok}, "name": {"bad name!"}}).want(t, http.StatusBadRequest, "INVALID_ARGUMENT", "name")
	// A priority: given to the task; out of range or not whole, refused
	// naming the field with the form as sent.
	p = u.post("/console/i/jobs/q/pull/tasks", url.Values{"csrf": {tok}, "name": {"urgent"}, "priority": {"8"}})
	if p.status != http.StatusSeeOther {
		t.Fatalf("add with a priority: %d %s", p.status, p.body)
	}
	u.get(p.header.Get("Location")).want(t, http.StatusOK, `<th>priority</th><td id="priority">8<`)
	u.get("/console/i/jobs/q/pull/").want(t, http.StatusOK, `<span class="hint" title="priority">p8</span>`)
	u.post("/console/i/jobs/q/pull/tasks", url.Values{"csrf": {tok}, "name": {"keep-me"}, "priority": {"12"}}).
		want(t, http.StatusBadRequest, "INVALID_ARGUMENT", "priority: must be 0–9", `value="keep-me"`, `value="12"`)
	u.post("/console/i/jobs/q/pull/tasks", url.Values{"csrf": {tok}, "priority": {"high"}}).
		want(t, http.StatusBadRequest, "INVALID_ARGUMENT", "priority: ")
}

// TestAddTaskFormSizes: a task the API takes is taken from the form too,
// however the browser encodes it (CJK text is three bytes of UTF-8 and
// nine URL-encoded); a payload past the API's cap is refused naming
// payload with the form shown again; a form past the console's own bound
// says what is too large.
func TestAddTaskFormSizes(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.fixture()
	u := e.user()
	u.login(e.full)
	tok := u.csrf("/console/i/jobs/q/pull/")
	payload := `{"text":"` + strings.Repeat("漢", 19_000) + `"}` // ~57 KB
	params := `{"p":"` + strings.Repeat("ü", 27_000) + `"}`     // ~54 KB
	p := u.post("/console/i/jobs/q/pull/tasks", url.Values{"csrf": {tok}, "payload": {payload}, "params": {params}})
	if p.status != http.StatusSeeOther {
		t.Fatalf("a task under the caps, ~%d KiB URL-encoded: %d %s", len(url.Values{"payload": {payload}, "params": {params}}.Encode())>>10, p.status, p.body)
	}
	big := `{"text":"` + strings.Repeat("x", 1<<20) + `"}`
	u.post("/console/i/jobs/q/pull/tasks", url.Values{"csrf": {tok}, "name": {"kept"}, "payload": {big}}).
		want(t, http.StatusBadRequest, "PAYLOAD_TOO_LARGE", "payload", `value="kept"`)
	huge := strings.Repeat("漢", 2<<20)
	u.post("/console/i/jobs/q/pull/tasks", url.Values{"csrf": {tok}, "payload": {huge}}).
		want(t, http.StatusBadRequest, "PAYLOAD_TOO_LARGE", "the form is over 4 MiB")
}

// TestQueuePages: an instance's queues with counts; a queue's tasks by
// state and by name, a page at a time; pause and resume; purge and delete
// only after the confirmation page.
func TestQueuePages(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.fixture()
	u := e.user()
	u.login(e.full)
	var ids []string
	for i := range 55 {
		nt := errandapi.NewTask{Payload: json.RawMessage(`{}`)}
		if i == 3 {
			nt.Name = "needle"
		}
		ids = append(ids, e.add("pull", nt))
	}
	u.get("/console/i/jobs/").want(t, http.StatusOK, `data-queue="pull"`, `data-state="scheduled">55<`)
	first := u.get("/console/i/jobs/q/pull/").want(t, http.StatusOK, `id="next-page"`)
	if n := strings.Count(first.body, `/console/i/jobs/t/`); n != 50 {
		t.Fatalf("first page lists %d tasks", n)
	}
	next := nextLink(first.body)
	second := u.get(next).want(t, http.StatusOK, `id="first-page"`).lacks(t, `id="next-page"`)
	if n := strings.Count(second.body, `/console/i/jobs/t/`); n != 5 {
		t.Fatalf("second page lists %d tasks", n)
	}
	u.get("/console/i/jobs/q/pull/?name=needle").want(t, http.StatusOK, ids[3]).lacks(t, ids[4])
	u.get("/console/i/jobs/q/pull/?state=failed").want(t, http.StatusOK, "No task here.")
	u.get("/console/i/jobs/q/pull/?state=bogus").want(t, http.StatusBadRequest, "INVALID_ARGUMENT", "state")
	u.get("/console/i/jobs/q/pull/?cursor=garbage").want(t, http.StatusBadRequest, "INVALID_ARGUMENT")
	u.get("/console/i/jobs/q/nope/").want(t, http.StatusNotFound, "NOT_FOUND")

	tok := u.csrf("/console/i/jobs/q/pull/")
	// Each action says what it did on the page it goes back to.
	back := func(p page, want string) string {
		t.Helper()
		if p.status != http.StatusSeeOther || !strings.HasPrefix(p.header.Get("Location"), want) {
			t.Fatalf("went to %d %q, want %q", p.status, p.header.Get("Location"), want)
		}
		return p.header.Get("Location")
	}
	paused := back(u.post("/console/i/jobs/q/pull/pause", url.Values{"csrf": {tok}}), "/console/i/jobs/q/pull/?done=paused")
	u.get(paused).want(t, http.StatusOK, `id="paused"`, `id="resume"`, "The queue is paused: it delivers and leases nothing")
	resumed := back(u.post("/console/i/jobs/q/pull/resume", url.Values{"csrf": {tok}}), "/console/i/jobs/q/pull/?done=resumed")
	u.get(resumed).want(t, http.StatusOK, "The queue is resumed.").lacks(t, `id="paused"`)
	// Only a number is read from the URL.
	u.get("/console/i/jobs/q/pull/?done=purged&n=words").want(t, http.StatusOK, "Purged: its tasks removed").lacks(t, "words")

	// Purge without the confirmation is the API's CONFIRM_REQUIRED.
	u.post("/console/i/jobs/q/pull/purge", url.Values{"csrf": {tok}}).want(t, http.StatusBadRequest, "CONFIRM_REQUIRED")
	u.get("/console/i/jobs/q/pull/confirm/purge").want(t, http.StatusOK, "Remove every task of queue pull", `name="confirm" value="true"`)
	purged := back(u.post("/console/i/jobs/q/pull/purge", url.Values{"csrf": {tok}, "confirm": {"true"}}), "/console/i/jobs/q/pull/?done=purged&n=55")
	u.get(purged).want(t, http.StatusOK, "No task here.", "Purged: 55 tasks removed; the queue and its settings stay.")
	u.get("/console/i/jobs/q/pull/confirm/delete").want(t, http.StatusOK, "Delete queue pull")
	u.get("/console/i/jobs/q/pull/confirm/bogus").want(t, http.StatusNotFound)
	u.post("/console/i/jobs/q/default/delete", url.Values{"csrf": {tok}, "confirm": {"true"}}).want(t, http.StatusBadRequest, "cannot be deleted")
	deleted := back(u.post("/console/i/jobs/q/pull/delete", url.Values{"csrf": {tok}, "confirm": {"true"}}), "/console/i/jobs/?done=deleted&n=0")
	u.get(deleted).want(t, http.StatusOK, "The queue is deleted, with 0 tasks.").lacks(t, "/console/i/jobs/q/pull/")
	u.get("/console/i/jobs/q/pull/").want(t, http.StatusNotFound)

	// Create a queue and an instance from their forms.
	if p := u.post("/console/i/jobs/queues", url.Values{"csrf": {tok}, "name": {"made"}, "mode": {"pull"}}); p.status != http.StatusSeeOther {
		t.Fatalf("create queue: %d %s", p.status, p.body)
	}
	u.post("/console/i/jobs/queues", url.Values{"csrf": {tok}, "name": {"made"}, "mode": {"pull"}}).want(t, http.StatusConflict, "QUEUE_EXISTS")
	u.post("/console/instances", url.Values{"csrf": {tok}, "name": {"fresh"}})
	u.get("/console/").want(t, http.StatusOK, `/console/i/fresh/`)
}

// TestQueueSettings: the settings form (full grant) changes a queue
// through the API's PATCH, an empty optional field clears it, and the
// API's refusal names the field; a write key sees the settings as a table.
func TestQueueSettings(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.fixture()
	u := e.user()
	u.login(e.full)
	tok := u.csrf("/console/i/jobs/q/flaky/")
	form := func(change map[string]string) url.Values {
		v := url.Values{"csrf": {tok}, "targetKind": {"function"}, "target": {"app/flaky"}, "ratePerSecond": {"5"},
			"maxConcurrent": {""}, "maxAttempts": {"3"}, "minBackoffSeconds": {"1.5"}, "maxBackoffSeconds": {"60"},
			"maxDoublings": {"4"}, "maxAgeSeconds": {""}, "deadlineSeconds": {"30"}, "deadLetterQueue": {"pull"}}
		for k, x := range change {
			v.Set(k, x)
		}
		return v
	}
	p := u.post("/console/i/jobs/q/flaky/settings", form(nil))
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/console/i/jobs/q/flaky/?done=saved" {
		t.Fatalf("save: %d %q %s", p.status, p.header.Get("Location"), p.body)
	}
	u.get(p.header.Get("Location")).want(t, http.StatusOK, "Settings saved.")
	q, err := e.api.GetQueue(context.Background(), "jobs", "flaky")
	if err != nil {
		t.Fatal(err)
	}
	if q.MaxAttempts != 3 || *q.RatePerSecond != 5 || q.MaxConcurrent != nil || q.MinBackoffSeconds != 1.5 || q.MaxDoublings != 4 ||
		q.DeadlineSeconds != 30 || *q.DeadLetterQueue != "pull" || q.TargetControl || q.Target.Function != "app/flaky" {
		t.Fatalf("queue after save: %+v", q)
	}
	u.get("/console/i/jobs/q/flaky/").want(t, http.StatusOK, `id="qs-attempts" name="maxAttempts" inputmode="numeric" value="3"`)
	u.post("/console/i/jobs/q/flaky/settings", form(map[string]string{"maxAttempts": "0"})).want(t, http.StatusBadRequest, "INVALID_ARGUMENT", "maxAttempts")
	u.post("/console/i/jobs/q/flaky/settings", form(map[string]string{"deadLetterQueue": "nope"})).want(t, http.StatusBadRequest, "deadLetterQueue")
	u.post("/console/i/jobs/q/flaky/settings", form(map[string]string{"deadlineSeconds": "ten"})).want(t, http.StatusBadRequest, "deadlineSeconds: must be a number")
	if p := u.post("/console/i/jobs/q/flaky/settings", form(map[string]string{"ratePerSecond": "", "deadLetterQueue": "", "targetControl": "true"})); p.status != http.StatusSeeOther {
		t.Fatalf("clear: %d %s", p.status, p.body)
	}
	if q, _ = e.api.GetQueue(context.Background(), "jobs", "flaky"); q.RatePerSecond != nil || q.DeadLetterQueue != nil || !q.TargetControl {
		t.Fatalf("queue after clearing: %+v", q)
	}

	rate := 1e6
	if _, err := e.api.UpdateQueue(context.Background(), "jobs", "flaky", errandapi.QueueRequest{RatePerSecond: errandapi.Value(rate)}); err != nil {
		t.Fatal(err)
	}
	rw := e.user()
	rw.login(e.key(e.org, "write:jobs"))
	// Numbers are written as a person types them (not 1e+06).
	rw.get("/console/i/jobs/q/flaky/").want(t, http.StatusOK, `<table class="kv" id="settings">`,
		"<th>ratePerSecond</th><td>1000000</td>", "<td>1.5 s – 60 s, 4 doublings</td>").lacks(t, `id="queue-settings"`, "e+06")
	rwTok := rw.csrf("/console/i/jobs/q/flaky/")
	rw.post("/console/i/jobs/q/flaky/settings", form(map[string]string{"csrf": rwTok})).want(t, http.StatusForbidden, "PERMISSION_DENIED")
}

// nextLink finds the next-page link of a page.
func nextLink(body string) string {
	i := strings.Index(body, `id="next-page"`)
	j := strings.LastIndex(body[:i], `href="`)
	href := body[j+len(`href="`):]
	return strings.ReplaceAll(href[:strings.Index(href, `"`)], "&amp;", "&")
}

// TestSettingsAndWebhookKey: settings change through the form; the
// webhook key is shown and rotated only through the confirmation page.
func TestSettingsAndWebhookKey(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.fixture()
	u := e.user()
	u.login(e.full)
	tok := u.csrf("/console/i/jobs/settings")
	u.get("/console/i/jobs/settings").lacks(t, "whsec_")
	p := u.post("/console/i/jobs/settings", url.Values{"csrf": {tok}, "retentionDays": {"3"}, "rateLimit": {""}, "maxInFlight": {"20"}})
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/console/i/jobs/settings?done=saved" {
		t.Fatalf("save: %d %s %s", p.status, p.header.Get("Location"), p.body)
	}
	u.get(p.header.Get("Location")).want(t, http.StatusOK, "Settings saved.", `value="3"`, `value="20"`)
	u.post("/console/i/jobs/settings", url.Values{"csrf": {tok}, "retentionDays": {"-1"}}).want(t, http.StatusBadRequest, "retentionDays")
	u.post("/console/i/jobs/settings", url.Values{"csrf": {tok}, "retentionDays": {"x"}}).want(t, http.StatusBadRequest, "retentionDays: must be a number")

	before, err := e.api.WebhookKey(context.Background(), "jobs")
	if err != nil {
		t.Fatal(err)
	}
	u.get("/console/i/jobs/confirm/reveal").want(t, http.StatusOK, "Show the key")
	u.post("/console/i/jobs/settings/webhook-key", url.Values{"csrf": {tok}}).want(t, http.StatusBadRequest, "CONFIRM_REQUIRED").lacks(t, `id="webhook-key"`)
	// Each action redirects (POST-redirect-GET): the key is shown by a
	// GET page that reads it, so a reload repeats nothing.
	p = u.post("/console/i/jobs/settings/webhook-key", url.Values{"csrf": {tok}, "confirm": {"true"}})
	if loc := p.header.Get("Location"); p.status != http.StatusSeeOther || loc != "/console/i/jobs/settings/webhook-key" {
		t.Fatalf("reveal: %d %s %s", p.status, loc, p.body)
	}
	if shown := shownKey(t, u.get(p.header.Get("Location")).want(t, http.StatusOK)); shown != before {
		t.Fatalf("shown %q, the instance's is %q", shown, before)
	}
	p = u.post("/console/i/jobs/settings/webhook-key/rotate", url.Values{"csrf": {tok}, "confirm": {"true"}})
	loc := p.header.Get("Location")
	if p.status != http.StatusSeeOther || loc != "/console/i/jobs/settings/webhook-key?done=rotated" {
		t.Fatalf("rotate: %d %s %s", p.status, loc, p.body)
	}
	after, _ := e.api.WebhookKey(context.Background(), "jobs")
	if after == before || shownKey(t, u.get(loc).want(t, http.StatusOK, "rotated")) != after {
		t.Fatalf("rotate: before %s after %s", before, after)
	}
	// A reload of the rotation's page rotates nothing.
	if shownKey(t, u.get(loc)) != after {
		t.Fatal("a reload shows another key")
	}
	if now, _ := e.api.WebhookKey(context.Background(), "jobs"); now != after {
		t.Fatalf("a reload rotated the key: %s, was %s", now, after)
	}
	// The key's page needs the full grant, as the API's GET of the key.
	rw := e.user()
	rw.login(e.key(e.org, "write:jobs"))
	rw.get("/console/i/jobs/settings/webhook-key").want(t, http.StatusForbidden, "PERMISSION_DENIED").lacks(t, "whsec_")
}

var keyRE = regexp.MustCompile(`id="webhook-key" class="secret">([^<]+)<`)

// shownKey is the webhook key a settings page shows.
func shownKey(t *testing.T, p page) string {
	t.Helper()
	m := keyRE.FindStringSubmatch(p.body)
	if m == nil {
		t.Fatalf("no webhook key shown:\n%s", p.body)
	}
	return html.UnescapeString(m[1])
}

// TestDevNeedsNoLogin: errand dev serves the console without a key, and
// its forms still carry a CSRF token.
func TestDevNeedsNoLogin(t *testing.T) {
	e := newEnv(t, envOptions{dev: true})
	e.fixture()
	u := e.user()
	u.get("/console/").want(t, http.StatusOK, "/console/i/jobs/", `<input id="instance-name"`).lacks(t, "Log out")
	if p := u.get("/console/login"); p.status != http.StatusSeeOther {
		t.Fatalf("dev login page: %d", p.status)
	}
	id := e.add("pull", errandapi.NewTask{Payload: json.RawMessage(`{}`)})
	u.post("/console/i/jobs/t/"+id+"/cancel", url.Values{"csrf": {"x"}}).want(t, http.StatusForbidden)
	tok := u.csrf("/console/i/jobs/t/" + id)
	if p := u.post("/console/i/jobs/t/"+id+"/cancel", url.Values{"csrf": {tok}}); p.status != http.StatusSeeOther {
		t.Fatalf("cancel: %d %s", p.status, p.body)
	}
}

// TestDevCrossSiteGetMakesNoInstance: in dev a console page of an instance
// that does not exist makes it on first use, but not when a page of
// another site asks for it (an <img> pointing at the console): that GET
// answers 404 and the instances stay as they were.
func TestDevCrossSiteGetMakesNoInstance(t *testing.T) {
	e := newEnv(t, envOptions{dev: true})
	u := e.user()
	for _, path := range []string{"/console/i/lured/", "/console/i/lured/q/default/", "/console/i/lured/settings", "/console/i/lured/live"} {
		req, err := http.NewRequest(http.MethodGet, e.srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Sec-Fetch-Site", "cross-site")
		req.Header.Set("Sec-Fetch-Dest", "image")
		resp, err := u.hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if p := read(t, resp); p.status != http.StatusNotFound {
			t.Fatalf("cross-site GET %s: %d, want 404:\n%s", path, p.status, p.body)
		}
	}
	list, err := e.api.ListInstances(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 0 {
		t.Fatalf("a cross-site GET made instances: %+v", list)
	}
	u.get("/console/i/lured/").want(t, http.StatusOK, "default")
	if list, err = e.api.ListInstances(context.Background()); err != nil || len(list) != 1 {
		t.Fatalf("the console's own GET made %d instances (%v), want 1", len(list), err)
	}
}

// TestDevLiveMakesNoInstance: in dev, an instance deleted while its page
// is open stays deleted: the live counts' reads find it gone (the stream
// ends with logout, and the page goes back to the instances) instead of
// making it again on first use, as they did.
func TestDevLiveMakesNoInstance(t *testing.T) {
	e := newEnv(t, envOptions{dev: true})
	u := e.user()
	u.get("/console/i/jobs/").want(t, http.StatusOK, "default")
	next := u.eventNames("/console/i/jobs/live")
	if name := next(); name != "counts" {
		t.Fatalf("first event %s", name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := e.api.DeleteInstance(ctx, "jobs"); err != nil {
		t.Fatal(err)
	}
	// The delete is a change: the stream reads again 500 ms later.
	if err := e.clock.WaitForSleeperAt(ctx, e.clock.Now().Add(500*time.Millisecond)); err != nil {
		t.Fatal("the stream never waited after the delete")
	}
	e.clock.Advance(500 * time.Millisecond)
	if name := next(); name != "logout" {
		t.Fatalf("after the delete: %s, want logout", name)
	}
	if list, err := e.api.ListInstances(ctx); err != nil || len(list) != 0 {
		t.Fatalf("after the delete the instances are %+v (%v); the live stream made it again", list, err)
	}
}

// TestLiveCounts: the live stream sends the counts at once and again
// after a change; a key revoked meanwhile ends it with "logout".
func TestLiveCounts(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.fixture()
	k := e.key(e.org, "read:jobs")
	u := e.user()
	u.login(k)
	resp, err := u.hc.Get(e.srv.URL + "/console/i/jobs/live")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "text/event-stream" {
		t.Fatalf("live: %d %s", resp.StatusCode, ct)
	}
	events := bufio.NewReader(resp.Body)
	next := func() (string, map[string]any) {
		t.Helper()
		var name, data string
		for {
			line, err := events.ReadString('\n')
			if err != nil {
				t.Fatalf("stream ended: %v", err)
			}
			line = strings.TrimRight(line, "\n")
			switch {
			case strings.HasPrefix(line, "event: "):
				name = line[len("event: "):]
			case strings.HasPrefix(line, "data: "):
				data = line[len("data: "):]
			case line == "" && name != "":
				var m map[string]any
				if err := json.Unmarshal([]byte(data), &m); err != nil {
					t.Fatal(err)
				}
				return name, m
			}
		}
	}
	scheduled := func(m map[string]any, queue string) float64 {
		for _, q := range m["queues"].([]any) {
			q := q.(map[string]any)
			if q["name"] == queue {
				return q["counts"].(map[string]any)["scheduled"].(float64)
			}
		}
		t.Fatalf("no queue %s in %v", queue, m)
		return 0
	}
	name, m := next()
	if name != "counts" || scheduled(m, "pull") != 0 {
		t.Fatalf("first event %s %v", name, m)
	}
	// sleep waits until the stream sleeps for d on the node's clock, then
	// moves the clock by d.
	sleep := func(d time.Duration, what string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := e.clock.WaitForSleeperAt(ctx, e.clock.Now().Add(d)); err != nil {
			t.Fatalf("the stream never waited %v %s", d, what)
		}
		e.clock.Advance(d)
	}
	// After a change the stream waits 500 ms before it reads the counts.
	e.add("pull", errandapi.NewTask{Payload: json.RawMessage(`{}`)})
	sleep(500*time.Millisecond, "after a change")
	if name, m = next(); name != "counts" || scheduled(m, "pull") != 1 {
		t.Fatalf("after an add: %s %v", name, m)
	}
	// Without a change, it sends every 2 s all the same.
	sleep(2*time.Second, "for its tick")
	if name, m = next(); name != "counts" || scheduled(m, "pull") != 1 {
		t.Fatalf("after 2 s: %s %v", name, m)
	}
	e.revoke(k)
	e.add("pull", errandapi.NewTask{Payload: json.RawMessage(`{}`)})
	sleep(500*time.Millisecond, "after a change")
	if name, _ = next(); name != "logout" {
		t.Fatalf("after the key was revoked: %s", name)
	}
	if _, err := events.ReadString('\n'); err == nil {
		t.Fatal("the stream goes on after logout")
	}
}

// TestReplayDeadLetters: ticked dead letters, or all of a queue's, are
// replayed by a dlq.replay job of the operations API, whose page follows
// it to the end.
func TestReplayDeadLetters(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.fixture()
	u := e.user()
	u.login(e.full)
	a := e.failed()
	e.flakyCalls.Store(0) // the next one fails too
	b := e.failed()
	dead := u.get("/console/i/jobs/q/flaky/dead").want(t, http.StatusOK, a, b, `value="`+a+`"`, "2 failed task(s)")
	tok := csrfRE.FindStringSubmatch(dead.body)[1]
	u.post("/console/i/jobs/q/flaky/replay", url.Values{"csrf": {tok}}).want(t, http.StatusBadRequest, "tick the dead letters")

	p := u.post("/console/i/jobs/q/flaky/replay", url.Values{"csrf": {tok}, "id": {a}})
	loc := p.header.Get("Location")
	if p.status != http.StatusSeeOther || !strings.HasPrefix(loc, "/console/i/jobs/jobs/") {
		t.Fatalf("replay: %d %s %s", p.status, loc, p.body)
	}
	e.waitState(a, errandapi.StateSucceeded)
	// A replay of ticked ids links back to the queue they came from.
	// Its times are the operations API's epoch seconds, shown as the
	// console shows every time (the fake clock stands at T0).
	at := T0.Truncate(time.Second).UTC().Format("2006-01-02 15:04:05.000 UTC")
	waitPage(t, u, loc, `data-status="SUCCEEDED"`).want(t, http.StatusOK, "dlq.replay", `&#34;replayed&#34;: 1`,
		`href="/console/i/jobs/q/flaky/dead">← dead letters of flaky`,
		`<td id="job-created">`+at+`</td>`, `<td id="job-finished">`+at+`</td>`).lacks(t, `http-equiv="refresh"`, `id="job-run-at"`)
	u.get("/console/i/jobs/jobs/NOSUCHJOB").want(t, http.StatusNotFound, "NOT_FOUND", "job NOSUCHJOB: ")
	if tk, _ := e.api.GetTask(context.Background(), "jobs", b); tk.State != errandapi.StateFailed {
		t.Fatalf("an unticked dead letter was replayed: %s", tk.State)
	}
	// The job is not shown under another instance.
	u.get(strings.Replace(loc, "/i/jobs/", "/i/other/", 1)).want(t, http.StatusNotFound)

	// Replay all goes through a confirmation page that says how many; the
	// form posted without it is refused and replays nothing.
	u.get("/console/i/jobs/q/flaky/dead").want(t, http.StatusOK, `href="/console/i/jobs/q/flaky/confirm/replay-all" id="replay-all"`)
	u.post("/console/i/jobs/q/flaky/replay", url.Values{"csrf": {tok}, "all": {"true"}}).want(t, http.StatusBadRequest,
		"CONFIRM_REQUIRED", "replaying every failed task of the queue: confirm it on the confirmation page")
	if tk, _ := e.api.GetTask(context.Background(), "jobs", b); tk.State != errandapi.StateFailed {
		t.Fatalf("a replay of all without its confirmation replayed: %s", tk.State)
	}
	u.get("/console/i/jobs/q/flaky/confirm/replay-all").want(t, http.StatusOK, "Replay every failed task of queue flaky (1 now",
		`name="all" value="true"`, `name="confirm" value="true"`, `action="/console/i/jobs/q/flaky/replay"`, `href="/console/i/jobs/q/flaky/dead">Cancel`)
	p = u.post("/console/i/jobs/q/flaky/replay", url.Values{"csrf": {tok}, "all": {"true"}, "confirm": {"true"}})
	if p.status != http.StatusSeeOther {
		t.Fatalf("replay all: %d %s", p.status, p.body)
	}
	e.waitState(b, errandapi.StateSucceeded)
	waitPage(t, u, p.header.Get("Location"), `data-status="SUCCEEDED"`)
}

// waitPage reads the page at path until it contains want, again after
// each attempt outcome the engine stores (the job runs on the node's own
// goroutines).
func waitPage(t *testing.T, u *user, path, want string) page {
	t.Helper()
	var p page
	u.e.await(func() bool {
		p = u.get(path)
		return strings.Contains(p.body, want)
	}, func() string { return path + " never showed " + want + ":\n" + p.body })
	return p
}

// TestActivityChart: the queue page draws the last hour's adds, successes
// and failures as an inline SVG, with the totals in its title.
func TestActivityChart(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.fixture()
	u := e.user()
	u.login(e.full)
	e.failed()
	ok := e.add("flaky", errandapi.NewTask{Payload: json.RawMessage(`{}`)})
	e.waitState(ok, errandapi.StateSucceeded)
	p := u.get("/console/i/jobs/q/flaky/").want(t, http.StatusOK, `<svg class="chart"`, "2 added, 1 succeeded, 1 failed", `<polyline class="failed" points="0,118 `)
	if strings.Count(p.body, ",") < 3*60 {
		t.Fatalf("the chart has not 60 points a line:\n%s", p.body)
	}
}

// TestQueueShowsWhoServesItsFunction: the page of a queue whose target is
// a function says whether a worker serves it now — its slots across the
// nodes, or a warning that its tasks wait — as GET …/functions reads it;
// a node's rows that went quiet (30 s) no longer count; a pull queue's
// page says neither.
func TestQueueShowsWhoServesItsFunction(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.fixture()
	ctx := context.Background()
	for q, fn := range map[string]string{"orphan": "app/none", "mail": "app/w"} {
		if _, err := e.api.CreateQueue(ctx, "jobs", q, errandapi.QueueRequest{Target: errandapi.Value(errandapi.Target{Function: fn})}); err != nil {
			t.Fatal(err)
		}
	}
	inst, err := e.st.InstanceGet(ctx, store.InstanceRef{Org: e.org, Name: "jobs"})
	if err != nil {
		t.Fatal(err)
	}
	// Another node's workers serve app/w with 3 slots.
	if err := e.st.WorkersPut(ctx, &store.WorkersPutParams{Node: "other", Served: map[string]map[string]int{inst.ID: {"app/w": 3}}, Now: e.clock.Now().UnixMilli()}); err != nil {
		t.Fatal(err)
	}
	u := e.user()
	u.login(e.full)
	u.get("/console/i/jobs/q/orphan/").want(t, http.StatusOK, `id="unserved"`, "No worker serves app/none").lacks(t, `id="served"`)
	u.get("/console/i/jobs/q/mail/").want(t, http.StatusOK, `id="served"`, "app/w is served now: 3 slots").lacks(t, `id="unserved"`)
	u.get("/console/i/jobs/q/pull/").want(t, http.StatusOK).lacks(t, `id="served"`, `id="unserved"`)
	// The Functions page lists them all: this node's in-process app/flaky
	// (once published), app/w with its slots, app/none marked.
	fp := u.get("/console/i/jobs/functions").want(t, http.StatusOK, `id="nav-functions"`, `data-function="app/w"`, `data-function="app/none"`)
	if !regexp.MustCompile(`data-function="app/w">\s*<td><code>app/w</code></td>\s*<td class="num">3</td>\s*<td><a href="/console/i/jobs/q/mail/">mail</a></td>`).MatchString(fp.body) ||
		!regexp.MustCompile(`data-function="app/none">\s*<td><code>app/none</code></td>\s*<td class="num"><span class="badge"[^>]*>none</span></td>`).MatchString(fp.body) {
		t.Fatalf("functions page:\n%s", fp.body)
	}
	e.clock.Advance(engine.WorkersQuiet + time.Second)
	u.get("/console/i/jobs/q/mail/").want(t, http.StatusOK, `id="unserved"`, "No worker serves app/w")
	u.get("/console/i/nope/functions").want(t, http.StatusNotFound, "NOT_FOUND")
}

// TestQueueSettingsKeepTargetHeaders: the settings form shows a webhook
// target's header names, never their values, and a changed URL toward the
// same host keeps them; toward another host the API's refusal names the
// header and nothing changes.
func TestQueueSettingsKeepTargetHeaders(t *testing.T) {
	e := newEnv(t, envOptions{dev: true})
	e.fixture()
	ctx := context.Background()
	// The values are long enough that no random token of the page (its
	// CSRF token: 43 characters of base64url) holds one by chance: "k1"
	// alone turned up inside one about once in a hundred runs.
	headers := map[string]string{"Authorization": "Bearer s3cret", "X-Api-Key": "k1-s3cret"}
	if _, err := e.api.CreateQueue(ctx, "jobs", "gated", errandapi.QueueRequest{Target: errandapi.Value(errandapi.Target{
		Webhook: "http://127.0.0.1:9/in", Headers: headers})}); err != nil {
		t.Fatal(err)
	}
	stored := func() *task.Target {
		inst, err := e.st.InstanceGet(ctx, store.InstanceRef{Org: e.org, Name: "jobs"})
		if err != nil {
			t.Fatal(err)
		}
		q, err := e.st.QueueGet(ctx, store.QueueRef{InstanceID: inst.ID, Name: "gated"})
		if err != nil {
			t.Fatal(err)
		}
		return q.Target
	}
	u := e.user()
	u.login(e.full)
	u.get("/console/i/jobs/q/gated/").want(t, http.StatusOK, "sends the headers Authorization,X-Api-Key", `name="targetHeaders" value="Authorization,X-Api-Key"`).
		lacks(t, "s3cret", "k1-s3cret")
	tok := u.csrf("/console/i/jobs/q/gated/")
	save := func(target string) page {
		return u.post("/console/i/jobs/q/gated/settings", url.Values{"csrf": {tok}, "targetKind": {"webhook"}, "target": {target},
			"targetHeaders": {"Authorization,X-Api-Key"}, "maxAttempts": {"10"}, "minBackoffSeconds": {"10"}, "maxBackoffSeconds": {"3600"},
			"maxDoublings": {"16"}, "deadlineSeconds": {"600"}, "targetControl": {"true"}})
	}
	if p := save("http://127.0.0.1:9/v2"); p.status != http.StatusSeeOther {
		t.Fatalf("save: %d %s", p.status, p.body)
	}
	if tg := stored(); tg.Webhook != "http://127.0.0.1:9/v2" || !reflect.DeepEqual(tg.Headers, headers) {
		t.Fatalf("after the save: %+v", tg)
	}
	save("http://127.0.0.2:9/in").want(t, http.StatusBadRequest, "INVALID_ARGUMENT", "target.headers.Authorization")
	if tg := stored(); tg.Webhook != "http://127.0.0.1:9/v2" || !reflect.DeepEqual(tg.Headers, headers) {
		t.Fatalf("a refused save changed the target: %+v", tg)
	}

	// New values replace the headers; "(hidden)" keeps one.
	setForm := url.Values{"csrf": {tok}, "targetKind": {"webhook"}, "target": {"http://127.0.0.1:9/v2"}, "targetHeaders": {"Authorization,X-Api-Key"},
		"setHeaders": {"Authorization: Bearer n3w\nX-Api-Key: (hidden)"}, "maxAttempts": {"10"}, "minBackoffSeconds": {"10"},
		"maxBackoffSeconds": {"3600"}, "maxDoublings": {"16"}, "deadlineSeconds": {"600"}, "targetControl": {"true"}}
	if p := u.post("/console/i/jobs/q/gated/settings", setForm); p.status != http.StatusSeeOther {
		t.Fatalf("set headers: %d %s", p.status, p.body)
	}
	if tg := stored(); !reflect.DeepEqual(tg.Headers, map[string]string{"Authorization": "Bearer n3w", "X-Api-Key": "k1-s3cret"}) {
		t.Fatalf("after setting headers: %+v", tg)
	}
	setForm.Set("target", "")
	u.post("/console/i/jobs/q/gated/settings", setForm).want(t, http.StatusBadRequest, "target.headers: give the webhook URL")

	// The create form takes them, one a line.
	create := func(name, kind, target, headers string) page {
		return u.post("/console/i/jobs/queues", url.Values{"csrf": {tok}, "name": {name}, "mode": {"push"},
			"targetKind": {kind}, "target": {target}, "headers": {headers}})
	}
	if p := create("made", "webhook", "http://127.0.0.1:9/m", "x-api-key: k2\n\nX-Tenant:  t-1 \n"); p.status != http.StatusSeeOther {
		t.Fatalf("create: %d %s", p.status, p.body)
	}
	q, err := e.api.GetQueue(ctx, "jobs", "made")
	if err != nil || !reflect.DeepEqual(q.Target.Headers, map[string]string{"X-Api-Key": errandapi.HiddenHeaderValue, "X-Tenant": errandapi.HiddenHeaderValue}) {
		t.Fatalf("created: %+v %v", q, err)
	}
	create("bad1", "webhook", "http://127.0.0.1:9/m", "no colon").want(t, http.StatusBadRequest, "target.headers: each line must be Name: value")
	create("bad2", "webhook", "", "X-A: 1").want(t, http.StatusBadRequest, "target.headers: give the webhook URL")
	create("bad3", "function", "app/f", "X-A: 1").want(t, http.StatusBadRequest, "target.headers: only a webhook target sends headers")
	create("bad4", "webhook", "http://127.0.0.1:9/m", "Host: x").want(t, http.StatusBadRequest, "target.headers.Host")
}
