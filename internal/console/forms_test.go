package console_test

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/errandhq/errand/errandapi"
)

// TestRefusedFormsRefilled: a form the API refuses is shown again with
// what was typed in it: create an instance, create a queue, a queue's
// settings (their card left open) and the instance's settings.
func TestRefusedFormsRefilled(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.fixture()
	u := e.user()
	u.login(e.full)
	tok := u.csrf("/console/")

	u.post("/console/instances", url.Values{"csrf": {tok}, "name": {"bad name!"}}).
		want(t, http.StatusBadRequest, "INVALID_ARGUMENT", `id="instance-name" name="name" required maxlength="100" value="bad name!"`)

	u.post("/console/i/jobs/queues", url.Values{"csrf": {tok}, "name": {"p2"}, "mode": {"pull"}, "targetKind": {"function"}, "target": {"app/x"}}).
		want(t, http.StatusBadRequest, "target", `id="queue-name" name="name" required maxlength="100" value="p2"`,
			`<option value="pull" selected>`, `<option value="function" selected>`, `id="queue-target" name="target" value="app/x"`)

	form := url.Values{"csrf": {tok}, "targetKind": {"channel"}, "target": {"room-9"}, "ratePerSecond": {"7"}, "maxConcurrent": {"3"},
		"maxAttempts": {"4"}, "minBackoffSeconds": {"2.5"}, "maxBackoffSeconds": {"90"}, "maxDoublings": {"2"}, "maxAgeSeconds": {"600"},
		"deadlineSeconds": {"45"}, "deadLetterQueue": {"dlq1"}, "targetControl": {"true"}}
	u.post("/console/i/jobs/q/flaky/settings", form).want(t, http.StatusBadRequest, "deadLetterQueue",
		`id="settings-card" open`, `<option value="channel" selected>`, `id="qs-target" name="target" value="room-9"`,
		`name="ratePerSecond" inputmode="decimal" value="7"`, `name="maxConcurrent" inputmode="numeric" value="3"`,
		`name="maxAttempts" inputmode="numeric" value="4"`, `name="minBackoffSeconds" inputmode="decimal" value="2.5"`,
		`name="maxBackoffSeconds" inputmode="decimal" value="90"`, `name="maxDoublings" inputmode="numeric" value="2"`,
		`name="maxAgeSeconds" inputmode="numeric" value="600"`, `name="deadlineSeconds" inputmode="numeric" value="45"`,
		`name="deadLetterQueue" value="dlq1"`, `name="targetControl" value="true" checked`)
	// A field the console itself refuses keeps the form too.
	form.Set("maxAttempts", "many")
	u.post("/console/i/jobs/q/flaky/settings", form).want(t, http.StatusBadRequest, "maxAttempts: must be a number",
		`id="settings-card" open`, `name="maxAttempts" inputmode="numeric" value="many"`, `name="deadLetterQueue" value="dlq1"`)
	// Shown without a refusal, the form holds the stored settings, closed.
	u.get("/console/i/jobs/q/flaky/").want(t, http.StatusOK, `id="settings-card" >`, `<option value="function" selected>`,
		`id="qs-target" name="target" value="app/flaky"`, `name="maxAttempts" inputmode="numeric" value="1"`, `name="deadLetterQueue" value=""`)

	u.post("/console/i/jobs/settings", url.Values{"csrf": {tok}, "retentionDays": {"5000"}, "rateLimit": {"12.5"}, "maxInFlight": {"30"}}).
		want(t, http.StatusBadRequest, "retentionDays", `id="retentionDays" name="retentionDays" inputmode="numeric" value="5000"`,
			`id="rateLimit" name="rateLimit" inputmode="decimal" value="12.5"`, `id="maxInFlight" name="maxInFlight" inputmode="numeric" value="30"`)
}

// TestNumberFields: a number field with NaN or an infinity, which cannot
// travel as JSON, is INVALID_ARGUMENT naming the field, as text that is no
// number is; a fraction where a whole number goes, or a number too large
// for one, says so.
func TestNumberFields(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.fixture()
	u := e.user()
	u.login(e.full)
	tok := u.csrf("/console/")
	queueForm := func(field, value string) url.Values {
		v := url.Values{"csrf": {tok}, "targetKind": {"function"}, "target": {"app/flaky"}, "maxAttempts": {"3"},
			"minBackoffSeconds": {"1"}, "maxBackoffSeconds": {"60"}, "maxDoublings": {"4"}, "deadlineSeconds": {"30"}}
		v.Set(field, value)
		return v
	}
	for _, bad := range []string{"NaN", "nan", "Inf", "+Inf", "-inf", "infinity", "1e400", "abc"} {
		for _, c := range []struct {
			path, field string
			form        url.Values
		}{
			{"/console/i/jobs/q/pull/tasks", "delay", url.Values{"csrf": {tok}, "delay": {bad}}},
			{"/console/i/jobs/q/flaky/settings", "ratePerSecond", queueForm("ratePerSecond", bad)},
			{"/console/i/jobs/q/flaky/settings", "minBackoffSeconds", queueForm("minBackoffSeconds", bad)},
			{"/console/i/jobs/q/flaky/settings", "maxConcurrent", queueForm("maxConcurrent", bad)},
			{"/console/i/jobs/settings", "rateLimit", url.Values{"csrf": {tok}, "rateLimit": {bad}}},
			{"/console/i/jobs/settings", "retentionDays", url.Values{"csrf": {tok}, "retentionDays": {bad}}},
		} {
			u.post(c.path, c.form).want(t, http.StatusBadRequest, "INVALID_ARGUMENT", c.field+": ").lacks(t, "INTERNAL", "json:")
		}
	}
	u.post("/console/i/jobs/settings", url.Values{"csrf": {tok}, "retentionDays": {"1.5"}}).
		want(t, http.StatusBadRequest, "retentionDays: must be a whole number")
	u.post("/console/i/jobs/q/flaky/settings", queueForm("maxConcurrent", "1e20")).
		want(t, http.StatusBadRequest, "maxConcurrent: is out of range")
	u.post("/console/i/jobs/q/flaky/settings", queueForm("maxAttempts", "99999999999999999999")).
		want(t, http.StatusBadRequest, "maxAttempts: is out of range")
	u.post("/console/i/jobs/q/flaky/settings", queueForm("deadlineSeconds", "2.5")).
		want(t, http.StatusBadRequest, "deadlineSeconds: must be a whole number")
	// A whole number written otherwise is a whole number.
	if p := u.post("/console/i/jobs/q/flaky/settings", queueForm("maxConcurrent", "1e1")); p.status != http.StatusSeeOther {
		t.Fatalf("maxConcurrent 1e1: %d %s", p.status, p.body)
	}
	u.get("/console/i/jobs/q/flaky/").want(t, http.StatusOK, `name="maxConcurrent" inputmode="numeric" value="10"`)
}

var wasRE = regexp.MustCompile(`name="was" value="([^"]*)"`)

// shownForm is the settings form of the page at path as a browser would
// post it untouched: the values the page showed, and was.
func (u *user) shownForm(path string) url.Values {
	u.e.t.Helper()
	m := wasRE.FindStringSubmatch(u.get(path).body)
	if m == nil {
		u.e.t.Fatalf("no was field on %s", path)
	}
	was := html.UnescapeString(m[1])
	form, err := url.ParseQuery(was)
	if err != nil {
		u.e.t.Fatal(err)
	}
	form.Set("was", was)
	form.Set("csrf", u.csrf(path))
	return form
}

// TestSettingsSaveOnlyWhatChanged: a settings form saves the fields the
// user changed, so that a change made meanwhile elsewhere (the API, another
// tab) to another field is kept, not put back to what the page showed.
func TestSettingsSaveOnlyWhatChanged(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.fixture()
	u := e.user()
	u.login(e.full)
	ctx := context.Background()

	form := u.shownForm("/console/i/jobs/q/flaky/")
	if _, err := e.api.UpdateQueue(ctx, "jobs", "flaky", errandapi.QueueRequest{RatePerSecond: errandapi.Value(5.0), MaxConcurrent: errandapi.Value(3)}); err != nil {
		t.Fatal(err)
	}
	form.Set("maxAttempts", "4")
	if p := u.post("/console/i/jobs/q/flaky/settings", form); p.status != http.StatusSeeOther {
		t.Fatalf("save: %d %s", p.status, p.body)
	}
	q, err := e.api.GetQueue(ctx, "jobs", "flaky")
	if err != nil {
		t.Fatal(err)
	}
	if q.MaxAttempts != 4 || q.RatePerSecond == nil || *q.RatePerSecond != 5 || q.MaxConcurrent == nil || *q.MaxConcurrent != 3 || q.Target == nil {
		t.Fatalf("after the save: maxAttempts %d, ratePerSecond %v, maxConcurrent %v, target %v; want 4 and the API's 5 and 3 kept, the target too",
			q.MaxAttempts, q.RatePerSecond, q.MaxConcurrent, q.Target)
	}
	// A refused save shows the form again with what the page first showed
	// still in was: the next save still sends only what the user changed.
	form = u.shownForm("/console/i/jobs/q/flaky/")
	was := form.Get("was")
	form.Set("maxDoublings", "many")
	u.post("/console/i/jobs/q/flaky/settings", form).want(t, http.StatusBadRequest, "maxDoublings", `name="was" value="`+html.EscapeString(was)+`"`)
	if _, err := e.api.UpdateQueue(ctx, "jobs", "flaky", errandapi.QueueRequest{MaxConcurrent: errandapi.Value(4)}); err != nil {
		t.Fatal(err)
	}
	form.Set("maxDoublings", "3")
	u.post("/console/i/jobs/q/flaky/settings", form)
	if q, _ := e.api.GetQueue(ctx, "jobs", "flaky"); q.MaxDoublings != 3 || q.MaxConcurrent == nil || *q.MaxConcurrent != 4 {
		t.Fatalf("after a refusal and a fix: maxDoublings %d, maxConcurrent %v; want 3 and the API's 4 kept", q.MaxDoublings, q.MaxConcurrent)
	}
	// A pull queue's save sends no target: its page shows none.
	pf := u.shownForm("/console/i/jobs/q/pull/")
	if pf.Has("targetKind") || pf.Has("target") {
		t.Fatalf("a pull queue's was holds a target: %v", pf)
	}
	pf.Set("maxAttempts", "7")
	if p := u.post("/console/i/jobs/q/pull/settings", pf); p.status != http.StatusSeeOther {
		t.Fatalf("saving a pull queue: %d %s", p.status, p.body)
	}
	// A field emptied on purpose is still cleared.
	form = u.shownForm("/console/i/jobs/q/flaky/")
	form.Set("ratePerSecond", "")
	u.post("/console/i/jobs/q/flaky/settings", form)
	if q, _ := e.api.GetQueue(ctx, "jobs", "flaky"); q.RatePerSecond != nil || q.MaxConcurrent == nil {
		t.Fatalf("emptied ratePerSecond: %v, maxConcurrent %v", q.RatePerSecond, q.MaxConcurrent)
	}

	// The instance's settings alike.
	form = u.shownForm("/console/i/jobs/settings")
	if _, err := e.api.UpdateSettings(ctx, "jobs", errandapi.SettingsRequest{RateLimit: errandapi.Value(50.0)}); err != nil {
		t.Fatal(err)
	}
	form.Set("retentionDays", "9")
	if p := u.post("/console/i/jobs/settings", form); p.status != http.StatusSeeOther {
		t.Fatalf("save: %d %s", p.status, p.body)
	}
	st, err := e.api.Settings(ctx, "jobs")
	if err != nil {
		t.Fatal(err)
	}
	if st.RetentionDays != 9 || st.RateLimit == nil || *st.RateLimit != 50 {
		t.Fatalf("after the save: retentionDays %d, rateLimit %v; want 9 and the API's 50 kept", st.RetentionDays, st.RateLimit)
	}
	// A pull queue's form has no target to send.
	if body := u.get("/console/i/jobs/q/pull/").body; strings.Contains(body, `id="qs-target"`) {
		t.Fatal("a pull queue's settings offer a target")
	}
}

// TestSettingsPageUnderItsOwnLimit: a rate limit set too low leaves the
// settings page and its form, so that it can be undone where it was set.
func TestSettingsPageUnderItsOwnLimit(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.fixture()
	u := e.user()
	u.login(e.full)
	form := u.shownForm("/console/i/jobs/settings")
	form.Set("rateLimit", "0.01")
	if p := u.post("/console/i/jobs/settings", form); p.status != http.StatusSeeOther {
		t.Fatalf("save: %d %s", p.status, p.body)
	}
	u.get("/console/i/jobs/q/pull/")
	u.get("/console/i/jobs/q/pull/").want(t, http.StatusTooManyRequests, "RATE_LIMITED")
	for range 3 {
		u.get("/console/i/jobs/settings").want(t, http.StatusOK, `id="settings-form"`, `value="0.01"`)
	}
	form = u.shownForm("/console/i/jobs/settings")
	form.Set("rateLimit", "")
	if p := u.post("/console/i/jobs/settings", form); p.status != http.StatusSeeOther {
		t.Fatalf("undo: %d %s", p.status, p.body)
	}
	u.get("/console/i/jobs/q/pull/").want(t, http.StatusOK)
}
