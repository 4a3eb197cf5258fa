package main

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/auth"
)

// TestDevLocksItsDataDir: a second errand dev on the same data directory
// is refused, naming the first one's pid; a taken port fails before the
// data directory is created.
func TestDevLocksItsDataDir(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildErrand(t)
	data := t.TempDir()
	first, url := startErrand(t, bin, "--data", data)
	out, err := exec.Command(bin, "dev", "--addr", "127.0.0.1:0", "--data", data).CombinedOutput()
	want := "is in use by another errand dev (process " + strconv.Itoa(first.Process.Pid) + ")"
	if err == nil || !strings.Contains(string(out), want) {
		t.Fatalf("second dev on one directory: %v\n%s", err, out)
	}

	taken := strings.TrimPrefix(url, "http://")
	fresh := filepath.Join(t.TempDir(), "new")
	out, err = exec.Command(bin, "dev", "--addr", taken, "--data", fresh).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "address already in use") {
		t.Fatalf("dev on a taken port: %v\n%s", err, out)
	}
	if _, err := os.Stat(fresh); !os.IsNotExist(err) {
		t.Fatalf("dev on a taken port created its data directory: %v", err)
	}
	store := filepath.Join(t.TempDir(), "s", "errand.db")
	out, err = exec.Command(bin, "serve", "--addr", taken, "--store", "sqlite://"+store).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "address already in use") {
		t.Fatalf("serve on a taken port: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Dir(store)); !os.IsNotExist(err) {
		t.Fatalf("serve on a taken port created its store: %v", err)
	}
}

// TestKeysRefuseAMissingStore: a SQLite path that does not exist is
// refused and not created unless --create; the store opened is named.
func TestKeysRefuseAMissingStore(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "typo", "errand.db")
	for _, args := range [][]string{
		{"keys", "list", "--store", "sqlite://" + path},
		{"keys", "create", "--store", "sqlite://" + path, "--org", "acme", "--grant", "full:*"},
		{"keys", "revoke", "--store", "sqlite://" + path, "some-id"},
	} {
		code, out, errs := runMain(args...)
		if code != exitRefused || out != "" || !strings.Contains(errs, "the SQLite file "+path+" does not exist") || !strings.Contains(errs, "--create") {
			t.Fatalf("%v: exit %d, %q, %q", args, code, out, errs)
		}
	}
	if _, err := os.Stat(filepath.Dir(path)); !os.IsNotExist(err) {
		t.Fatalf("a refused keys command created the store's directory: %v", err)
	}
	code, _, errs := runMain("keys", "create", "--store", "sqlite://"+path, "--create", "--org", "acme", "--grant", "full:*")
	if code != 0 || !strings.Contains(errs, "store: SQLite file "+path) {
		t.Fatalf("create with --create: exit %d, %s", code, errs)
	}
	if code, out, errs := runMain("keys", "list", "--store", "sqlite://"+path); code != 0 || !strings.Contains(out, "acme") || !strings.Contains(errs, "store: SQLite file "+path) {
		t.Fatalf("list: exit %d, %s, %s", code, out, errs)
	}
}

// TestServeLogs: serve logs a failing queue's attempts at info, one line
// per queue and window; --log-level debug logs every request; bad values
// of the log flags are usage errors.
func TestServeLogs(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildErrand(t)
	dir := t.TempDir()
	store := "sqlite://" + filepath.Join(dir, "errand.db")
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(503) }))
	defer hook.Close()
	host, _, _ := net.SplitHostPort(hook.Listener.Addr().String())

	first, url, logs := startServe(t, bin, "--store", store, "--webhook-allow", host)
	key := readKeyFile(t, logs, filepath.Join(dir, "errand-admin-key"))
	if st, body := call(t, key, "POST", url+"/v1/instances", `{"name":"jobs"}`); st != 201 {
		t.Fatalf("instance: %d %s", st, body)
	}
	if st, body := call(t, key, "POST", url+"/v1/tasks/jobs/queues", `{"name":"hooks","target":{"webhook":"`+hook.URL+`"},"maxAttempts":1}`); st != 201 {
		t.Fatalf("queue: %d %s", st, body)
	}
	o := watchOutcomes(t, apiClient(t, url, key), "hooks")
	st, body := call(t, key, "POST", url+"/v1/tasks/jobs/queues/hooks/tasks", `[{},{},{}]`)
	var added errandapi.AddResponse
	if err := json.Unmarshal([]byte(body), &added); st != 201 || err != nil {
		t.Fatalf("add: %d %s", st, body)
	}
	var ids []string
	for _, r := range added.Tasks {
		ids = append(ids, r.ID)
	}
	for id, state := range o.waitIDs(t, ids, 20*time.Second) {
		if state != "failed" {
			t.Fatalf("task %s %s, want failed", id, state)
		}
	}
	// The line follows the outcome's write, which the watch saw.
	logs.waitFor(t, `msg="attempt failed"`, 10*time.Second)
	if n := strings.Count(logs.String(), `msg="attempt failed"`); n != 1 || !strings.Contains(logs.String(), "level=INFO") || !strings.Contains(logs.String(), "http=503") ||
		!strings.Contains(logs.String(), "org=default instance=jobs queue=hooks") {
		t.Fatalf("want one info line of the failing queue, got %d:\n%s", n, logs)
	}
	if strings.Contains(logs.String(), "msg=request") {
		t.Fatalf("requests logged at info:\n%s", logs)
	}

	// The same store again at debug: the first node stops first (a SQLite
	// store serves one node; a second is refused while it runs).
	_ = first.Process.Signal(syscall.SIGTERM)
	if err := first.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, logs)
	}
	_, url, logs = startServe(t, bin, "--store", store, "--log-level", "debug")
	call(t, key, "GET", url+"/v1/instances", "")
	logs.waitFor(t, "level=DEBUG msg=request method=GET path=/v1/instances status=200", 10*time.Second)
	if strings.Contains(logs.String(), key) {
		t.Fatal("the key is in the request log")
	}
	for _, args := range [][]string{{"serve", "--log-level", "loud"}, {"serve", "--log-format", "xml"}, {"dev", "--log-level", "loud"}} {
		if code, _, errs := runMain(args...); code != exitUsage {
			t.Errorf("%v: exit %d, %s", args, code, errs)
		}
	}
}

// readKeyFile reads the first admin key from the file at path, once the
// log line that names it is in logs (the file is written before).
func readKeyFile(t *testing.T, logs *lockedBuffer, path string) string {
	t.Helper()
	logs.waitFor(t, path, 10*time.Second)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// TestServeFirstKeyOnATerminal: with stderr a terminal, serve prints the
// first admin key alone on its own line there, outside every log line,
// and writes no file. script(1) gives the process a terminal.
func TestServeFirstKeyOnATerminal(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	if _, err := exec.LookPath("script"); err != nil {
		t.Skip("script(1) is not installed: no terminal to give serve")
	}
	bin := buildErrand(t)
	dir := t.TempDir()
	pty := &lockedBuffer{}
	cmd := exec.Command("script", "-qefc", bin+" serve --addr 127.0.0.1:0 --store sqlite://"+filepath.Join(dir, "errand.db"), "/dev/null")
	cmd.Stdout = pty
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// script(1) runs serve in a session of its own: killing script
		// leaves serve running unless the terminal's hang-up reaches it,
		// which a test run under nohup ignores. Its descendants go first.
		for _, pid := range descendants(cmd.Process.Pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	pty.waitFor(t, "listening on", 20*time.Second)
	var keys []string
	for _, l := range strings.Split(pty.String(), "\n") {
		l = strings.TrimSpace(l)
		if strings.Contains(l, "errk_") {
			keys = append(keys, l)
		}
	}
	if len(keys) != 1 || !auth.WellFormed(keys[0]) {
		t.Fatalf("want the key alone on one line of the terminal:\n%s", pty)
	}
	if _, err := os.Stat(filepath.Join(dir, "errand-admin-key")); !os.IsNotExist(err) {
		t.Fatalf("a key file was written although stderr is a terminal: %v", err)
	}
	kids := descendants(cmd.Process.Pid)
	if len(kids) == 0 {
		t.Fatal("serve is not running under script")
	}
}

// descendants returns the pids of pid's children, of theirs, and so on,
// from Linux's /proc.
func descendants(pid int) []int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(pid) + "/children")
	if err != nil {
		return nil
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if c, err := strconv.Atoi(f); err == nil {
			out = append(out, c)
			out = append(out, descendants(c)...)
		}
	}
	return out
}
