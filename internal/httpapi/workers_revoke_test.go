package httpapi_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/errandhq/errand/internal/testkit"
)

// TestWorkerKeyRevokedEndsConnection: revoking the API key a worker
// connected with ends its connection within keyCheckEvery (1 s), with
// UNAUTHENTICATED as the close reason (which ends the Go SDK's Run), as
// it ends a channel subscription: before, a worker on a revoked (say,
// leaked) key went on receiving attempts and their payloads for as long
// as its connection lasted.
func TestWorkerKeyRevokedEndsConnection(t *testing.T) {
	s := setupServe(t)
	a := s.as(s.key("acme", "full:*"))
	a.do("POST", "/v1/instances", `{"name":"jobs"}`).want(t, 201, "")
	k := s.key("acme", "write:jobs")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ws := testkit.DialWorker(t, ctx, s.srv.URL, "jobs", http.Header{"Authorization": {"Bearer " + k}})
	s.revoke(k)
	for {
		_, _, err := ws.Read(ctx)
		if err == nil {
			continue // a ping
		}
		var ce websocket.CloseError
		if !errors.As(err, &ce) || ce.Code != websocket.StatusPolicyViolation || !strings.Contains(ce.Reason, `"UNAUTHENTICATED"`) {
			t.Fatalf("after the revoke the connection ended with %v; want 1008 UNAUTHENTICATED", err)
		}
		return
	}
}
