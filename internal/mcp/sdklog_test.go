package mcp_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	errandmcp "github.com/errandhq/errand/internal/mcp"
)

// levels records the level and message of every record logged.
type levels struct {
	mu   sync.Mutex
	seen []string
}

func (l *levels) Enabled(context.Context, slog.Level) bool { return true }
func (l *levels) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen = append(l.seen, r.Level.String()+" "+r.Message)
	return nil
}
func (l *levels) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *levels) WithGroup(string) slog.Handler      { return l }

// TestClientMistakeIsNoError: a client's protocol mistake (a tools/call
// before initialize) is answered with a JSON-RPC error and logged by the
// MCP SDK as a warning, not as an error of the node's (as it was: an
// operator alerting on errors would be woken by a faulty client).
func TestClientMistakeIsNoError(t *testing.T) {
	rec := &levels{}
	h := errandmcp.NewHTTPHandler(errandmcp.HTTPConfig{Dev: true, Logger: slog.New(rec),
		API: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) })})
	srv := httptest.NewServer(h)
	t.Cleanup(func() { h.Close(); srv.Close() })
	req, _ := http.NewRequest("POST", srv.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"tasks_get","arguments":{}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	h.Close()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	warned := false
	for _, s := range rec.seen {
		if strings.HasPrefix(s, "ERROR") {
			t.Fatalf("logged as an error: %q (all: %q)", s, rec.seen)
		}
		warned = warned || strings.HasPrefix(s, "WARN method invalid during initialization")
	}
	if !warned {
		t.Fatalf("the mistake was not logged as a warning: %q", rec.seen)
	}
}
