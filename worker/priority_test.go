package worker_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"

	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/worker"
)

// TestTaskPriority: a handler reads its task's priority, whether a
// connected worker runs it (the attempt frame carries it) or a pull worker
// leased it (the lease answer does).
func TestTaskPriority(t *testing.T) {
	url, c, _ := node(t)
	ctx := context.Background()
	queue(t, c, "fn", "app/rank", 1)
	pullQueue(t, c, "inbox")
	got := make(chan int, 2)
	rank := func(_ context.Context, tk *worker.Task) (json.RawMessage, error) {
		got <- tk.Priority
		return nil, nil
	}
	w, err := worker.New(url, "jobs", "app", worker.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	w.Handle("rank", rank)
	runWorker(t, w)
	if _, err := c.AddTask(ctx, "jobs", "fn", errandapi.NewTask{Payload: json.RawMessage(`1`), Priority: new(7)}); err != nil {
		t.Fatal(err)
	}
	if p := <-got; p != 7 {
		t.Fatalf("the connected worker's task has priority %d, want 7", p)
	}

	if _, err := c.AddTask(ctx, "jobs", "inbox", errandapi.NewTask{Payload: json.RawMessage(`2`), Priority: new(3)}); err != nil {
		t.Fatal(err)
	}
	pctx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- worker.Pull(pctx, c, "jobs", "inbox", worker.PullOptions{Logger: quietPull}, rank) }()
	p := <-got
	stop()
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
	if p != 3 {
		t.Fatalf("the pull worker's task has priority %d, want 3", p)
	}
}
