package mcp_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/errandhq/errand/client"
	errandmcp "github.com/errandhq/errand/internal/mcp"
)

// TestUnansweredCall: a tool call that gets no answer (no server at the
// URL) is UNAVAILABLE, and its next step does not claim that nothing was
// changed, as the server's own UNAVAILABLE does: a connection can fail
// after the call was applied, so the agent is told to check first.
func TestUnansweredCall(t *testing.T) {
	gone := httptest.NewServer(nil)
	url := gone.URL
	gone.Close()
	c, err := client.New(url, client.Options{APIKey: "errk_x", Retry: client.RetryPolicy{MaxAttempts: 1}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, ct := mcp.NewInMemoryTransports()
	served := make(chan error, 1)
	go func() { served <- errandmcp.Serve(ctx, c, st, "test", quiet) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := &session{t: t, cs: cs}
	s.refused("tasks_list_queues", obj{"instance": "jobs"}, "UNAVAILABLE")
	res := s.call("tasks_list_queues", obj{"instance": "jobs"})
	if txt := text(res); !strings.Contains(txt, "may or may not have been applied") || strings.Contains(txt, "nothing was changed") {
		t.Fatalf("the next step after no answer: %q", txt)
	}
	_ = cs.Close()
	cancel()
	<-served
}
