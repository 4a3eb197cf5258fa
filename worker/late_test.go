package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/clock"
	"github.com/errandhq/errand/worker"
)

// TestLateAnswerIsRecorded: a connected worker that answers after the
// attempt's deadline is refused (its attempt timed out), and the timed-out
// attempt records what it answered — a success, or a failure with its
// error — not "no answer". The node runs on a fake clock that the test
// moves past the deadline while the handlers wait.
func TestLateAnswerIsRecorded(t *testing.T) {
	clk := clock.NewFake(time.Now())
	url, c, outcomes := nodeOn(t, clk)
	ctx := context.Background()
	one := 1
	if _, err := c.CreateQueue(ctx, "jobs", "late", errandapi.QueueRequest{
		Target: errandapi.Value(errandapi.Target{Function: "app/ok"}), DeadlineSeconds: &one, MaxAttempts: &one}); err != nil {
		t.Fatal(err)
	}

	started, release := make(chan string, 2), make(chan struct{})
	w, err := worker.New(url, "jobs", "app", worker.Options{Slots: 2, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	w.Handle("ok", func(ctx context.Context, tk *worker.Task) (json.RawMessage, error) {
		started <- tk.ID
		<-release
		return json.RawMessage(`{"late":true}`), nil
	})
	w.Handle("fail", func(ctx context.Context, tk *worker.Task) (json.RawMessage, error) {
		started <- tk.ID
		<-release
		return nil, errors.New("nope")
	})
	runWorker(t, w)

	add := func(fn string) string {
		t.Helper()
		res, err := c.AddTask(ctx, "jobs", "late", errandapi.NewTask{Target: &errandapi.Target{Function: fn}, Payload: json.RawMessage(`1`)})
		if err != nil {
			t.Fatal(err)
		}
		return res.ID
	}
	ok, fail := add("app/ok"), add("app/fail")
	for range 2 {
		select {
		case <-started:
		case <-time.After(10 * time.Second):
			t.Fatal("the attempts never reached the worker")
		}
	}
	clk.Advance(2 * time.Second) // past both deadlines
	close(release)
	for id, want := range map[string]string{ok: "then answered: success", fail: "then answered: failure: nope"} {
		tk := wait(t, c, outcomes, id, errandapi.StateFailed)
		a := tk.Attempts[0]
		if a.Status != errandapi.AttemptTimedOut || a.Error == nil || !strings.Contains(*a.Error, want) {
			t.Fatalf("task %s's attempt %+v (%v); want timed_out and %q", id, a, a.Error, want)
		}
	}
}
