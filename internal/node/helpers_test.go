package node

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/errandhq/errand/internal/auth"
	"github.com/errandhq/errand/internal/clock"
	"github.com/errandhq/errand/internal/store"
)

// serveNode starts a dev node on st (shared: one of several on a
// PostgreSQL) with a fake clock that never moves, serves its API on
// loopback, and returns the node and the server's URL; the test's cleanup
// closes the server, the node and st.
func serveNode(t *testing.T, st store.Store, shared bool) (*Node, string) {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	n := New(Config{Store: st, Clock: clock.NewFake(time.UnixMilli(1_790_000_000_000)), Logger: quiet, Dev: true, Shared: shared})
	if err := n.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(n.Handler(HandlerConfig{Auth: auth.Dev{}}))
	t.Cleanup(func() {
		srv.Close()
		n.Close()
		st.Close()
	})
	return n, srv.URL
}

// do makes one call and checks its status.
func do(t *testing.T, method, url, body string, want int) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != want {
		t.Fatalf("%s %s: %d, want %d", method, url, resp.StatusCode, want)
	}
}
