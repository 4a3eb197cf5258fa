package node

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/errandhq/errand/internal/auth"
	"github.com/errandhq/errand/internal/clock"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/testkit"
	"github.com/errandhq/errand/internal/testkit/stores"
)

// TestDeletedInstanceEndsItsStreams: deleting an instance ends the channel
// subscriptions and the function workers' connections that nodes hold for
// it — at once on the node that deleted it (SQLite, one node), and on
// another node of a shared PostgreSQL at its next look at the instances in
// use there (poked here; every 5 s otherwise). Before, both stayed open
// for ever, silent: a worker kept "serving" a deleted instance while the
// tasks of one made again under its name waited for a worker, and a
// subscriber never heard of the new instance's messages.
func TestDeletedInstanceEndsItsStreams(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	start := func(t *testing.T, st store.Store, shared bool) (*Node, string) {
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
	check := func(t *testing.T, a, b string, poke func()) {
		do(t, "POST", a+"/v1/instances", `{"name":"jobs"}`, 201)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		next := subscribe(t, ctx, b+"/v1/channels/jobs/room")
		if l := next(); l != "event: ready" {
			t.Fatalf("subscribed: %q", l)
		}
		next() // ready's data
		ws := testkit.DialWorker(t, ctx, b, "jobs", nil)

		do(t, "DELETE", a+"/v1/instances/jobs?confirm=true", "", 200)
		poke()
		if l := next(); l != "event: closing" {
			t.Fatalf("after the delete the stream said %q; want a closing event", l)
		}
		if l := next(); !strings.Contains(l, "the instance was deleted") {
			t.Fatalf("closing: %q", l)
		}
		for {
			_, m, err := ws.Read(ctx)
			if err == nil {
				continue // a ping
			}
			var ce websocket.CloseError
			if !errors.As(err, &ce) || ce.Code != websocket.StatusGoingAway || !strings.Contains(ce.Reason, "the instance was deleted") {
				t.Fatalf("the worker's connection ended with %v (last frame %s); want 1001, the instance was deleted", err, m)
			}
			break
		}
	}
	t.Run("one node", func(t *testing.T) {
		_, url := start(t, stores.Open(t, "sqlite"), false)
		check(t, url, url, func() {})
	})
	t.Run("two nodes", func(t *testing.T) {
		open := stores.OpenPostgresShared(t)
		_, a := start(t, open(), true)
		nb, b := start(t, open(), true)
		check(t, a, b, nb.Changed)
	})
}

// do makes one call and checks its status.
func do(t *testing.T, method, url, body string, want int) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != want {
		t.Fatalf("%s %s: %d, want %d", method, url, resp.StatusCode, want)
	}
}

// subscribe opens an SSE stream; next returns its next line that is
// neither empty nor a comment.
func subscribe(t *testing.T, ctx context.Context, url string) (next func() string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	lines := bufio.NewScanner(resp.Body)
	return func() string {
		t.Helper()
		for lines.Scan() {
			if l := lines.Text(); l != "" && !strings.HasPrefix(l, ":") && !strings.HasPrefix(l, "id:") {
				return l
			}
		}
		t.Fatalf("the stream ended: %v", lines.Err())
		return ""
	}
}
