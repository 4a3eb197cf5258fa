package worker_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/worker"
)

// TestStopWithANodeThatDoesNotDrain: against a node whose welcome does not
// say it drains (one from before the draining frame, which it would refuse
// by closing the connection and failing what it held), a stopping worker
// sends no draining frame: it defers the attempts that still arrive, lets
// its running handler finish and answer, then closes the connection
// itself, and Run returns nil. The node here is that older node's
// protocol, frame by frame: no such node runs in this repository.
func TestStopWithANodeThatDoesNotDrain(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	url, conns := fakeNode(t)
	w, err := worker.New(url, "jobs", "app", worker.Options{Slots: 2, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	started, release := make(chan struct{}), make(chan struct{})
	w.Handle("slow", func(_ context.Context, tk *worker.Task) (json.RawMessage, error) {
		if tk.ID == "t-l1" { // l1 runs until released; l2 answers at once
			close(started)
			<-release
		}
		return json.RawMessage(`"` + tk.ID + `"`), nil
	})
	rctx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- w.Run(rctx) }()
	conn := <-conns
	defer conn.CloseNow()
	read := func() *errandapi.WorkerFrame {
		t.Helper()
		for {
			_, b, err := conn.Read(ctx)
			if err != nil {
				t.Fatalf("read: %v", err)
			}
			var f errandapi.WorkerFrame
			if err := f.UnmarshalJSON(b); err != nil {
				t.Fatal(err)
			}
			if f.Type != errandapi.FramePing {
				return &f
			}
		}
	}
	send := func(f *errandapi.WorkerFrame) { sendFrame(ctx, t, conn, f) }
	attempt := func(lease string) *errandapi.WorkerFrame { return attemptFrame(lease, "slow") }
	if f := read(); f.Type != errandapi.FrameHello {
		t.Fatalf("first frame %+v", f)
	}
	send(&errandapi.WorkerFrame{Type: errandapi.FrameWelcome, Worker: "w1", HeartbeatSeconds: 10}) // no drains
	send(attempt("l1"))
	<-started
	stop()
	// Sent before the node learns the worker is leaving: deferred, or run
	// if it came before the worker saw its stop; never a draining frame.
	send(attempt("l2"))
	if f := read(); f.LeaseID != "l2" || f.Type != errandapi.FrameDefer && f.Type != errandapi.FrameDone {
		t.Fatalf("the attempt after the stop: %+v, want defer or done l2 (and no draining frame)", f)
	}
	close(release)
	if f := read(); f.Type != errandapi.FrameDone || f.LeaseID != "l1" {
		t.Fatalf("the running attempt: %+v, want done l1", f)
	}
	if _, _, err := conn.Read(ctx); websocket.CloseStatus(err) != websocket.StatusNormalClosure {
		t.Fatalf("after its last answer the worker should close normally: %v", err)
	}
	select {
	case err := <-ran:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatal("Run did not return after the worker closed the connection")
	}
}
