package console_test

import (
	"net/http"
	"net/url"
	"testing"
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
