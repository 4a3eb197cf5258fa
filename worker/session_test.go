package worker

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/errandhq/errand/errandapi"
)

// TestDecodeFrame: an attempt frame is decoded with its body in one pass,
// its payload kept byte for byte; an attempt whose body does not decode so
// still arrives, and running it fails the attempt, not the connection; any
// other frame goes through the frame's own decoder.
func TestDecodeFrame(t *testing.T) {
	a, err := decodeFrame([]byte(`{"type":"attempt","leaseId":"l1","function":"f","deadlineAt":99,"token":"tok",` +
		`"body":{"task":{"id":"t1","queue":"q","name":null,"attempt":2,"maxAttempts":5,"runAt":1,"createdAt":1,` +
		`"deadlineAt":99,"source":"api","depth":0,"params":null,"deadLetterOf":null},"payload":{ "a" : "<b>" }}}`))
	if err != nil {
		t.Fatal(err)
	}
	if a.b == nil || a.f.LeaseID != "l1" || a.f.Function != "f" || a.f.DeadlineAt != 99 || a.f.Token != "tok" ||
		a.b.Task.ID != "t1" || a.b.Task.Attempt != 2 || string(a.b.Payload) != `{ "a" : "<b>" }` {
		t.Fatalf("attempt decoded as %+v, body %+v", a.f, a.b)
	}

	bad, err := decodeFrame([]byte(`{"type":"attempt","leaseId":"l2","function":"f","body":{"task":{"attempt":"two"},"payload":1}}`))
	if err != nil || bad.b != nil || bad.f.Type != errandapi.FrameAttempt || bad.f.LeaseID != "l2" {
		t.Fatalf("an attempt with a body of the wrong shape: %+v, %v", bad, err)
	}
	w := &Worker{handlers: map[string]Handler{"f": func(context.Context, *Task) (json.RawMessage, error) { return nil, nil }}}
	s := &session{w: w}
	if ans := s.run(context.Background(), bad); ans.Type != errandapi.FrameFailed || !strings.Contains(ans.Error, "the attempt's body is not valid") {
		t.Fatalf("running it answered %+v", ans)
	}

	ref, err := decodeFrame([]byte(`{"type":"refused","leaseId":"l3","error":{"code":"LEASE_LOST","message":"gone"}}`))
	if err != nil || ref.b != nil || ref.f.Refusal == nil || ref.f.Refusal.Code != "LEASE_LOST" {
		t.Fatalf("refused decoded as %+v, %v", ref.f, err)
	}
	if _, err := decodeFrame([]byte(`{"type":`)); err == nil {
		t.Fatal("a frame that is not JSON decoded")
	}
}

// TestWatchCutsASilentNode: after welcome, a node that sends nothing for
// more than the limit is cut and the worker's read fails; a frame from it
// starts the count again.
func TestWatchCutsASilentNode(t *testing.T) {
	frames := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer conn.CloseNow()
		for f := range frames {
			if conn.Write(context.Background(), websocket.MessageText, []byte(f)) != nil {
				return
			}
		}
	}))
	defer srv.Close()
	defer close(frames) // the node's handler ends first
	conn, _, err := websocket.Dial(context.Background(), "ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	s := &session{conn: conn}
	tick := make(chan time.Time)
	ctx, cancel := context.WithCancel(context.Background())
	watched := make(chan struct{})
	go func() { defer close(watched); s.watch(ctx, tick, 3) }()
	defer func() { cancel(); <-watched }()
	ticks := func(n int) bool {
		for range n {
			select {
			case tick <- time.Time{}:
			case <-watched:
				return false
			}
		}
		return true
	}
	if !ticks(2) {
		t.Fatal("cut before the limit")
	}
	frames <- `{"type":"ping"}`
	if as, err := s.read(); err != nil || len(as) != 1 || as[0].f.Type != errandapi.FramePing {
		t.Fatalf("read %+v, %v", as, err)
	}
	if !ticks(3) { // 5 since the start, 3 since the frame
		t.Fatal("cut although the node spoke within the limit")
	}
	ticks(1) // the node stays silent: 4 since the frame
	read := make(chan error, 1)
	go func() { _, err := s.read(); read <- err }()
	select {
	case err := <-read:
		if err == nil {
			t.Fatal("the read of a silent node did not fail")
		}
	case <-time.After(10 * time.Second):
		conn.CloseNow()
		<-read
		t.Fatal("a silent node was not cut")
	}
}

// TestDecodeFrameAsDecoder: every frame decodeFrame reads comes out as
// the frame's own decoder reads it, an attempt's body as DeliveryBody's
// decoder reads it, and what is not JSON is still refused.
func TestDecodeFrameAsDecoder(t *testing.T) {
	for _, raw := range []string{
		`{"type":"recorded","leaseId":"n1.01JD3ZQ5W8Y2K4M6N8P0R2T4V6"}`,
		`{"type":"recorded","leaseId":""}`,
		`{"type":"recorded","leaseId":"a\"b"}`,
		`{"type":"recorded","leaseId":"a\\u0041"}`,
		`{"type":"recorded","leaseId":"é"}`,
		`{"type":"recorded","leaseId":"a","x":"b"}`,
		`{"type":"recorded","leaseId":"a"} `,
		`{"type":"recorded","leaseId":"a"}}`,
		`{"type":"recorded","leaseId":"`,
		`{"type":"recorded","leaseId":"a` + "\x01" + `"}`,
		`{"leaseId":"l","type":"recorded"}`,
		`{"type":"ping"}`,
		`{"type":"refused","leaseId":"l3","error":{"code":"LEASE_LOST","message":"gone"}}`,
		`{"leaseId":"l1","type":"attempt","function":"f","body":{"task":{"id":"t"},"payload":1}}`,
	} {
		var want errandapi.WorkerFrame
		werr := want.UnmarshalJSON([]byte(raw))
		a, err := decodeFrame([]byte(raw))
		if (err != nil) != (werr != nil) {
			t.Fatalf("%s: decodeFrame's error %v, the decoder's %v", raw, err, werr)
		}
		if err == nil && a.b != nil {
			var body errandapi.DeliveryBody
			if want.Type != errandapi.FrameAttempt || json.Unmarshal(want.Body, &body) != nil || !reflect.DeepEqual(*a.b, body) {
				t.Fatalf("%s: decodeFrame read the body %+v; a frame of type %s, its body decoded %+v", raw, *a.b, want.Type, body)
			}
			want.Body = nil // held once: decoded, it leaves the frame
		}
		if err == nil && !reflect.DeepEqual(*a.f, want) {
			t.Fatalf("%s: decodeFrame read %+v; the decoder %+v", raw, *a.f, want)
		}
	}
}
