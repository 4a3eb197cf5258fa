package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/errandhq/errand/internal/auth"
)

// startServe runs `errand serve` on a free port and returns it, its base
// URL and its stderr (the log).
func startServe(t *testing.T, bin string, args ...string) (*exec.Cmd, string, *lockedBuffer) {
	t.Helper()
	return startMode(t, bin, "serve", args...)
}

// startMode runs `errand MODE --addr 127.0.0.1:0 ARGS…` and waits for its
// "listening on" line.
func startMode(t *testing.T, bin, mode string, args ...string) (*exec.Cmd, string, *lockedBuffer) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{mode, "--addr", "127.0.0.1:0"}, args...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	logs := &lockedBuffer{}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			fmt.Fprintf(logs, "stdout: %s\n", sc.Text()) // before the URL is sent: a test may read the lines before it
			if _, url, ok := strings.Cut(sc.Text(), "listening on "); ok {
				line <- url
			}
		}
		close(line)
	}()
	select {
	case url, ok := <-line:
		if !ok {
			t.Fatalf("errand %s exited before listening:\n%s", mode, logs)
		}
		return cmd, url, logs
	case <-time.After(30 * time.Second):
		t.Fatalf("errand %s did not start", mode)
	}
	return nil, "", nil
}

// call sends one request with key ("" for none) and returns the status and
// body.
func call(t *testing.T, key, method, url, body string) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, url, rd)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// runMain runs one command in-process and returns its exit code, stdout
// and stderr.
func runMain(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := Main(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

// TestKeysCreateStoresNoPlaintext: `errand keys create` prints the key alone
// on stdout; the SQLite files hold its SHA-256 digest and not the key.
func TestKeysCreateStoresNoPlaintext(t *testing.T) {
	dir := t.TempDir()
	url := "sqlite://" + filepath.Join(dir, "sub", "errand.db")
	code, out, errs := runMain("keys", "create", "--store", url, "--create", "--org", "acme", "--grant", "full:jobs", "--grant", "read:*")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	secret := strings.TrimSuffix(out, "\n")
	if out != secret+"\n" || strings.Contains(secret, "\n") || !auth.WellFormed(secret) {
		t.Fatalf("stdout is not one line holding a key: %q", out)
	}

	var dump []byte
	files, _ := filepath.Glob(filepath.Join(dir, "sub", "errand.db*"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dump = append(dump, b...)
		if fi, _ := os.Stat(f); fi.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", f, fi.Mode().Perm())
		}
	}
	if len(dump) == 0 {
		t.Fatal("no store file")
	}
	if !bytes.Contains(dump, auth.Digest(secret)) {
		t.Fatal("the store does not hold the key's SHA-256 digest")
	}
	// Only the first 13 characters (errk_ and 8 hex digits) are kept in
	// clear, for recognition; no 12-character run of the rest appears.
	shown := len("errk_") + 8
	if !bytes.Contains(dump, []byte(secret[:shown])) {
		t.Error("the display prefix is not stored")
	}
	for i := shown - 4; i+12 <= len(secret); i++ {
		if bytes.Contains(dump, []byte(secret[i:i+12])) {
			t.Fatalf("the store holds %q of the secret in clear", secret[i:i+12])
		}
	}
	if bytes.Contains(dump, []byte(strings.ToUpper(secret[shown:]))) {
		t.Fatal("the store holds the secret in upper case")
	}

	// list shows the key, never its secret.
	code, out, errs = runMain("keys", "list", "--store", url)
	if code != 0 {
		t.Fatalf("list: exit %d: %s", code, errs)
	}
	if strings.Contains(out, secret[shown:shown+8]) || !strings.Contains(out, secret[:shown]) || !strings.Contains(out, "full:jobs,read:*") || !strings.Contains(out, "acme") {
		t.Fatalf("list:\n%s", out)
	}
	id := strings.Fields(strings.Split(out, "\n")[1])[0]
	// --json prints the same, for scripts.
	code, out, errs = runMain("keys", "list", "--store", url, "--json")
	var listed []map[string]any
	if err := json.Unmarshal([]byte(out), &listed); code != 0 || err != nil || len(listed) != 1 || listed[0]["id"] != id ||
		listed[0]["prefix"] != secret[:shown] || listed[0]["revokedAt"] != nil || len(listed[0]["grants"].([]any)) != 2 {
		t.Fatalf("list --json: exit %d, %v\n%s%s", code, err, out, errs)
	}

	// revoke takes the id before or after the flags, and says so; list shows it.
	code, out, errs = runMain("keys", "revoke", id, "--store", url)
	if code != 0 || out != "revoked "+id+"\n" {
		t.Fatalf("revoke: exit %d, %q, %s", code, out, errs)
	}
	if _, out, _ = runMain("keys", "list", "--store", url, "--org", "acme"); !strings.Contains(out, "Z\n") || strings.HasSuffix(strings.TrimSpace(out), "-") {
		t.Fatalf("list after revoke:\n%s", out)
	}
	if code, _, errs = runMain("keys", "revoke", "--store", url, "--org", "globex", id); code == 0 || !strings.Contains(errs, "no key") {
		t.Fatalf("revoke from another org: exit %d, %s", code, errs)
	}

	// Refusals print nothing on stdout.
	for _, args := range [][]string{
		{"keys", "create", "--store", url, "--grant", "full:*"},
		{"keys", "create", "--store", url, "--org", "acme"},
		{"keys", "create", "--store", url, "--org", "acme", "--grant", "admin:jobs"},
		{"keys", "create", "--store", url, "--org", "a b", "--grant", "full:*"},
		{"keys", "create", "--store", "mysql://x", "--org", "acme", "--grant", "full:*"},
		{"keys", "create", "--store", "sqlite://", "--org", "acme", "--grant", "full:*"},
		{"keys", "frobnicate"},
	} {
		if code, out, _ := runMain(args...); code == 0 || out != "" {
			t.Errorf("%v: exit %d, stdout %q", args, code, out)
		}
	}
}

// TestServeRequiresKeys runs the binary: a key made with `errand keys
// create` works against `errand serve`, no key is 401, /healthz is open,
// a revoked key stops at once, and the webhook guard refuses loopback.
func TestServeRequiresKeys(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildErrand(t)
	dir := t.TempDir()
	store := "sqlite://" + filepath.Join(dir, "errand.db")
	out, err := exec.Command(bin, "keys", "create", "--store", store, "--create", "--org", "acme", "--grant", "full:*").Output()
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n"); len(lines) != 1 || !auth.WellFormed(lines[0]) {
		t.Fatalf("keys create stdout %q", out)
	}
	key := strings.TrimSpace(string(out))

	_, url, logs := startServe(t, bin, "--store", store)
	if strings.Contains(logs.String(), "first admin key") {
		t.Fatalf("serve made a first key on a store that has one:\n%s", logs)
	}
	if st, _ := call(t, "", "GET", url+"/healthz", ""); st != 200 {
		t.Fatalf("healthz without a key: %d", st)
	}
	if st, body := call(t, "", "GET", url+"/v1/instances", ""); st != 401 || !strings.Contains(body, "UNAUTHENTICATED") {
		t.Fatalf("no key: %d %s", st, body)
	}
	if st, body := call(t, key, "POST", url+"/v1/instances", `{"name":"jobs"}`); st != 201 {
		t.Fatalf("create instance: %d %s", st, body)
	}
	// The CLI takes the key from ERRAND_API_KEY or --api-key; without
	// one it is refused with the API's code.
	c := newCLI(t, url)
	c.refused("UNAUTHENTICATED", "instances", "list")
	if out := c.ok("instances", "list", "--api-key", key); !strings.Contains(out, "jobs") {
		t.Fatalf("instances list --api-key:\n%s", out)
	}
	c.env = []string{"ERRAND_API_KEY=" + key}
	if out := c.ok("queues", "list", "-i", "jobs"); !strings.Contains(out, "default") {
		t.Fatalf("queues list with ERRAND_API_KEY:\n%s", out)
	}
	c.refused("NOT_FOUND", "queues", "list", "-i", "nope")
	// Serve mode creates nothing on first use.
	if st, _ := call(t, key, "GET", url+"/v1/tasks/nope/queues", ""); st != 404 {
		t.Fatalf("unknown instance: %d", st)
	}
	for _, target := range []string{"http://127.0.0.1:9/x", "https://127.0.0.1/x", "https://10.1.2.3/x", "https://169.254.169.254/latest", "https://user:pw@example.com/x"} {
		st, body := call(t, key, "POST", url+"/v1/tasks/jobs/queues", `{"name":"q","target":{"webhook":"`+target+`"}}`)
		if st != 400 || !strings.Contains(body, "target.webhook") {
			t.Errorf("webhook %s: %d %s", target, st, body)
		}
	}
	// The store holds webhook signing keys: its files are the owner's only.
	for _, f := range []string{"errand.db", "errand.db-wal", "errand.db-shm"} {
		fi, err := os.Stat(filepath.Join(dir, f))
		if err != nil {
			t.Fatalf("while serve runs: %v", err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", f, fi.Mode().Perm())
		}
	}

	// Revoked from another process while serve runs: the next call is 401.
	list, err := exec.Command(bin, "keys", "list", "--store", store).Output()
	if err != nil {
		t.Fatal(err)
	}
	id := strings.Fields(strings.Split(string(list), "\n")[1])[0]
	if out, err := exec.Command(bin, "keys", "revoke", "--store", store, id).CombinedOutput(); err != nil {
		t.Fatalf("revoke: %v %s", err, out)
	}
	if st, body := call(t, key, "GET", url+"/v1/instances", ""); st != 401 {
		t.Fatalf("a revoked key: %d %s", st, body)
	}
}

// TestServeFirstAdminKey: on an empty store serve makes a first admin key
// once and, its stderr not being a terminal, writes it to an owner-only
// file it names in the log; the key is never in the log. It works; a
// restart makes no other. --webhook-allow opens a range, http included.
func TestServeFirstAdminKey(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildErrand(t)
	dir := t.TempDir()
	store := "sqlite://" + filepath.Join(dir, "errand.db")
	keyFile := filepath.Join(dir, "errand-admin-key")
	cmd, url, logs := startServe(t, bin, "--store", store, "--org", "ops", "--log-format", "json")
	// stderr reaches the buffer through a pipe: it may trail stdout's
	// "listening" line a little.
	logs.waitFor(t, keyFile, 10*time.Second)
	b, err := os.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	key := strings.TrimSpace(string(b))
	if !auth.WellFormed(key) {
		t.Fatalf("key file holds %q", b)
	}
	if fi, _ := os.Stat(keyFile); fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v", fi.Mode().Perm())
	}
	if strings.Contains(logs.String(), key[len("errk_"):]) {
		t.Fatalf("the key is in the log:\n%s", logs)
	}
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		if strings.HasPrefix(l, "stdout: ") { // startMode's copy of what errand printed, not its log
			continue
		}
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("--log-format json wrote a line that is not JSON: %q", l)
		}
	}
	if st, body := call(t, key, "POST", url+"/v1/instances", `{"name":"jobs"}`); st != 201 {
		t.Fatalf("first key: %d %s", st, body)
	}
	if st, _ := call(t, key, "POST", url+"/v1/tasks/jobs/queues", `{"name":"q","target":{"webhook":"http://127.0.0.1:9/x"}}`); st != 400 {
		t.Fatalf("loopback webhook without --webhook-allow: %d", st)
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, logs)
	}

	// A second store in the same directory would make its own first key
	// there: it refuses to start rather than overwrite the first's file.
	second := exec.Command(bin, "serve", "--store", "sqlite://"+filepath.Join(dir, "other.db"), "--addr", "127.0.0.1:0")
	out, err := second.CombinedOutput()
	if err == nil || !strings.Contains(string(out), keyFile+" exists") {
		t.Fatalf("a second store beside the first key's file: %v\n%s", err, out)
	}
	if b2, _ := os.ReadFile(keyFile); string(b2) != string(b) {
		t.Fatal("the first store's key file was overwritten")
	}

	os.Remove(keyFile)
	_, url, logs = startServe(t, bin, "--store", store, "--webhook-allow", "127.0.0.1/32", "--webhook-allow", "::1")
	if _, err := os.Stat(keyFile); err == nil || strings.Contains(logs.String(), "first admin key") {
		t.Fatalf("a restart made another first key:\n%s", logs)
	}
	if st, body := call(t, key, "POST", url+"/v1/tasks/jobs/queues", `{"name":"q","target":{"webhook":"http://127.0.0.1:9/x"}}`); st != 201 {
		t.Fatalf("allowed loopback webhook: %d %s", st, body)
	}
	if st, _ := call(t, key, "POST", url+"/v1/tasks/jobs/queues", `{"name":"q2","target":{"webhook":"http://10.0.0.1/x"}}`); st != 400 {
		t.Fatalf("a range not allowed: %d", st)
	}
	// Key list of the org shows the first key.
	out, err = exec.Command(bin, "keys", "list", "--store", store, "--org", "ops").Output()
	if err != nil || !strings.Contains(string(out), "full:*") || !strings.Contains(string(out), key[:13]) {
		t.Fatalf("keys list: %v\n%s", err, out)
	}
}

func TestServeFlags(t *testing.T) {
	for _, args := range [][]string{
		{"serve", "--store", "postgres://localhost/x"},
		{"serve", "--store", "nope"},
		{"serve", "--webhook-allow", "10.0.0.0/33"},
		{"serve", "--webhook-allow", "example.com"},
		{"serve", "--org", ""},
		{"serve", "extra"},
	} {
		if code, out, _ := runMain(args...); code == 0 || out != "" {
			t.Errorf("%v: exit %d, stdout %q", args, code, out)
		}
	}
}

// TestNodeFlagRefusals: values of dev's and serve's flags that would be
// replaced silently, or refused only after the store was opened, are
// usage errors (exit 2) naming the flag, before any store file is made.
func TestNodeFlagRefusals(t *testing.T) {
	dir := t.TempDir()
	store := "sqlite://" + filepath.Join(dir, "x.db")
	for _, c := range []struct {
		args []string
		flag string
	}{
		{[]string{"serve", "--read-timeout", "-1s"}, "--read-timeout"},
		{[]string{"serve", "--idle-timeout", "0"}, "--idle-timeout"},
		{[]string{"serve", "--channel-keep", "-5"}, "--channel-keep"},
		{[]string{"serve", "--channel-max-age", "-1s"}, "--channel-max-age"},
		{[]string{"serve", "--sync", "bogus"}, "--sync"},
		{[]string{"serve", "--ops-retention-days", "0"}, "--ops-retention-days"},
		{[]string{"serve", "--shutdown-grace", "-1s"}, "--shutdown-grace"},
		{[]string{"serve", "--backup-dir", dir}, "--backup-key-file"},
		{[]string{"dev", "--data", dir, "--sync", "bogus"}, "--sync"},
		{[]string{"dev", "--data", dir, "--read-timeout", "0"}, "--read-timeout"},
	} {
		args := c.args
		if args[0] == "serve" {
			args = append(args, "--store", store, "--addr", "127.0.0.1:0")
		} else {
			args = append(args, "--addr", "127.0.0.1:0")
		}
		if code, _, errs := runMain(args...); code != exitUsage || !strings.Contains(errs, c.flag) {
			t.Errorf("%v: exit %d, %q; want a usage error naming %s", c.args, code, errs, c.flag)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("refused starts left files: %v", entries)
	}
}
