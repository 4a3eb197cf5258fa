package httpapi

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// watchRig is one WebSocket on loopback whose node side is a wsTransport
// watched with a limit of 3 ticks that the test sends by hand; serve runs
// on the node side, and every frame it reads is reported on frames.
type watchRig struct {
	t      *testing.T
	client *websocket.Conn
	tick   chan time.Time
	frames chan string
	done   chan error // serve's error
}

func newWatchRig(t *testing.T, serve func(r *watchRig, tr *wsTransport) error) *watchRig {
	t.Helper()
	r := &watchRig{t: t, tick: make(chan time.Time), frames: make(chan string, 16), done: make(chan error, 1)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		conn, err := websocket.Accept(w, req, nil)
		if err != nil {
			r.done <- err
			return
		}
		defer conn.CloseNow()
		ctx, cancel := context.WithCancel(context.Background())
		tr := &wsTransport{conn: conn}
		watched := make(chan struct{})
		go func() { defer close(watched); tr.watch(ctx, r.tick, 3) }()
		err = serve(r, tr)
		cancel()
		<-watched
		r.done <- err
	}))
	t.Cleanup(srv.Close)
	c, _, err := websocket.Dial(context.Background(), "ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.CloseNow() })
	r.client = c
	return r
}

// readAll reads frames on the node side, reporting each, until one fails.
func (r *watchRig) readAll(tr *wsTransport) error {
	for {
		fs, _, err := tr.read()
		if err != nil {
			return err
		}
		for _, f := range fs {
			r.frames <- f.Type
		}
	}
}

// ticks sends n ticks; it reports false if watch stopped taking them (it
// cut the connection).
func (r *watchRig) ticks(n int) bool {
	for range n {
		select {
		case r.tick <- time.Time{}:
		case <-time.After(2 * time.Second):
			return false
		}
	}
	return true
}

// ping sends a frame from the worker and waits until the node has read it.
func (r *watchRig) ping() {
	r.t.Helper()
	if err := r.client.Write(context.Background(), websocket.MessageText, []byte(`{"type":"ping"}`)); err != nil {
		r.t.Fatal(err)
	}
	select {
	case <-r.frames:
	case <-time.After(10 * time.Second):
		r.t.Fatal("the node never read the worker's frame")
	}
}

// ended waits for serve's error.
func (r *watchRig) ended() error {
	r.t.Helper()
	select {
	case err := <-r.done:
		return err
	case <-time.After(10 * time.Second):
		r.t.Fatal("the node side never ended")
		return nil
	}
}

// TestWatchCutsASilentWorker: a worker that sends nothing for more than
// the limit is cut, and the node's read waiting for it fails; one whose
// frames keep coming within the limit is not.
func TestWatchCutsASilentWorker(t *testing.T) {
	t.Parallel()
	talking := newWatchRig(t, (*watchRig).readAll)
	for range 4 { // 4 × 2 ticks: past the limit since the start, never since a frame
		talking.ping()
		if !talking.ticks(2) {
			t.Fatal("a worker that kept talking was cut")
		}
	}
	talking.ping() // still open

	silent := newWatchRig(t, readEnded)
	silent.ping()
	if !silent.ticks(3) {
		t.Fatal("cut at the limit, not past it")
	}
	silent.ticks(1)
	if err := silent.ended(); err == nil || !strings.HasPrefix(err.Error(), "the worker sent nothing for 30s") {
		t.Fatalf("the read of a silent worker ended with %v; want it to say the worker sent nothing", err)
	}
}

// readEnded reads frames until one fails and returns why, as the attempts
// the connection held record it.
func readEnded(r *watchRig, tr *wsTransport) error {
	return errors.New(tr.ended(r.readAll(tr)))
}

// TestEndedSaysWhy: the cause an attempt records when its worker's
// connection ends is said in a user's words: the worker's close status
// and reason, or a connection that broke without one — not the WebSocket
// library's chain of messages.
func TestEndedSaysWhy(t *testing.T) {
	t.Parallel()
	closed := newWatchRig(t, readEnded)
	closed.ping()
	_ = closed.client.Close(websocket.StatusGoingAway, "deploy")
	if err := closed.ended(); err == nil || err.Error() != `the worker closed the connection (status 1001: "deploy")` {
		t.Fatalf("a worker's close: %v", err)
	}
	broke := newWatchRig(t, readEnded)
	broke.ping()
	_ = broke.client.CloseNow()
	if err := broke.ended(); err == nil || !strings.HasPrefix(err.Error(), "the connection broke without a close frame") {
		t.Fatalf("a connection cut without a close frame: %v", err)
	}
}

// TestWatchCutsAStalledWrite: a write to a worker that stopped reading is
// cut once it has not ended within the limit, although the worker still
// talks, and the write fails.
func TestWatchCutsAStalledWrite(t *testing.T) {
	t.Parallel()
	frame := []byte(`{"type":"attempt","body":"` + strings.Repeat("x", 256<<10) + `"}`)
	r := newWatchRig(t, func(r *watchRig, tr *wsTransport) error {
		read := make(chan struct{})
		go func() { defer close(read); _ = r.readAll(tr) }()
		defer func() { <-read }()
		for {
			if err := tr.Send(frame); err != nil {
				return errors.New(tr.ended(err))
			}
		}
	})
	// The worker never reads, so the node's writes fill the socket's
	// buffers and one stalls; it keeps talking, so it is never silent.
	for give := time.Now().Add(10 * time.Second); time.Now().Before(give); {
		if r.client.Write(context.Background(), websocket.MessageText, []byte(`{"type":"ping"}`)) != nil {
			stalled(t, r.ended()) // the node cut the connection
			return
		}
		select {
		case <-r.frames: // heard: one tick more
			r.ticks(1)
		case err := <-r.done:
			stalled(t, err)
			return
		case <-time.After(10 * time.Second):
			t.Fatal("the node never read the worker's frame")
		}
	}
	t.Fatal("the stalled write was never cut")
}

// stalled checks the error a stalled write ended with says so.
func stalled(t *testing.T, err error) {
	t.Helper()
	if err == nil || !strings.HasPrefix(err.Error(), "a frame to the worker was not taken for 30s") {
		t.Fatalf("the stalled write ended with %v; want it to say the worker stopped reading", err)
	}
}

// TestWatchHearsALargeFrameArrive: a frame past MaxWorkerFrame that
// arrives slowly, part by part, is not cut as silence while its parts
// come, although more ticks than the limit pass before its end; it is
// then read through as too large, its lease named.
func TestWatchHearsALargeFrameArrive(t *testing.T) {
	t.Parallel()
	heard := make(chan struct{}, 1)
	r := newWatchRig(t, func(r *watchRig, tr *wsTransport) error {
		tr.conn.SetReadLimit(frameReadLimit)
		tr.onHeard = func() {
			select {
			case heard <- struct{}{}:
			default:
			}
		}
		_, _, err := tr.read()
		return err
	})
	w, err := r.client.Writer(context.Background(), websocket.MessageText)
	if err != nil {
		t.Fatal(err)
	}
	// The writer sends a part's last bytes only with the next part (its
	// buffer) and the node reads a part whole: a part is heard once the
	// next one is written.
	part := func(s string) {
		t.Helper()
		select { // a signal of an earlier part is not this one's
		case <-heard:
		default:
		}
		if _, err := w.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	part(`{"type":"done","leaseId":"L","result":"` + strings.Repeat("x", 400<<10))
	for range 3 { // 6 ticks in all, past the limit of 3
		if !r.ticks(2) {
			t.Fatal("a worker whose frame was arriving was cut")
		}
		part(strings.Repeat("y", 128<<10))
		select {
		case <-heard:
		case <-time.After(10 * time.Second):
			t.Fatal("the node never read the part")
		}
	}
	if _, err := w.Write([]byte(`"}`)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var big *frameTooLarge
	if err := r.ended(); !errors.As(err, &big) || big.leaseID != "L" || big.typ != "done" {
		t.Fatalf("the large frame's read ended with %v", err)
	}
}
