package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/errandhq/errand/internal/engine"
)

// queuesOf is every queue of an instance as a node lists it, without
// counts and creation times (what an import carries).
func queuesOf(t *testing.T, url, instance string) string {
	t.Helper()
	var out struct {
		Queues []map[string]any `json:"queues"`
	}
	_, body := call(t, "", "GET", url+"/v1/tasks/"+instance+"/queues", "")
	if err := json.Unmarshal([]byte(body), &out); err != nil {
		t.Fatalf("%s: %s", instance, body)
	}
	for _, q := range out.Queues {
		delete(q, "counts")
		delete(q, "createdAt")
		delete(q, "capped")
	}
	raw, _ := json.Marshal(out.Queues)
	_, s := call(t, "", "GET", url+"/v1/tasks/"+instance+"/settings", "")
	return string(raw) + s
}

// TestExportImportVerbs: `errand export` writes the bundle of one running
// errand dev; `errand import` loads it into another and says what it
// created; a second import leaves everything; a changed setting is
// changed back; a refused import (a mode change, a bad setting) changes
// nothing and exits 1; bad command lines exit 2.
func TestExportImportVerbs(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildErrand(t)
	_, src := startErrand(t, bin, "--data", t.TempDir())
	_, dst := startErrand(t, bin, "--data", t.TempDir())
	for _, c := range []struct{ path, body string }{
		{"/v1/instances", `{"name":"jobs"}`},
		{"/v1/instances", `{"name":"mail"}`},
		{"/v1/tasks/jobs/queues", `{"name":"dead","mode":"pull"}`},
		{"/v1/tasks/jobs/queues", `{"name":"work","target":{"webhook":"http://127.0.0.1:9/x"},"ratePerSecond":2.5,"maxConcurrent":3,"maxAttempts":4,"minBackoffSeconds":0.5,"maxAgeSeconds":3600,"deadLetterQueue":"dead","paused":true,"targetControl":false}`},
		{"/v1/tasks/mail/queues", `{"name":"pull","mode":"pull","maxAttempts":2}`},
	} {
		if st, m := post(t, src+c.path, c.body); st != 201 {
			t.Fatalf("POST %s: %d %v", c.path, st, m)
		}
	}
	if st, body := call(t, "", "PATCH", src+"/v1/tasks/jobs/settings", `{"rateLimit":50,"retentionDays":3}`); st != 200 {
		t.Fatalf("settings: %d %s", st, body)
	}
	// dst already has mail with its pull queue set otherwise.
	post(t, dst+"/v1/instances", `{"name":"mail"}`)
	post(t, dst+"/v1/tasks/mail/queues", `{"name":"pull","mode":"pull","maxAttempts":9}`)

	file := filepath.Join(t.TempDir(), "bundle.json")
	code, stdout, stderr := runMain("export", "--url", src, "--out", file, "--json")
	var sum exportSummary
	if code != 0 || json.Unmarshal([]byte(stdout), &sum) != nil || sum.Instances != 2 || sum.Queues != 5 || sum.Path != file {
		t.Fatalf("export: exit %d, %q, %q", code, stdout, stderr)
	}
	raw, _ := os.ReadFile(file)
	var b engine.Bundle
	if err := json.Unmarshal(raw, &b); err != nil || b.Version != 2 || strings.Contains(string(raw), "whsec_") {
		t.Fatalf("bundle %s: %v", raw, err)
	}
	if code, stdout, _ := runMain("export", "--url", src); code != 0 || !strings.Contains(stdout, `"instances"`) {
		t.Fatalf("export to stdout: %d %q", code, stdout)
	}

	code, stdout, stderr = runMain("import", "--url", dst, file)
	if code != 0 {
		t.Fatalf("import: exit %d, %q, %q", code, stdout, stderr)
	}
	for _, line := range []string{"created  instance jobs", "created  queue jobs/work", "created  queue jobs/dead", "changed  settings jobs",
		"left     instance mail", "changed  queue mail/pull", "left     queue mail/default", "left     queue jobs/default"} {
		if !strings.Contains(stdout, line+"\n") {
			t.Errorf("import report lacks %q:\n%s", line, stdout)
		}
	}
	for _, inst := range []string{"jobs", "mail"} {
		if a, b := queuesOf(t, src, inst), queuesOf(t, dst, inst); a != b {
			t.Errorf("%s after the import:\n%s\nwant\n%s", inst, b, a)
		}
	}

	// Again: everything is left.
	code, stdout, _ = runMain("import", "--url", dst, "--json", file)
	var rep engine.ImportReport
	if code != 0 || json.Unmarshal([]byte(stdout), &rep) != nil || len(rep.Created)+len(rep.Changed) != 0 || len(rep.Left) != 9 {
		t.Fatalf("second import: %d %s", code, stdout)
	}
	// A setting changed on dst is changed back, and a dry run says so
	// without writing.
	call(t, "", "PATCH", dst+"/v1/tasks/jobs/queues/work", `{"deadLetterQueue":null,"maxAttempts":7}`)
	changed := queuesOf(t, dst, "jobs")
	code, stdout, _ = runMain("import", "--url", dst, "--dry-run", file)
	if code != 0 || !strings.Contains(stdout, "would be changed  queue jobs/work\n") || queuesOf(t, dst, "jobs") != changed {
		t.Fatalf("dry run: %d %q", code, stdout)
	}
	code, stdout, _ = runMain("import", "--url", dst, file)
	if code != 0 || !strings.Contains(stdout, "changed  queue jobs/work\n") || queuesOf(t, dst, "jobs") != queuesOf(t, src, "jobs") {
		t.Fatalf("import after a change: %d %q", code, stdout)
	}

	// Refusals change nothing: a queue that would change mode, a bad
	// setting deep in the bundle, a dead-letter queue not in the bundle.
	before := queuesOf(t, dst, "jobs") + queuesOf(t, dst, "mail")
	for _, c := range []struct{ from, to, says string }{
		{`"name": "pull",` + "\n" + `          "mode": "pull"`, `"name": "pull",` + "\n" + `          "mode": "push"`, "instances[1].queues[1].mode"},
		{`"maxAttempts": 4`, `"maxAttempts": 0`, "instances[0].queues[2].maxAttempts"},
		{`"deadLetterQueue": "dead"`, `"deadLetterQueue": "gone"`, "instances[0].queues[2].deadLetterQueue"},
		{`"version": 2`, `"version": 3`, "version"},
		{`"name": "jobs"`, `"name": "_jobs"`, "instances[0].name"},
	} {
		if !strings.Contains(string(raw), c.from) {
			t.Fatalf("the bundle has no %q:\n%s", c.from, raw)
		}
		bad := filepath.Join(t.TempDir(), "bad.json")
		os.WriteFile(bad, []byte(strings.Replace(string(raw), c.from, c.to, 1)), 0o600)
		code, stdout, stderr := runMain("import", "--url", dst, bad)
		if code != 1 || !strings.Contains(stderr, c.says) || stdout != "" {
			t.Errorf("import of %s: exit %d, %q, %q; want 1 naming %s", c.to, code, stdout, stderr, c.says)
		}
	}
	if after := queuesOf(t, dst, "jobs") + queuesOf(t, dst, "mail"); after != before {
		t.Fatalf("a refused import changed dst:\n%s\n%s", before, after)
	}
	for _, args := range [][]string{{"import"}, {"import", "a", "b"}, {"import", "--nope", file}, {"export", "x"}, {"export", "--json"}} {
		if code, _, _ := runMain(args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
	for _, v := range []string{"export", "import"} {
		if code, stdout, _ := runMain(v, "--help"); code != 0 || !strings.Contains(stdout, "examples:") {
			t.Errorf("%s --help: %d %q", v, code, stdout)
		}
	}
}
