package main

import (
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// backupOnDev makes instance jobs on a running `errand dev` with a pull
// queue of named tasks (one leased, one failed, one with a priority),
// backs it up through the operations API and returns the archive's path
// and the tasks' listing. logs is its log.
func backupOnDev(t *testing.T, url string, logs *lockedBuffer) (string, string) {
	t.Helper()
	for _, c := range []struct{ path, body string }{
		{"/v1/instances", `{"name":"jobs"}`},
		{"/v1/tasks/jobs/queues", `{"name":"q","mode":"pull","maxAttempts":1}`},
		{"/v1/tasks/jobs/queues", `{"name":"push","target":{"webhook":"http://127.0.0.1:9/x"},"paused":true}`},
		{"/v1/tasks/jobs/queues/q/tasks", `[{"name":"a","payload":{"x": 1}},{"name":"b","payload":[1, 2]},{"name":"c","payload":"ü","priority":2}]`},
	} {
		if st, m := post(t, url+c.path, c.body); st != 201 {
			t.Fatalf("POST %s: %d %v", c.path, st, m)
		}
	}
	_, m := post(t, url+"/v1/tasks/jobs/queues/q/lease", `{"count":1}`)
	l := m["tasks"].([]any)[0].(map[string]any)
	if st, m := post(t, url+"/v1/tasks/jobs/tasks/"+l["id"].(string)+"/release", `{"leaseId":"`+l["leaseId"].(string)+`","error":"boom"}`); st != 200 {
		t.Fatalf("release: %d %v", st, m)
	}
	post(t, url+"/v1/tasks/jobs/queues/q/lease", `{"count":1,"leaseSeconds":600}`)
	_, listing := call(t, "", "GET", url+"/v1/tasks/jobs/queues/q/tasks", "")

	st, m := post(t, url+"/api/instances/jobs/backup", `{}`)
	if st != 201 {
		t.Fatalf("backup: %d %v", st, m)
	}
	job := waitOpsJob(t, url, logs, "instance.backup", m["id"].(string), 30*time.Second)
	res, _ := job["result"].(map[string]any)
	if job["status"] != "SUCCEEDED" || res["instance"] != "jobs" || res["tasks"] != 3.0 {
		t.Fatalf("backup job %v", job)
	}
	return res["path"].(string), listing
}

// TestRestoreVerb: `errand restore` recreates a backed-up instance from its
// archive into the store a running `errand dev` serves, tasks with their
// ids and states; a wrong key, a damaged archive and an existing instance
// are refused with exit code 1 and restore nothing, and so is a SQLite
// store that does not exist unless --create; a bad command line is exit
// code 2.
func TestRestoreVerb(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildErrand(t)
	data := t.TempDir()
	_, url, logs := startMode(t, bin, "dev", "--data", data)
	archive, listing := backupOnDev(t, url, logs)
	store := "sqlite://" + filepath.Join(data, "errand.db")
	keyFile := filepath.Join(data, "backup.key")
	wrongKey := filepath.Join(t.TempDir(), "wrong.key")
	if err := os.WriteFile(wrongKey, []byte(hex.EncodeToString(make([]byte, 32))), 0o600); err != nil {
		t.Fatal(err)
	}
	damaged := filepath.Join(t.TempDir(), "damaged.errand-backup")
	raw, _ := os.ReadFile(archive)
	raw[len(raw)-1] ^= 1
	if err := os.WriteFile(damaged, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	instances := func() string {
		_, body := call(t, "", "GET", url+"/v1/instances", "")
		return body
	}
	before := instances()

	for _, c := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"--org", "dev", "--backup-key-file", wrongKey, "--into", "copy", archive}, 1, "not the key this archive was made with"},
		{[]string{"--org", "dev", "--backup-key-file", keyFile, "--into", "copy", damaged}, 1, "damaged"},
		{[]string{"--org", "dev", "--backup-key-file", keyFile, archive}, 1, `instance "jobs" exists`},
		{[]string{"--org", "dev", "--backup-key-file", keyFile, "--into", "a b", archive}, 1, "into"},
		{[]string{"--org", "dev", "--backup-key-file", keyFile}, 2, "name one archive"},
		{[]string{"--backup-key-file", keyFile, archive}, 2, "--org is required"},
		{[]string{"--org", "dev", archive}, 2, "--backup-key-file is required"},
		{[]string{"--org", "dev", "--backup-key-file", keyFile, "--nope", archive}, 2, "-nope"},
	} {
		code, _, stderr := runMain(append([]string{"restore", "--store", store}, c.args...)...)
		if code != c.code || !strings.Contains(stderr, c.says) {
			t.Errorf("restore %v: exit %d, %q; want %d saying %q", c.args, code, stderr, c.code, c.says)
		}
	}
	if after := instances(); after != before {
		t.Fatalf("a refused restore changed the instances:\n%s\n%s", before, after)
	}

	code, stdout, stderr := runMain("restore", "--store", store, "--org", "dev", "--backup-key-file", keyFile, "--into", "copy", "--json", archive)
	var res restoreResult
	if code != 0 || json.Unmarshal([]byte(stdout), &res) != nil || res.Instance != "copy" || res.Queues != 3 || res.Tasks != 3 || res.Org != "dev" {
		t.Fatalf("restore: exit %d, %q, %q", code, stdout, stderr)
	}
	// The node serving the store sees the copy: the same tasks, ids and
	// states, and its queues.
	if _, got := call(t, "", "GET", url+"/v1/tasks/copy/queues/q/tasks", ""); got != listing {
		t.Fatalf("restored tasks:\n%s\nwant\n%s", got, listing)
	}
	if _, qs := call(t, "", "GET", url+"/v1/tasks/copy/queues/push", ""); !strings.Contains(qs, `"paused":true`) || !strings.Contains(qs, "http://127.0.0.1:9/x") {
		t.Fatalf("restored push queue: %s", qs)
	}
	// Without --into the archived name is used once it is free.
	if st, body := call(t, "", "DELETE", url+"/v1/instances/jobs?confirm=true", ""); st != 200 {
		t.Fatalf("delete: %d %s", st, body)
	}
	code, stdout, stderr = runMain("restore", "--store", store, "--org", "dev", "--backup-key-file", keyFile, archive)
	if code != 0 || !strings.Contains(stdout, "restored instance jobs of org dev: 3 queues, 0 triggers, 3 tasks") {
		t.Fatalf("restore by the archived name: exit %d, %q, %q", code, stdout, stderr)
	}
	if _, got := call(t, "", "GET", url+"/v1/tasks/jobs/queues/q/tasks", ""); got != listing {
		t.Fatalf("restored tasks:\n%s\nwant\n%s", got, listing)
	}
	// A SQLite store that does not exist (a mistyped path) is refused and
	// not made; --create makes it, to restore on a fresh host.
	fresh := filepath.Join(t.TempDir(), "typo", "errand.db")
	code, stdout, stderr = runMain("restore", "--store", "sqlite://"+fresh, "--org", "dev", "--backup-key-file", keyFile, archive)
	if code != exitRefused || stdout != "" || !strings.Contains(stderr, "the SQLite file "+fresh+" does not exist") || !strings.Contains(stderr, "--create") {
		t.Fatalf("restore into a missing store: exit %d, %q, %q", code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Dir(fresh)); !os.IsNotExist(err) {
		t.Fatalf("a refused restore made the store's directory: %v", err)
	}
	code, stdout, stderr = runMain("restore", "--store", "sqlite://"+fresh, "--create", "--org", "dev", "--backup-key-file", keyFile, archive)
	if code != 0 || !strings.Contains(stdout, "restored instance jobs of org dev: 3 queues") || !strings.Contains(stderr, "store: SQLite file "+fresh) {
		t.Fatalf("restore with --create: exit %d, %q, %q", code, stdout, stderr)
	}
	if code, stdout, _ := runMain("restore", "--help"); code != 0 || !strings.Contains(stdout, "examples:") {
		t.Fatalf("help: %d %q", code, stdout)
	}
}
