package main

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// bearerTransport adds a key to every request.
type bearerTransport struct {
	key  string
	next http.RoundTripper
}

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return b.next.RoundTrip(r)
}

// mcpConnect opens an MCP session over streamable HTTP at url/mcp.
func mcpConnect(t *testing.T, url, key string) (*mcp.ClientSession, error) {
	t.Helper()
	var rt http.RoundTripper = &http.Transport{}
	t.Cleanup(rt.(*http.Transport).CloseIdleConnections)
	if key != "" {
		rt = bearerTransport{key: key, next: rt}
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil)
	return c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url + "/mcp", HTTPClient: &http.Client{Transport: rt}}, nil)
}

func toolCall(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) map[string]any {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil || res.IsError {
		t.Fatalf("%s: %v %+v", name, err, res)
	}
	return res.StructuredContent.(map[string]any)
}

// TestMCPOnDevNode: a real `errand dev` serves MCP at /mcp: every tool is
// listed, a pull loop runs through tools, and SIGTERM with a session open
// (its event stream held by the client) still ends the process cleanly.
func TestMCPOnDevNode(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	cmd, url := startErrand(t, buildErrand(t), "--data", t.TempDir())
	cs, err := mcpConnect(t, url, "")
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil || len(tools.Tools) != 28 {
		t.Fatalf("tools: %d %v", len(tools.Tools), err)
	}
	toolCall(t, cs, "tasks_set_queue", map[string]any{"instance": "jobs", "queue": "q", "mode": "pull"})
	toolCall(t, cs, "tasks_add", map[string]any{"instance": "jobs", "queue": "q", "tasks": []any{map[string]any{"payload": 7}}})
	leased := toolCall(t, cs, "tasks_lease", map[string]any{"instance": "jobs", "queue": "q"})["tasks"].([]any)[0].(map[string]any)
	acked := toolCall(t, cs, "tasks_ack", map[string]any{"instance": "jobs", "id": leased["id"], "leaseId": leased["leaseId"], "result": "done"})
	if task := acked["task"].(map[string]any); task["state"] != "succeeded" || task["source"] != "mcp" {
		t.Fatalf("acked %v", task)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("errand dev with an MCP session open did not exit cleanly: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("errand dev did not stop within 10 s with an MCP session open")
	}
}

// TestMCPOnServeNode: `errand serve` needs a key at /mcp, and a session
// lists the tools of its key's grants.
func TestMCPOnServeNode(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	store := "sqlite://" + filepath.Join(t.TempDir(), "errand.db")
	key := func(grant string) string {
		code, out, errOut := runMain("keys", "create", "--store", store, "--create", "--org", "acme", "--grant", grant)
		if code != 0 {
			t.Fatalf("keys create: %s", errOut)
		}
		return strings.TrimSpace(out)
	}
	reader := key("read:jobs")
	_, url, _ := startServe(t, buildErrand(t), "--store", store)
	if st, _ := call(t, "", "POST", url+"/mcp", `{}`); st != http.StatusUnauthorized {
		t.Fatalf("/mcp without a key: %d", st)
	}
	if _, err := mcpConnect(t, url, ""); err == nil {
		t.Fatal("a session opened without a key")
	}
	cs, err := mcpConnect(t, url, reader)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	if strings.Join(names, ",") != "tasks_get,tasks_get_trigger,tasks_list,tasks_list_functions,tasks_list_queues,tasks_list_triggers,tasks_usage" {
		t.Fatalf("a read key lists %v", names)
	}
}
