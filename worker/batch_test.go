package worker_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/worker"
)

// TestBatches: the worker's hello says it reads batches; it runs every
// attempt of a batch the node sends; to a node whose welcome says it
// reads batches, answers made while one is being written go together in
// the next message, and to a node that does not say so (one from before
// batches) each answer is a message of its own. The node here is the
// protocol, frame by frame, so that what goes in each message is seen.
func TestBatches(t *testing.T) {
	for _, batches := range []bool{true, false} {
		t.Run(map[bool]string{true: "node reads batches", false: "node from before batches"}[batches], func(t *testing.T) {
			answersInMessages(t, batches)
		})
	}
}

func answersInMessages(t *testing.T, batches bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// The first write waits until all three answers are queued: the
	// other two then cannot go in it, and must go together after it.
	var mu sync.Mutex
	queued, all, first := 0, make(chan struct{}), true
	defer worker.OnOutbox(func(o *errandapi.Outbox) {
		o.Queued = func(int) {
			mu.Lock()
			if queued++; queued == 3 {
				close(all)
			}
			mu.Unlock()
		}
		o.Writing = func() {
			if first {
				first = false
				<-all
			}
		}
	})()
	url, conns := fakeNode(t)
	w, err := worker.New(url, "jobs", "app", worker.Options{Slots: 3, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	started, release := make(chan string, 3), make(chan struct{})
	w.Handle("f", func(_ context.Context, tk *worker.Task) (json.RawMessage, error) {
		started <- tk.ID
		<-release
		return json.RawMessage(`"` + tk.ID + `"`), nil
	})
	rctx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- w.Run(rctx) }()
	conn := <-conns
	defer conn.CloseNow()
	// read returns the frames of the next message, and whether it was a
	// batch.
	read := func() ([]*errandapi.WorkerFrame, bool) {
		t.Helper()
		_, b, err := conn.Read(ctx)
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		raw, err := errandapi.SplitBatch(b)
		if err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		var fs []*errandapi.WorkerFrame
		for _, r := range raw {
			var f errandapi.WorkerFrame
			if err := f.UnmarshalJSON(r); err != nil {
				t.Fatal(err)
			}
			fs = append(fs, &f)
		}
		return fs, b[0] == '['
	}
	if fs, _ := read(); len(fs) != 1 || fs[0].Type != errandapi.FrameHello || !fs[0].Batches {
		t.Fatalf("hello %+v: want one frame saying batches", fs[0])
	}
	sendFrame(ctx, t, conn, &errandapi.WorkerFrame{Type: errandapi.FrameWelcome, Worker: "w1", HeartbeatSeconds: 10, Drains: true, Batches: batches})
	var enc [][]byte
	for _, l := range []string{"l1", "l2", "l3"} {
		b, _ := attemptFrame(l, "f").MarshalJSON()
		enc = append(enc, b)
	}
	if batches {
		if err := conn.Write(ctx, websocket.MessageText, errandapi.AppendBatch(nil, enc)); err != nil {
			t.Fatal(err)
		}
	} else {
		for _, b := range enc {
			if err := conn.Write(ctx, websocket.MessageText, b); err != nil {
				t.Fatal(err)
			}
		}
	}
	for range 3 {
		<-started
	}
	close(release)
	answered := map[string]bool{}
	var msgs, batched int
	for len(answered) < 3 {
		fs, batch := read()
		msgs++
		if batch {
			batched++
		}
		for _, f := range fs {
			if f.Type != errandapi.FrameDone || string(f.Result) != `"t-`+f.LeaseID+`"` {
				t.Fatalf("answer %+v", f)
			}
			answered[f.LeaseID] = true
		}
	}
	if batches && (msgs > 2 || batched == 0) || !batches && (msgs != 3 || batched != 0) {
		t.Fatalf("3 answers went in %d messages, %d of them batches", msgs, batched)
	}
	stop()
	if fs, _ := read(); len(fs) != 1 || fs[0].Type != errandapi.FrameDraining {
		t.Fatalf("after the stop: %+v, want draining", fs)
	}
	_ = conn.Close(websocket.StatusNormalClosure, "drained")
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
}
