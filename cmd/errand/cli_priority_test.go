package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/errandhq/errand/errandapi"
)

// TestCLIPriority: "add --priority" gives a task its priority, which
// "lease" then honours and "get" and "list" show; a line of "add --file" may carry
// one; one out of range is refused naming the flag.
func TestCLIPriority(t *testing.T) {
	c := devCLI(t)
	c.ok("queues", "create", "inbox", "--mode", "pull")
	c.ok("add", "-q", "inbox", "--payload", `{"n":1}`, "--name", "plain")
	c.ok("add", "-q", "inbox", "--payload", `{"n":2}`, "--name", "urgent", "--priority", "7")
	if r := c.run(`{"name":"filed","priority":3}`+"\n", "add", "-q", "inbox", "--file", "-"); r.code != 0 {
		t.Fatalf("add --file: exit %d, stderr %s", r.code, r.errout)
	}
	leased := leaseNamed(t, c, "inbox", "urgent,filed,plain")
	if out := c.ok("get", leased.Tasks[0].ID); !regexp.MustCompile(`(?m)^priority +7$`).MatchString(out) {
		t.Fatalf("get of a prioritized task:\n%s", out)
	}
	if out := c.ok("list", "-q", "inbox"); !strings.Contains(out, "leased p7") || !strings.Contains(out, "leased p3") {
		t.Fatalf("list shows no priorities:\n%s", out)
	}
	r := c.run("", "add", "-q", "inbox", "--payload", `{}`, "--priority", "10")
	if r.code != exitRefused || !strings.Contains(r.errout, "--priority: must be 0–9") {
		t.Fatalf("--priority 10: exit %d, stderr %s", r.code, r.errout)
	}
}

// TestCLIPrioritize: "prioritize --priority" raises waiting tasks, which
// "lease" then takes first, and prints each; a priority out of range is
// refused naming the flag, and the command without --priority is a usage
// error.
func TestCLIPrioritize(t *testing.T) {
	c := devCLI(t)
	c.ok("queues", "create", "inbox", "--mode", "pull")
	var ids []string
	for _, name := range []string{"a", "b", "c"} {
		var res errandapi.AddResponse
		c.json(&res, "add", "-q", "inbox", "--payload", `{}`, "--name", name)
		ids = append(ids, res.Tasks[0].ID)
	}
	out := c.ok("prioritize", "--priority", "6", ids[2], ids[1])
	if !strings.Contains(out, ids[2]+" scheduled, priority 6") || !strings.Contains(out, ids[1]+" scheduled, priority 6") {
		t.Fatalf("prioritize printed:\n%s", out)
	}
	leaseNamed(t, c, "inbox", "b,c,a")
	r := c.run("", "prioritize", "--priority", "10", ids[0])
	if r.code != exitRefused || !strings.Contains(r.errout, "--priority: must be 0–9") {
		t.Fatalf("--priority 10: exit %d, stderr %s", r.code, r.errout)
	}
	r = c.run("", "prioritize", ids[0])
	if r.code != exitUsage || !strings.Contains(r.errout, "--priority is required") {
		t.Fatalf("no --priority: exit %d, stderr %s", r.code, r.errout)
	}
}

// leaseNamed leases every task of queue (three at most) and fails unless
// their names, in lease order and joined with ",", are want.
func leaseNamed(t *testing.T, c *cli, queue, want string) errandapi.LeaseResponse {
	t.Helper()
	var leased errandapi.LeaseResponse
	c.json(&leased, "lease", "-q", queue, "--count", "3")
	var order []string
	for _, tk := range leased.Tasks {
		order = append(order, *tk.Name)
	}
	if got := strings.Join(order, ","); got != want {
		t.Fatalf("leased %s, want %s", got, want)
	}
	return leased
}

// TestCLIReschedule: "reschedule --delay" moves a task later (a lease then
// finds nothing) and "--run-at" with a past time makes it due now; a
// leased task is refused NOT_RUNNABLE; a delay out of range names the
// flag; neither flag, or both, is a usage error.
func TestCLIReschedule(t *testing.T) {
	c := devCLI(t)
	c.ok("queues", "create", "inbox", "--mode", "pull")
	var res errandapi.AddResponse
	c.json(&res, "add", "-q", "inbox", "--payload", `{}`, "--name", "a")
	id := res.Tasks[0].ID
	if out := c.ok("reschedule", "--delay", "3600", id); !strings.Contains(out, id+" scheduled, due ") {
		t.Fatalf("reschedule printed:\n%s", out)
	}
	// A duration is as many seconds: due 90 minutes after the add.
	var got errandapi.TaskResponse
	c.ok("reschedule", "--delay", "90m", id)
	if c.json(&got, "get", id); got.Task == nil || got.Task.RunAt-got.Task.CreatedAt < 5400_000 || got.Task.RunAt-got.Task.CreatedAt > 5460_000 {
		t.Fatalf("after --delay 90m: %+v", got.Task)
	}
	var leased errandapi.LeaseResponse
	if c.json(&leased, "lease", "-q", "inbox", "--count", "1"); len(leased.Tasks) != 0 {
		t.Fatalf("leased %d tasks due in an hour", len(leased.Tasks))
	}
	c.ok("reschedule", "--run-at", "2020-01-01T00:00:00Z", id)
	leaseNamed(t, c, "inbox", "a")
	r := c.run("", "reschedule", "--delay", "60", id)
	if r.code != exitRefused || !strings.Contains(r.errout, "NOT_RUNNABLE") {
		t.Fatalf("a leased task: exit %d, stderr %s", r.code, r.errout)
	}
	r = c.run("", "reschedule", "--delay", "-1", id)
	if r.code != exitRefused || !strings.Contains(r.errout, "--delay: must be 0–31536000 seconds") {
		t.Fatalf("--delay -1: exit %d, stderr %s", r.code, r.errout)
	}
	for _, args := range [][]string{{"reschedule", id}, {"reschedule", "--delay", "1", "--run-at", "1", id}} {
		if r := c.run("", args...); r.code != exitUsage {
			t.Fatalf("%v: exit %d, stderr %s", args, r.code, r.errout)
		}
	}
}
