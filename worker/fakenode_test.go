package worker_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/errandhq/errand/errandapi"
)

// fakeNode serves a WebSocket that the test drives frame by frame, as a
// node of the protocol would: it returns the server's URL and the
// connections it accepts. No node in this repository answers as the tests
// need (an old node's, a connection cut mid-attempt).
func fakeNode(t *testing.T) (string, <-chan *websocket.Conn) {
	conns, done := make(chan *websocket.Conn, 1), make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		conns <- c
		<-done // the test drives the connection
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(done) }) // first: the handler returns, then the server closes
	return srv.URL, conns
}

// sendFrame writes f on conn.
func sendFrame(ctx context.Context, t *testing.T, conn *websocket.Conn, f *errandapi.WorkerFrame) {
	t.Helper()
	b, _ := f.MarshalJSON()
	if err := conn.Write(ctx, websocket.MessageText, b); err != nil {
		t.Fatal(err)
	}
}

// attemptFrame is an attempt of function fn under lease, for the task
// "t-"+lease, due in a minute.
func attemptFrame(lease, fn string) *errandapi.WorkerFrame {
	return &errandapi.WorkerFrame{Type: errandapi.FrameAttempt, LeaseID: lease, Function: fn,
		DeadlineAt: time.Now().Add(time.Minute).UnixMilli(), Token: "v1.t",
		Body: json.RawMessage(`{"task":{"id":"t-` + lease + `","queue":"q","name":null,"attempt":1,"maxAttempts":3,"runAt":0,"createdAt":0,"deadlineAt":0,"source":"api","depth":0,"params":null,"deadLetterOf":null},"payload":null}`)}
}
