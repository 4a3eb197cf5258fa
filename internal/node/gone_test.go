package node

import (
	"bufio"
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

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
		_, url := serveNode(t, stores.Open(t, "sqlite"), false)
		check(t, url, url, func() {})
	})
	t.Run("two nodes", func(t *testing.T) {
		open := stores.OpenPostgresShared(t)
		_, a := serveNode(t, open(), true)
		nb, b := serveNode(t, open(), true)
		check(t, a, b, nb.Changed)
	})
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
