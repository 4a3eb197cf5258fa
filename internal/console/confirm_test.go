package console_test

import (
	"context"
	"net/http"
	"testing"
)

// TestConfirmPagesReadFirst: a confirmation page reads its queue (or the
// instance's settings) first: a queue that does not exist, an instance of
// another organization or one the key has no grant on is the API's
// NOT_FOUND, not a question.
func TestConfirmPagesReadFirst(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.fixture()
	if _, err := e.api.CreateInstance(context.Background(), "other"); err != nil {
		t.Fatal(err)
	}
	u := e.user()
	u.login(e.full)
	u.get("/console/i/jobs/q/nosuch/confirm/delete").want(t, http.StatusNotFound, "NOT_FOUND").lacks(t, `id="confirm"`)
	u.get("/console/i/jobs/q/nosuch/confirm/purge").want(t, http.StatusNotFound, "NOT_FOUND").lacks(t, `id="confirm"`)
	u.get("/console/i/jobs/q/nosuch/confirm/replay-all").want(t, http.StatusNotFound, "NOT_FOUND").lacks(t, `id="confirm"`)
	u.get("/console/i/nosuch/confirm/rotate").want(t, http.StatusNotFound, "NOT_FOUND").lacks(t, `id="confirm"`)
	u.get("/console/i/jobs/q/pull/confirm/purge").want(t, http.StatusOK, `id="confirm"`)
	u.get("/console/i/jobs/confirm/rotate").want(t, http.StatusOK, `id="confirm"`)

	ro := e.user()
	ro.login(e.key(e.org, "read:jobs"))
	ro.get("/console/i/other/q/default/confirm/purge").want(t, http.StatusNotFound, "NOT_FOUND").lacks(t, `id="confirm"`)
	ro.get("/console/i/other/confirm/reveal").want(t, http.StatusNotFound, "NOT_FOUND").lacks(t, `id="confirm"`)
	// On its own instance a read key is told the action needs full, not
	// offered a button the API would refuse.
	for _, path := range []string{"/console/i/jobs/q/pull/confirm/purge", "/console/i/jobs/q/pull/confirm/delete", "/console/i/jobs/q/pull/confirm/replay-all", "/console/i/jobs/confirm/rotate", "/console/i/jobs/confirm/reveal"} {
		ro.get(path).want(t, http.StatusForbidden, "PERMISSION_DENIED", "needs the full grant on instance jobs; the key&#39;s is read").lacks(t, `id="confirm"`)
	}

	stranger := e.user()
	stranger.login(e.key("globex", "full:*"))
	stranger.get("/console/i/jobs/confirm/rotate").want(t, http.StatusNotFound, "NOT_FOUND").lacks(t, `id="confirm"`)
	stranger.get("/console/i/jobs/q/pull/confirm/delete").want(t, http.StatusNotFound, "NOT_FOUND").lacks(t, `id="confirm"`)
}
