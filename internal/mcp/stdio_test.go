package mcp_test

import (
	"bytes"
	"context"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/errandhq/errand/errandapi"
	errandmcp "github.com/errandhq/errand/internal/mcp"
)

// stdioSession starts a real `errand mcp` process against the node with
// key (through ERRAND_URL and ERRAND_API_KEY) and connects the SDK's
// client to it over its stdin and stdout.
func (n *node) stdioSession(key string) (*session, *bytes.Buffer) {
	n.t.Helper()
	cmd := exec.Command(errandBinary(n.t), "mcp")
	cmd.Env = append(cmd.Environ(), "ERRAND_URL="+n.srv.URL, "ERRAND_API_KEY="+key)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.CommandTransport{Command: cmd, TerminateDuration: 5 * time.Second}, nil)
	if err != nil {
		n.t.Fatalf("connect to errand mcp: %v (stderr %s)", err, stderr.String())
	}
	n.t.Cleanup(func() {
		if err := cs.Close(); err != nil {
			n.t.Errorf("errand mcp did not end cleanly: %v (stderr %s)", err, stderr.String())
		}
		// The agent's server log holds warnings and errors, not the
		// SDK's session lines.
		if strings.Contains(stderr.String(), "level=INFO") {
			n.t.Errorf("errand mcp logged at INFO:\n%s", stderr.String())
		}
	})
	return &session{t: n.t, cs: cs}, &stderr
}

// TestStdioProcess: a real `errand mcp` process against a serve-mode node:
// a read key lists the read tools only, a write key does a whole pull loop
// through tools with its tasks marked source mcp, a full key reads the
// guide and is refused a purge without confirm.
func TestStdioProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	n := startNode(t, false)
	admin := n.session(n.key("full:jobs"))
	admin.ok("create_instance", obj{"name": "jobs"}, nil)
	admin.ok("tasks_set_queue", obj{"instance": "jobs", "queue": "thumbs", "mode": "pull"}, nil)

	reader, _ := n.stdioSession(n.key("read:jobs"))
	if got := reader.tools(); !slices.Equal(got, toolsFor(errandapi.RoleRead)) {
		t.Fatalf("read key over stdio lists %v", got)
	}
	var ql errandapi.QueueList
	reader.ok("tasks_list_queues", obj{"instance": "jobs"}, &ql)
	if len(ql.Queues) != 2 {
		t.Fatalf("queues %+v", ql)
	}

	worker, _ := n.stdioSession(n.key("write:jobs"))
	if got := worker.tools(); !slices.Equal(got, toolsFor(errandapi.RoleWrite)) {
		t.Fatalf("write key over stdio lists %v", got)
	}
	pullLoop(t, worker, 3)
	worker.refused("tasks_lease", obj{"instance": "jobs", "queue": "default"}, "WRONG_MODE")

	full, _ := n.stdioSession(n.key("full:*"))
	res, err := full.cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: errandmcp.GuideURI})
	if err != nil {
		t.Fatal(err)
	}
	checkGuide(t, res)
	full.refused("tasks_purge_queue", obj{"instance": "jobs", "queue": "thumbs"}, "CONFIRM_REQUIRED")
}

// TestStdioBadKey: `errand mcp` with a key the server refuses exits at
// once with the API's error, and the MCP client cannot connect.
func TestStdioBadKey(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	n := startNode(t, false)
	cmd := exec.Command(errandBinary(t), "mcp", "--url", n.srv.URL, "--api-key", "errk_"+strings.Repeat("0", 64))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Stdin = strings.NewReader("")
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(stderr.String(), "UNAUTHENTICATED") {
		t.Fatalf("exit %v, stderr %q", err, stderr.String())
	}
}
