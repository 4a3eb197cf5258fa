package worker_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/worker"
)

// TestHandlerLearnsTheConnectionWasLost: when the node's connection drops
// mid-attempt, the handler's context ends with the cause
// ErrConnectionLost, so it can tell a lost attempt from its deadline.
func TestHandlerLearnsTheConnectionWasLost(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	url, conns := fakeNode(t)
	w, err := worker.New(url, "jobs", "app", worker.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		MinBackoff: time.Hour, MaxBackoff: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	started, cause := make(chan struct{}), make(chan error, 1)
	w.Handle("slow", func(hctx context.Context, _ *worker.Task) (json.RawMessage, error) {
		close(started)
		<-hctx.Done()
		cause <- context.Cause(hctx)
		return nil, nil
	})
	rctx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- w.Run(rctx) }()
	conn := <-conns
	if _, _, err := conn.Read(ctx); err != nil { // the hello
		t.Fatal(err)
	}
	sendFrame(ctx, t, conn, &errandapi.WorkerFrame{Type: errandapi.FrameWelcome, Worker: "w1", HeartbeatSeconds: 10, Drains: true})
	sendFrame(ctx, t, conn, attemptFrame("l1", "slow"))
	<-started
	conn.CloseNow()
	select {
	case err := <-cause:
		if err != worker.ErrConnectionLost {
			t.Fatalf("cause %v, want ErrConnectionLost", err)
		}
	case <-ctx.Done():
		t.Fatal("the handler's context did not end with the connection")
	}
	stop()
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
}
