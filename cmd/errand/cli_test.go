package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/errandhq/errand/errandapi"
)

// cliRun is one run of the CLI binary: its exit code and output.
type cliRun struct {
	code        int
	out, errout string
}

// cli runs the binary as a process against one node.
type cli struct {
	t   *testing.T
	bin string
	url string
	env []string
}

func newCLI(t *testing.T, url string) *cli {
	return &cli{t: t, bin: buildErrand(t), url: url}
}

// devCLI starts `errand dev` on a fresh data directory and returns the CLI
// on it with ERRAND_INSTANCE=jobs; it skips in -short runs.
func devCLI(t *testing.T) *cli {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	_, url, _ := startMode(t, buildErrand(t), "dev", "--data", t.TempDir())
	c := newCLI(t, url)
	c.env = []string{"ERRAND_INSTANCE=jobs"}
	return c
}

// run runs `errand ARGS…` with stdin and ERRAND_URL set to the node.
func (c *cli) run(stdin string, args ...string) cliRun {
	c.t.Helper()
	cmd := exec.Command(c.bin, args...)
	cmd.Env = append(append(os.Environ(), "ERRAND_URL="+c.url, "ERRAND_API_KEY=", "ERRAND_INSTANCE="), c.env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		c.t.Fatal(err)
	}
	return cliRun{code, out.String(), errb.String()}
}

// ok runs the command and fails the test unless it exits 0.
func (c *cli) ok(args ...string) string {
	c.t.Helper()
	r := c.run("", args...)
	if r.code != 0 {
		c.t.Fatalf("errand %s: exit %d\n%s%s", strings.Join(args, " "), r.code, r.out, r.errout)
	}
	return r.out
}

// json runs the command with --json, wants exit 0, and decodes stdout
// into v.
func (c *cli) json(v any, args ...string) {
	c.t.Helper()
	out := c.ok(append(args, "--json")...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		c.t.Fatalf("errand %s --json: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// refused runs the command, wants exit code 1 with code on stderr and
// nothing on stdout.
func (c *cli) refused(code errandapi.Code, args ...string) {
	c.t.Helper()
	r := c.run("", args...)
	if r.code != exitRefused || !strings.Contains(r.errout, string(code)) || r.out != "" {
		c.t.Fatalf("errand %s: want exit 1 with %s on stderr, got exit %d\nstdout %q\nstderr %q", strings.Join(args, " "), code, r.code, r.out, r.errout)
	}
}

// usage runs the command and wants exit code 2 with wantErr on stderr.
func (c *cli) usage(wantErr string, args ...string) {
	c.t.Helper()
	r := c.run("", args...)
	if r.code != exitUsage || !strings.Contains(r.errout, wantErr) || r.out != "" {
		c.t.Fatalf("errand %s: want exit 2 with %q, got exit %d\nstdout %q\nstderr %q", strings.Join(args, " "), wantErr, r.code, r.out, r.errout)
	}
}

// TestCLIHelp: every command and subcommand has a description and
// examples, and --help exits 0; internal flags are hidden; usage errors
// exit 2.
func TestCLIHelp(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	c := newCLI(t, "http://127.0.0.1:1")
	var walk func(cmd *cobra.Command)
	n := 0
	walk = func(cmd *cobra.Command) {
		if cmd.Hidden || cmd.Name() == "help" {
			return
		}
		if cmd.Long == "" || cmd.Example == "" || cmd.Short == "" {
			t.Errorf("%s: a description and examples are needed", cmd.CommandPath())
		}
		args := append(strings.Fields(cmd.CommandPath())[1:], "--help")
		out := c.ok(args...)
		if cmd.DisableFlagParsing { // export, import, restore print their own usage
			if !strings.Contains(out, "usage:") || !strings.Contains(out, "examples:") {
				t.Errorf("%s --help:\n%s", cmd.CommandPath(), out)
			}
			n++
			return
		}
		if !strings.Contains(out, "Examples:") || !strings.Contains(out, strings.SplitN(cmd.Long, "\n", 2)[0]) {
			t.Errorf("%s --help:\n%s", cmd.CommandPath(), out)
		}
		n++
		for _, s := range cmd.Commands() {
			walk(s)
		}
	}
	walk(newRoot(nil, nil))
	if n < 25 {
		t.Fatalf("only %d commands walked", n)
	}
	if out := c.ok("serve", "--help"); strings.Contains(out, "cpuprofile") || !strings.Contains(out, "--webhook-allow") {
		t.Errorf("serve --help shows an internal flag or misses one:\n%s", out)
	}
	c.usage("is not a host name", "dev", "--allow-host", "https://x.example")
	c.usage("unknown command \"frob\"", "frob")
	c.usage("unknown command \"frob\"", "queues", "frob")
	c.usage("a subcommand is needed", "queues")
	c.usage("a command is needed")
	c.usage("missing ID", "get", "-i", "jobs")
	c.usage("--instance (or ERRAND_INSTANCE) is required", "get", "x")
	c.usage("--queue is required", "list", "-i", "jobs")
	c.usage("unknown flag: --nope", "list", "--nope")
	c.usage("unexpected argument", "version", "x")
	c.usage("add --yes", "queues", "delete", "q", "-i", "jobs")
	c.usage("--payload is not JSON", "add", "-i", "jobs", "-q", "q", "--payload", "{nope")
	c.usage("--rate", "queues", "update", "q", "-i", "jobs", "--rate", "fast")
	// NaN parses as a float but JSON cannot carry it: refused before any call.
	c.usage(`--rate: "NaN" is not a number`, "queues", "update", "q", "-i", "jobs", "--rate", "NaN")
	c.usage(`"NaN" is not a number of seconds`, "add", "-i", "jobs", "-q", "q", "--delay", "NaN")
	c.usage(`"1x" is neither seconds (90, 1.5) nor a duration`, "add", "-i", "jobs", "-q", "q", "--delay", "1x")
	c.usage(`--max-age: "1.5s" is not whole seconds or a duration (24h)`, "queues", "update", "q", "-i", "jobs", "--max-age", "1.5s")
	// help of a topic that is not one is a usage error, not the root's help.
	c.usage(`no help topic "nosuch"`, "help", "nosuch")
	c.usage(`no help topic "queues nosuch"`, "help", "queues", "nosuch")
	// export, import and restore parse their own flags, and word a bad one
	// as the others do; a bundle that is not there is the command line's.
	c.usage("unknown flag: --bogus", "export", "--bogus")
	c.usage("flag needs an argument: --out", "export", "--out")
	c.usage(`invalid argument "maybe" for "--dry-run" flag`, "import", "--dry-run=maybe", "x")
	c.usage("unknown flag: --bogus", "restore", "--bogus")
	c.usage("no such file or directory", "import", filepath.Join(t.TempDir(), "missing.json"))
}

// TestCLIVersion: errand version and errand --version print the version
// and the commit the toolchain recorded in the binary.
func TestCLIVersion(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	c := newCLI(t, "")
	v := c.ok("version")
	if c.ok("--version") != v || !strings.HasPrefix(v, "errand ") {
		t.Fatalf("version %q, --version %q", v, c.ok("--version"))
	}
	info, err := exec.Command("go", "version", "-m", c.bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	want := "commit unknown"
	for _, l := range strings.Split(string(info), "\n") {
		if _, rev, ok := strings.Cut(l, "vcs.revision="); ok {
			want = "commit " + rev[:12]
		}
	}
	if !strings.Contains(v, want) {
		t.Fatalf("version %q, want %q (go version -m:\n%s)", v, want, info)
	}
}

// TestCLIVerbs runs every verb against a real errand dev: tables, --json
// parsed, exit codes.
func TestCLIVerbs(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildErrand(t)
	_, url, logs := startMode(t, bin, "dev", "--data", t.TempDir())
	c := newCLI(t, url)
	// The start says where the console and MCP are.
	if s := logs.String(); !strings.Contains(s, "stdout: console  "+url+"/console/\n") || !strings.Contains(s, "stdout: MCP      "+url+"/mcp\n") {
		t.Fatalf("errand dev did not say where its console and MCP are:\n%s", s)
	}

	// Instances. None yet: no table, stderr says so and how to make one.
	if r := c.run("", "instances", "list"); r.code != 0 || r.out != "" || !strings.HasPrefix(r.errout, "no instances the key can see") {
		t.Fatalf("instances list of none: exit %d, stdout %q, stderr %q", r.code, r.out, r.errout)
	}
	// --json prints the API's answer, envelope included.
	var inst errandapi.InstanceResponse
	c.json(&inst, "instances", "create", "jobs")
	if inst.Instance.Name != "jobs" || inst.Instance.CreatedAt == 0 {
		t.Fatalf("instance %+v", inst)
	}
	c.refused(errandapi.CodeInstanceExists, "instances", "create", "jobs")
	var il errandapi.InstanceList
	c.json(&il, "instances", "list")
	if len(il.Instances) != 1 || il.Instances[0].Name != "jobs" {
		t.Fatalf("instances %+v", il)
	}
	if out := c.ok("instances", "list"); !strings.Contains(out, "NAME") || !strings.Contains(out, "jobs") {
		t.Fatalf("instances table:\n%s", out)
	}

	// Queues.
	c.env = []string{"ERRAND_INSTANCE=jobs"}
	var qr errandapi.QueueResponse
	c.json(&qr, "queues", "create", "emails", "--mode", "pull", "--max-attempts", "1")
	if q := qr.Queue; q == nil || q.Name != "emails" || q.Mode != errandapi.ModePull || q.MaxAttempts != 1 {
		t.Fatalf("queue %+v", qr)
	}
	c.refused(errandapi.CodeQueueExists, "queues", "create", "emails")
	c.refused(errandapi.CodeInvalidArgument, "queues", "create", "bad", "--max-attempts", "0")
	qr = errandapi.QueueResponse{}
	c.json(&qr, "queues", "update", "emails", "--rate", "50", "--paused")
	if q := qr.Queue; q == nil || q.RatePerSecond == nil || *q.RatePerSecond != 50 || !q.Paused {
		t.Fatalf("updated queue %+v", qr)
	}
	qr = errandapi.QueueResponse{}
	c.json(&qr, "queues", "update", "emails", "--rate", "none", "--paused=false")
	if q := qr.Queue; q == nil || q.RatePerSecond != nil || q.Paused {
		t.Fatalf("cleared queue %+v", qr)
	}
	// Durations where a setting is seconds.
	qr = errandapi.QueueResponse{}
	c.json(&qr, "queues", "update", "emails", "--min-backoff", "30s", "--max-backoff", "1h", "--max-age", "72h")
	if q := qr.Queue; q == nil || q.MinBackoffSeconds != 30 || q.MaxBackoffSeconds != 3600 || q.MaxAgeSeconds == nil || *q.MaxAgeSeconds != 259200 {
		t.Fatalf("queue with durations %+v", qr)
	}
	qr = errandapi.QueueResponse{}
	c.json(&qr, "queues", "get", "emails")
	if q := qr.Queue; q == nil || q.Name != "emails" || q.Counts == nil {
		t.Fatalf("queues get --json %+v", qr)
	}
	var ql errandapi.QueueList
	c.json(&ql, "queues", "list")
	if len(ql.Queues) != 2 {
		t.Fatalf("queues %+v", ql)
	}
	if out := c.ok("queues", "get", "emails"); !strings.Contains(out, "pull") || !strings.Contains(out, "maxAttempts") {
		t.Fatalf("queues get:\n%s", out)
	}
	c.refused(errandapi.CodeNotFound, "queues", "get", "nope")

	// Add, list, get.
	var ar errandapi.AddResult
	add := func(args ...string) {
		t.Helper()
		var resp errandapi.AddResponse
		c.json(&resp, append([]string{"add"}, args...)...)
		if len(resp.Tasks) != 1 {
			t.Fatalf("add %v: %+v", args, resp)
		}
		ar = resp.Tasks[0]
	}
	add("-q", "emails", "--payload", `{"n":1}`, "--name", "first", "--delay", "3600")
	if !ar.OK || ar.State != errandapi.StateScheduled {
		t.Fatalf("add %+v", ar)
	}
	r := c.run("", "add", "-q", "emails", "--name", "first")
	if r.code != exitRefused || !strings.Contains(r.errout, "TASK_EXISTS") || !strings.Contains(r.errout, ar.ID) {
		t.Fatalf("add again: %+v", r)
	}
	var page errandapi.TaskPage
	c.json(&page, "list", "-q", "emails", "--state", "scheduled")
	if len(page.Tasks) != 1 || page.Tasks[0].ID != ar.ID || page.Cursor != nil {
		t.Fatalf("list %+v", page)
	}
	if out := c.ok("list", "-q", "emails"); !strings.Contains(out, ar.ID) || !strings.Contains(out, "first") {
		t.Fatalf("list table:\n%s", out)
	}
	var task errandapi.Task
	taskJSON := func(args ...string) {
		t.Helper()
		var resp errandapi.TaskResponse
		c.json(&resp, args...)
		if resp.Task == nil {
			t.Fatalf("%v --json: no task in %+v", args, resp)
		}
		task = *resp.Task
	}
	taskJSON("get", ar.ID)
	if task.ID != ar.ID || string(task.Payload) != `{"n":1}` {
		t.Fatalf("get %+v", task)
	}
	c.refused(errandapi.CodeNotFound, "get", "01nope")

	// Run makes it due; lease and ack finish it.
	taskJSON("run", ar.ID)
	if task.State != errandapi.StateScheduled || task.RunAt > time.Now().Add(time.Minute).UnixMilli() {
		t.Fatalf("run %+v", task)
	}
	var lr errandapi.LeaseResponse
	c.json(&lr, "lease", "-q", "emails", "--count", "5", "--lease-seconds", "120")
	if len(lr.Tasks) != 1 || lr.Tasks[0].ID != ar.ID || lr.Tasks[0].LeaseID == "" {
		t.Fatalf("lease %+v", lr)
	}
	c.refused(errandapi.CodeLeaseLost, "ack", ar.ID, "--lease", "0000")
	taskJSON("ack", ar.ID, "--lease", lr.Tasks[0].LeaseID, "--result", `{"sent":true}`)
	if task.State != errandapi.StateSucceeded || string(task.Result) != `{"sent":true}` {
		t.Fatalf("ack %+v", task)
	}
	c.refused(errandapi.CodeNotRunnable, "run", ar.ID)
	c.refused(errandapi.CodeWrongMode, "lease", "-q", "default")

	// Extend and release: a task leased, its lease made longer, given back
	// unharmed (retrying, due at once, the attempt not counted), leased again
	// and released as a failed attempt (its one attempt spent: failed).
	add("-q", "emails", "--payload", `{"n":2}`)
	lease := func() errandapi.LeasedTask {
		t.Helper()
		var lr errandapi.LeaseResponse
		c.json(&lr, "lease", "-q", "emails", "--lease-seconds", "30")
		if len(lr.Tasks) != 1 || lr.Tasks[0].ID != ar.ID {
			t.Fatalf("lease %+v, want %s", lr, ar.ID)
		}
		return lr.Tasks[0]
	}
	l := lease()
	taskJSON("extend", l.ID, "--lease", l.LeaseID, "--lease-seconds", "600")
	if task.LeaseExpiresAt == nil || *task.LeaseExpiresAt < l.LeaseExpiresAt+500_000 {
		t.Fatalf("extend: lease expires %v, was %d", task.LeaseExpiresAt, l.LeaseExpiresAt)
	}
	if r := c.run("", "extend", l.ID, "--lease", l.LeaseID, "--lease-seconds", "0"); r.code != exitRefused || !strings.Contains(r.errout, "--lease-seconds: must be 1–86400") {
		t.Fatalf("extend --lease-seconds 0: %+v", r)
	}
	if r := c.run("", "release", l.ID, "--lease", l.LeaseID, "--delay", "-1"); r.code != exitRefused || !strings.Contains(r.errout, "--delay: must be 0–86400") {
		t.Fatalf("release --delay -1: %+v", r)
	}
	c.usage("--error is empty", "release", l.ID, "--lease", l.LeaseID, "--error", "")
	c.usage("--lease is required", "release", l.ID)
	c.usage("--lease is required", "extend", l.ID)
	taskJSON("release", l.ID, "--lease", l.LeaseID)
	if task.State != errandapi.StateRetrying || len(task.Attempts) != 1 || task.Attempts[0].Status != "released" || task.Attempt != 0 {
		t.Fatalf("release unharmed %+v", task)
	}
	c.refused(errandapi.CodeLeaseLost, "release", l.ID, "--lease", l.LeaseID)
	c.refused(errandapi.CodeLeaseLost, "extend", l.ID, "--lease", l.LeaseID)
	l = lease()
	if out := c.ok("release", l.ID, "--lease", l.LeaseID, "--error", "smtp: 451 try later"); !strings.HasPrefix(out, l.ID+" failed") {
		t.Fatalf("release --error: %q", out)
	}
	taskJSON("get", l.ID)
	if task.State != errandapi.StateFailed || task.LastError == nil || *task.LastError != "smtp: 451 try later" {
		t.Fatalf("released as failed %+v", task)
	}

	// Cancel: several ids, one refused: the others are done, exit 1.
	add("-q", "emails", "--delay", "3600")
	r = c.run("", "cancel", ar.ID, task.ID, "--json")
	if r.code != exitRefused || !strings.Contains(r.errout, task.ID+": NOT_CANCELLABLE") || !strings.HasPrefix(r.out, `{"task":{"id":"`+ar.ID+`"`) ||
		!strings.Contains(r.out, `"state":"cancelled"`) {
		t.Fatalf("cancel: %+v", r)
	}

	// Retry: a webhook that fails makes a failed task (one attempt).
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(500) }))
	defer hook.Close()
	c.ok("queues", "create", "hooks", "--webhook", hook.URL, "--max-attempts", "1")
	add("-q", "hooks", "--payload", `{}`)
	// dev logs each attempt once its outcome is stored: with one attempt
	// allowed, the task has failed when its line is in the log.
	logs.waitFor(t, "queue=hooks task="+ar.ID+" attempt=", 20*time.Second)
	taskJSON("get", ar.ID)
	if task.State != errandapi.StateFailed || len(task.Attempts) != 1 || task.Attempts[0].HTTPStatus == nil || *task.Attempts[0].HTTPStatus != 500 {
		t.Fatalf("failed task %+v", task)
	}
	if out := c.ok("get", ar.ID); !strings.Contains(out, "ATTEMPT") || !strings.Contains(out, "500") {
		t.Fatalf("get table:\n%s", out)
	}
	c.ok("queues", "update", "hooks", "--paused") // the retried task stays due
	taskJSON("retry", ar.ID)
	if task.State != errandapi.StateScheduled {
		t.Fatalf("retry %+v", task)
	}
	c.refused(errandapi.CodeNotRetryable, "retry", ar.ID)

	// Usage: the tasks added and the attempts made above.
	var ur errandapi.UsageResponse
	c.json(&ur, "usage")
	u := ur.Usage
	if u.TasksAdded != 4 || u.Deliveries.Pull != 3 || u.Deliveries.Webhook != 1 || u.Deliveries.Total != 4 || len(u.Days) == 0 {
		t.Fatalf("usage: added %d, deliveries %+v, %d days", u.TasksAdded, u.Deliveries, len(u.Days))
	}
	out := c.ok("usage")
	if !strings.Contains(out, "WEBHOOK") || !strings.Contains(out, "4 tasks added, 4 deliveries") {
		t.Fatalf("usage table:\n%s", out)
	}
	// The month's row: totals, and in BYTES KEPT the average, said so.
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if month := strings.Fields(lines[len(lines)-2]); len(month) != 9 || month[0] != u.Month || month[1] != "total" || month[2] != "4" ||
		month[7] != "avg" || month[8] != strconv.FormatInt(u.AverageBytesKept, 10) {
		t.Fatalf("usage table's month row %q:\n%s", month, out)
	}

	// Functions: a queue's function nothing serves is listed with 0 slots.
	c.ok("queues", "create", "receipts", "--function", "app/send-receipt")
	if out := c.ok("functions"); !regexp.MustCompile(`(?m)^FUNCTION +SLOTS +QUEUES\napp/send-receipt +0 +receipts$`).MatchString(out) {
		t.Fatalf("functions table:\n%s", out)
	}
	var fl errandapi.FunctionList
	c.json(&fl, "functions")
	if len(fl.Functions) != 1 || fl.Functions[0].Function != "app/send-receipt" || fl.Functions[0].Slots != 0 {
		t.Fatalf("functions %+v", fl)
	}
	c.ok("queues", "delete", "receipts", "--yes")

	// Purge and delete need --yes and say how many tasks went.
	var del errandapi.DeleteResponse
	c.json(&del, "queues", "purge", "emails", "--yes")
	if del.Deleted != 3 {
		t.Fatalf("purge %+v", del)
	}
	if out := c.ok("queues", "delete", "emails", "--yes"); out != "deleted queue emails: 0 tasks removed\n" {
		t.Fatalf("delete: %q", out)
	}
	c.ok("instances", "delete", "jobs", "--yes")

	c.ok("instances", "create", "gone")
	if out := c.ok("instances", "delete", "gone", "--yes", "--json"); out != `{"pending":false}`+"\n" {
		t.Fatalf("instances delete --json: %q", out)
	}

	// No node at the address: exit 1, saying so.
	c.url = "http://" + closedAddr(t)
	r = c.run("", "instances", "list")
	if r.code != exitRefused || !strings.Contains(r.errout, "no errand answers at") {
		t.Fatalf("no node: %+v", r)
	}
}

// closedAddr is a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	srv := httptest.NewServer(http.NotFoundHandler())
	addr := srv.Listener.Addr().String()
	srv.Close()
	return addr
}

// TestCLIAddFile: a 10,000-line JSONL file with 3 bad lines is added in
// batches; the summary names the bad lines by number; a second run adds
// nothing twice; stdin works too.
func TestCLIAddFile(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildErrand(t)
	_, url := startErrand(t, bin, "--data", t.TempDir())
	c := newCLI(t, url)
	c.env = []string{"ERRAND_INSTANCE=jobs"}
	c.ok("queues", "create", "bulk", "--mode", "pull")

	const lines = 10_000
	bad := map[int]string{ // line → what the summary says of it
		17:   "not a JSON object", // not JSON
		4242: "unknown field",     // refused by the decoding of the add shape
		9999: "delay",             // refused by the node: tasks[i].delay
	}
	var b strings.Builder
	for i := 1; i <= lines; i++ {
		switch i {
		case 17:
			b.WriteString("{nope\n")
		case 4242:
			b.WriteString(`{"payload":1,"delya":5}` + "\n")
		case 9999:
			b.WriteString(`{"payload":1,"name":"t9999","delay":-5}` + "\n")
		case 5000:
			b.WriteString("\n") // blank: skipped, still counted as a line
		default:
			fmt.Fprintf(&b, `{"name":"t%d","payload":{"i":%d}}`+"\n", i, i)
		}
	}
	file := filepath.Join(t.TempDir(), "tasks.jsonl")
	if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	r := c.run("", "add", "-q", "bulk", "--file", file, "--json")
	took := time.Since(start)
	var sum addSummary
	if err := json.Unmarshal([]byte(r.out), &sum); err != nil || r.code != exitRefused {
		t.Fatalf("exit %d, %v\n%s\n%s", r.code, err, r.out, r.errout)
	}
	if sum.Added != lines-4 || sum.Existing != 0 || len(sum.Refused) != 3 {
		t.Fatalf("summary %+v", sum)
	}
	for _, ref := range sum.Refused {
		if want, ok := bad[ref.Line]; !ok || !strings.Contains(ref.Message, want) || ref.Code != errandapi.CodeInvalidArgument {
			t.Errorf("refusal %+v", ref)
		}
		if strings.HasPrefix(ref.Message, "tasks[") {
			t.Errorf("refusal names the batch's index, not the line only: %+v", ref)
		}
	}
	t.Logf("10,000 lines added in %v", took)
	var q errandapi.QueueResponse
	c.json(&q, "queues", "get", "bulk")
	if q.Queue == nil || q.Queue.Counts[errandapi.StateScheduled] != lines-4 {
		t.Fatalf("queues get bulk --json %+v", q)
	}

	// Again, as a table: every named task exists already.
	r = c.run("", "add", "-q", "bulk", "--file", file)
	if r.code != exitRefused || !strings.HasPrefix(r.out, fmt.Sprintf("added 0, already existing %d, refused 3\n  line 17: INVALID_ARGUMENT: not a JSON object: invalid character", lines-4)) ||
		!strings.Contains(r.out, "  line 9999: INVALID_ARGUMENT: delay") {
		t.Fatalf("second run: exit %d\n%s%s", r.code, r.out, r.errout)
	}

	// stdin, all good: exit 0.
	r = c.run("{\"payload\":1}\n{\"payload\":2}\n", "add", "-q", "bulk", "--file", "-")
	if r.code != 0 || r.out != "added 2, already existing 0, refused 0\n" {
		t.Fatalf("stdin: %+v", r)
	}
	// A refusal of the whole call stops the file: exit 1 with its code.
	r = c.run("{\"payload\":1}\n", "add", "-q", "nope", "--file", "-")
	if r.code != exitRefused || !strings.Contains(r.errout, "NOT_FOUND") {
		t.Fatalf("unknown queue: %+v", r)
	}
	c.usage("--payload and --file are exclusive", "add", "-q", "bulk", "--file", file, "--payload", "1")
	// An empty --name (an unset variable) is refused, not sent as none,
	// which would add the task again on every run.
	c.usage("--name is empty", "add", "-q", "bulk", "--payload", "1", "--name", "")
	c.usage("--name is empty", "list", "-q", "bulk", "--name", "")
	c.usage("--limit 0: a page holds 1–200 tasks", "list", "-q", "bulk", "--limit", "0")
	// A key pasted with its newline is the key's fault, not --url's.
	c.usage("--api-key (or ERRAND_API_KEY): ", "list", "-q", "bulk", "--api-key", "errk_abc\n")
	c.usage("--url: ", "list", "-q", "bulk", "--url", "ftp://host", "--api-key", "errk_abc\n")
}
