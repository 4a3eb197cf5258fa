package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/errandhq/errand/errandapi"
)

// TestCLIWaitAndDelete: "add --wait" adds a task and prints it once it
// has ended, exit 0 when it succeeded and 1 (its state and last error on
// stderr) when it failed; "get --wait" of an ended task answers at once;
// --wait does not go with --file. "delete" needs --yes, removes the
// records (a name is free again) and goes on past a refusal.
func TestCLIWaitAndDelete(t *testing.T) {
	c := devCLI(t)
	good := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"sent":true}`))
	}))
	defer good.Close()
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "the mail server said no", http.StatusBadRequest)
	}))
	defer bad.Close()
	c.ok("queues", "create", "good", "--webhook", good.URL)
	c.ok("queues", "create", "bad", "--webhook", bad.URL, "--max-attempts", "1")

	var tr errandapi.TaskResponse
	c.json(&tr, "add", "-q", "good", "--payload", `{"to":"a@example.com"}`, "--wait")
	if tk := tr.Task; tk == nil || tk.State != errandapi.StateSucceeded || len(tk.Attempts) != 1 {
		t.Fatalf("add --wait: %+v", tk)
	}
	id := tr.Task.ID
	if out := c.ok("get", id, "--wait"); !strings.Contains(out, "succeeded") || !strings.Contains(out, id) {
		t.Fatalf("get --wait of an ended task:\n%s", out)
	}

	r := c.run("", "add", "-q", "bad", "--payload", `{}`, "--wait")
	if r.code != exitRefused || !strings.Contains(r.out, "waiting until it ends") || !strings.Contains(r.out, "failed") ||
		!strings.Contains(r.errout, "errand add: the task ended failed: ") || !strings.Contains(r.errout, "the mail server said no") {
		t.Fatalf("add --wait of a failing task: exit %d\nstdout %s\nstderr %s", r.code, r.out, r.errout)
	}
	r = c.run("", "add", "-q", "bad", "--payload", `{}`, "--wait", "--json")
	var failed errandapi.TaskResponse
	if r.code != exitRefused || json.Unmarshal([]byte(r.out), &failed) != nil || failed.Task.State != errandapi.StateFailed {
		t.Fatalf("add --wait --json of a failing task: exit %d\nstdout %s\nstderr %s", r.code, r.out, r.errout)
	}
	c.usage("--wait and --file are exclusive", "add", "-q", "good", "--file", "-", "--wait")

	c.ok("queues", "create", "pull", "--mode", "pull")
	var ar errandapi.AddResponse
	c.json(&ar, "add", "-q", "pull", "--name", "once", "--delay", "3600")
	named := ar.Tasks[0].ID
	c.usage("--yes", "delete", named)
	if out := c.ok("delete", named, id, "--yes"); out != named+" deleted (it was scheduled)\n"+id+" deleted (it was succeeded)\n" {
		t.Fatalf("delete:\n%s", out)
	}
	c.refused(errandapi.CodeNotFound, "get", named)
	c.json(&ar, "add", "-q", "pull", "--name", "once")
	leased := ar.Tasks[0].ID
	c.ok("lease", "-q", "pull")
	r = c.run("", "delete", leased, "nope", "--yes")
	if r.code != exitRefused || !strings.Contains(r.errout, leased+": RUNNING_NOT_CANCELLABLE") || !strings.Contains(r.errout, "nope: NOT_FOUND") {
		t.Fatalf("delete of a leased task and a missing one: exit %d\nstdout %s\nstderr %s", r.code, r.out, r.errout)
	}
}
