package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/errandhq/errand/errandapi"
)

// TestCLITargetsAndWords runs against a real errand dev: a queue's or a
// task's target may be a channel or a function (--channel, --function,
// exclusive with --webhook), as the API then answers; a value the node
// refuses names the flag the user typed; an empty list or lease says so
// and prints no table; a line of a file that is not JSON says so in words.
func TestCLITargetsAndWords(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildErrand(t)
	_, url := startErrand(t, bin, "--data", t.TempDir())
	base := newCLI(t, url)
	base.env = []string{"ERRAND_INSTANCE=jobs"}
	base.ok("instances", "create", "jobs")
	// Each part is a subtest with its own queues, so that each reports on
	// its own.
	cliFor := func(t *testing.T) *cli {
		c := *base
		c.t = t
		return &c
	}

	// The target, read back through the API, not the CLI.
	target := func(t *testing.T, path string) *errandapi.Target {
		t.Helper()
		st, body := call(t, "", "GET", url+"/v1/tasks/jobs/"+path, "")
		var r struct {
			Queue *errandapi.Queue `json:"queue"`
			Task  *errandapi.Task  `json:"task"`
		}
		if err := json.Unmarshal([]byte(body), &r); st != 200 || err != nil {
			t.Fatalf("GET %s: %d %v %s", path, st, err, body)
		}
		if r.Queue != nil {
			return r.Queue.Target
		}
		return r.Task.Target
	}
	t.Run("targets", func(t *testing.T) { testTargets(t, cliFor(t), target) })
	t.Run("flags", func(t *testing.T) { testFlagNames(t, cliFor(t)) })
	t.Run("empty", func(t *testing.T) { testEmptyResults(t, cliFor(t)) })
	t.Run("file", func(t *testing.T) { testFileWords(t, cliFor(t)) })
}

// testTargets: --channel and --function make a queue's or a task's target
// (read through the API); two target flags are a usage error.
func testTargets(t *testing.T, c *cli, target func(*testing.T, string) *errandapi.Target) {
	c.ok("queues", "create", "chat2", "--channel", "room-2")
	if tg := target(t, "queues/chat2"); tg == nil || !reflect.DeepEqual(*tg, errandapi.Target{Channel: "room-2"}) {
		t.Fatalf("queue chat2's target %+v", tg)
	}
	c.ok("queues", "create", "receipts", "--function", "app/send-receipt", "--paused")
	if tg := target(t, "queues/receipts"); tg == nil || !reflect.DeepEqual(*tg, errandapi.Target{Function: "app/send-receipt"}) {
		t.Fatalf("queue receipts's target %+v", tg)
	}
	c.ok("queues", "update", "chat2", "--channel", "room-3")
	if tg := target(t, "queues/chat2"); tg == nil || tg.Channel != "room-3" {
		t.Fatalf("queue chat2's target after update %+v", tg)
	}
	c.ok("queues", "update", "default", "--paused")
	var add errandapi.AddResponse
	c.json(&add, "add", "-q", "default", "--payload", `{"text":"hi"}`, "--channel", "room-4")
	if len(add.Tasks) != 1 || !add.Tasks[0].OK {
		t.Fatalf("add --channel: %+v", add)
	}
	if tg := target(t, "tasks/"+add.Tasks[0].ID); tg == nil || !reflect.DeepEqual(*tg, errandapi.Target{Channel: "room-4"}) {
		t.Fatalf("task's target %+v", tg)
	}
	c.usage("--webhook and --channel are exclusive", "queues", "create", "x", "--webhook", "https://example.com/h", "--channel", "room-1")
	c.usage("--function and --channel are exclusive", "queues", "update", "chat2", "--function", "a/b", "--channel", "room-1")
	c.usage("--webhook and --function are exclusive", "add", "-q", "default", "--webhook", "https://example.com/h", "--function", "a/b")
	c.usage("--channel and --file are exclusive", "add", "-q", "default", "--channel", "room-1", "--file", "-")

	// --header: a webhook target's headers, shown masked.
	c.ok("queues", "create", "api", "--webhook", "https://api.example.com/in", "--header", "authorization: Bearer s3cret", "--header", "X-Api-Key:k1")
	hidden := map[string]string{"Authorization": errandapi.HiddenHeaderValue, "X-Api-Key": errandapi.HiddenHeaderValue}
	if tg := target(t, "queues/api"); tg == nil || !reflect.DeepEqual(tg.Headers, hidden) {
		t.Fatalf("queue api's target %+v", tg)
	}
	if out := c.ok("queues", "get", "api"); !strings.Contains(out, "with headers Authorization, X-Api-Key") || strings.Contains(out, "s3cret") {
		t.Fatalf("queues get api:\n%s", out)
	}
	c.ok("queues", "update", "api", "--webhook", "https://api.example.com/v2", "--header", "Authorization: "+errandapi.HiddenHeaderValue)
	if tg := target(t, "queues/api"); tg == nil || !reflect.DeepEqual(tg.Headers, map[string]string{"Authorization": errandapi.HiddenHeaderValue}) {
		t.Fatalf("queue api's target after update %+v", tg)
	}
	c.usage("--header goes with --webhook", "queues", "create", "y", "--function", "a/b", "--header", "X-A: 1")
	c.usage("--header goes with --webhook", "add", "-q", "default", "--header", "X-A: 1")
	c.usage(`want "Name: value"`, "add", "-q", "default", "--webhook", "https://example.com/h", "--header", "X-A")
}

// testFlagNames: the node's refusal names the flag, not the API's field.
func testFlagNames(t *testing.T, c *cli) {
	c.ok("queues", "create", "pulled", "--mode", "pull")
	for _, w := range []struct {
		says, field string
		args        []string
	}{
		{"--wait: must be 0–30", "waitSeconds", []string{"lease", "-q", "pulled", "--wait", "31"}},
		{"--lease-seconds: ", "leaseSeconds", []string{"lease", "-q", "pulled", "--lease-seconds", "0"}},
		{"--delay: ", "tasks[0]", []string{"add", "-q", "default", "--delay", "-5"}},
		{"--max-attempts: ", "maxAttempts", []string{"queues", "create", "bad", "--max-attempts", "0"}},
		{"--webhook: ", "target.webhook", []string{"queues", "update", "pulled", "--webhook", "not a url"}},
		{"--webhook: ", "target.webhook", []string{"queues", "create", "hooks", "--webhook", "not a url"}},
		{"--function: ", "target.function", []string{"add", "-q", "default", "--function", "nogroup"}},
		// What clears a setting is the flag's word, not the API's null.
		{`--max-concurrent: must be 1–100000, or "none" for unlimited`, "maxConcurrent", []string{"queues", "update", "pulled", "--max-concurrent", "0"}},
	} {
		r := c.run("", w.args...)
		if r.code != exitRefused || !strings.Contains(r.errout, "INVALID_ARGUMENT: "+w.says) || strings.Contains(r.errout, w.field) {
			t.Errorf("errand %v: want exit 1 saying %q, not %q: exit %d, %q", w.args, w.says, w.field, r.code, r.errout)
		}
	}

}

// testEmptyResults: nothing to lease or list prints no table and says so
// on stderr; --json is still the API's answer.
func testEmptyResults(t *testing.T, c *cli) {
	c.ok("queues", "create", "empty", "--mode", "pull")
	if r := c.run("", "lease", "-q", "empty"); r.code != 0 || r.out != "" || !strings.Contains(r.errout, "no tasks leased") {
		t.Fatalf("empty lease: %+v", r)
	}
	if r := c.run("", "list", "-q", "empty", "--state", "scheduled"); r.code != 0 || r.out != "" || !strings.Contains(r.errout, "no tasks scheduled in queue empty") {
		t.Fatalf("empty list: %+v", r)
	}
	var lr errandapi.LeaseResponse
	if c.json(&lr, "lease", "-q", "empty"); lr.Tasks == nil || len(lr.Tasks) != 0 {
		t.Fatalf("empty lease --json: %+v", lr)
	}

}

// testFileWords: a line of a file that is not a JSON object says so in
// words, with the decoder's detail after them.
func testFileWords(t *testing.T, c *cli) {
	c.ok("queues", "create", "lines", "--mode", "pull")
	r := c.run("nope\n5\n{\"payload\":1}\n{\"payload\":1,\"color\":2}\n", "add", "-q", "lines", "--file", "-")
	if r.code != exitRefused ||
		!strings.Contains(r.out, "line 1: INVALID_ARGUMENT: not a JSON object: invalid character 'o' in literal null (expecting 'u')") ||
		!strings.Contains(r.out, "line 2: INVALID_ARGUMENT: not a JSON object: the line is a JSON number") ||
		!strings.Contains(r.out, `line 4: INVALID_ARGUMENT: unknown field "color": a task's fields are name, payload, params, target, delay, runAt, deadlineSeconds and priority`) ||
		!strings.HasPrefix(r.out, "added 1, already existing 0, refused 3\n") {
		t.Fatalf("add --file with bad lines: exit %d\n%s%s", r.code, r.out, r.errout)
	}
}

// TestExportImportWithoutANode: export and import explain a node that does
// not answer as every other verb does, not with the client's raw error.
func TestExportImportWithoutANode(t *testing.T) {
	addr := "http://" + closedAddr(t)
	bundle := filepath.Join(t.TempDir(), "bundle.json")
	if err := os.WriteFile(bundle, []byte(`{"version":1,"instances":[]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"export", "--url", addr}, {"import", "--url", addr, bundle}, {"instances", "list", "--url", addr}} {
		code, out, errs := runMain(args...)
		if code != exitRefused || out != "" || !strings.Contains(errs, "no errand answers at "+addr+" (start one with errand dev, or set --url / ERRAND_URL)") ||
			strings.Contains(errs, "client: ") {
			t.Errorf("%v: exit %d, %q, %q", args, code, out, errs)
		}
	}
}

// TestServeLocksItsSQLiteStore: SQLite serves one node, so a serve on the
// SQLite file a running dev or serve holds is refused, naming the holder,
// and so is a dev on a running serve's file; a call without a key to serve
// says to pass --api-key or set ERRAND_API_KEY.
func TestServeLocksItsSQLiteStore(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildErrand(t)
	// refused runs a node that must not start: it must exit, saying want,
	// before it listens (a node that listens is a second node on the file).
	refused := func(want string, args ...string) {
		t.Helper()
		cmd := exec.Command(bin, append(args, "--addr", "127.0.0.1:0")...)
		out := &lockedBuffer{}
		cmd.Stderr = out
		pipe, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		listening := false
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "listening on") {
				listening = true
				_ = cmd.Process.Kill()
			}
		}
		err = cmd.Wait()
		if listening || err == nil || !strings.Contains(out.String(), want) {
			t.Fatalf("errand %v: listening %v, %v; want refused saying %q:\n%s", args, listening, err, want, out)
		}
	}

	data := t.TempDir()
	dev, _ := startErrand(t, bin, "--data", data)
	devDB := filepath.Join(data, "errand.db")
	refused("the SQLite store "+devDB+" is in use by errand dev (process "+strconv.Itoa(dev.Process.Pid)+")",
		"serve", "--store", "sqlite://"+devDB)

	dir := t.TempDir()
	db := filepath.Join(dir, "errand.db")
	first, url, _ := startServe(t, bin, "--store", "sqlite://"+db)
	holder := "in use by errand serve (process " + strconv.Itoa(first.Process.Pid) + ")"
	refused("the SQLite store "+db+" is "+holder, "serve", "--store", "sqlite://"+db)
	refused(holder, "dev", "--data", dir)

	// The first serve still answers, and tells a CLI caller without a key
	// what to do in the CLI's terms.
	c := newCLI(t, url)
	r := c.run("", "instances", "list")
	if r.code != exitRefused || !strings.Contains(r.errout, "UNAUTHENTICATED") || !strings.Contains(r.errout, "pass --api-key KEY or set ERRAND_API_KEY") ||
		strings.Contains(r.errout, "Authorization") {
		t.Fatalf("no key: %+v", r)
	}
}

// TestHelpExamplesSurviveNoMatch: a help example that pipes ids into a
// command does not run it without any (xargs -r), and one that picks an id
// with jq prints nothing, not "null", when there is none.
func TestHelpExamplesSurviveNoMatch(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, l := range strings.Split(c.Example, "\n") {
			if strings.Contains(l, "| xargs ") && !strings.Contains(l, "| xargs -r ") {
				t.Errorf("%s: example runs its command even when nothing matched: %s", c.CommandPath(), l)
			}
			if strings.Contains(l, "[0].id'") {
				t.Errorf("%s: example prints null when nothing matched: %s", c.CommandPath(), l)
			}
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(newRoot(nil, nil))
}
