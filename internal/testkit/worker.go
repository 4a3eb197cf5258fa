package testkit

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/coder/websocket"
)

// DialWorker connects a raw function worker to baseURL's /v1/workers/
// {instance} with header (an Authorization, or nil), says hello for
// function f of group app with one slot, and waits for the welcome. The
// test closes the connection when it ends.
func DialWorker(t testing.TB, ctx context.Context, baseURL, instance string, header http.Header) *websocket.Conn {
	t.Helper()
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(baseURL, "http")+"/v1/workers/"+instance,
		&websocket.DialOptions{HTTPHeader: header})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.CloseNow() })
	if err := ws.Write(ctx, websocket.MessageText, []byte(`{"type":"hello","group":"app","functions":["f"],"slots":1}`)); err != nil {
		t.Fatal(err)
	}
	if _, m, err := ws.Read(ctx); err != nil || !strings.Contains(string(m), `"welcome"`) {
		t.Fatalf("welcome: %s %v", m, err)
	}
	return ws
}
