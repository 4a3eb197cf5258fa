package main

import (
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
	var leased errandapi.LeaseResponse
	c.json(&leased, "lease", "-q", "inbox", "--count", "3")
	var order []string
	for _, tk := range leased.Tasks {
		order = append(order, *tk.Name)
	}
	if strings.Join(order, ",") != "urgent,filed,plain" {
		t.Fatalf("leased %v, want urgent, filed, plain", order)
	}
	if out := c.ok("get", leased.Tasks[0].ID); !strings.Contains(out, "priority") || !strings.Contains(out, "7") {
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
