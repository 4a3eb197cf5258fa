package embedded

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"
)

// TestWait: Wait answers with the task once its function has finished it
// (the handler held until Wait waits on the node), at once for an ended
// task, and with ErrClosed when Close ends it.
func TestWait(t *testing.T) {
	t.Parallel()
	e, fc := open(t, "sqlite")
	ctx := context.Background()
	release := make(chan struct{})
	if err := e.Handle("app/slow", func(context.Context, *Task) (json.RawMessage, error) {
		<-release
		return json.RawMessage(`"done"`), nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := e.CreateQueue(ctx, "jobs", "slow", QueueOptions{Function: "app/slow"}); err != nil {
		t.Fatal(err)
	}
	if err := e.CreateQueue(ctx, "jobs", "work", QueueOptions{Pull: true}); err != nil {
		t.Fatal(err)
	}
	type answer struct {
		t   *Task
		err error
	}
	waitOn := func(id string) <-chan answer {
		t.Helper()
		done := make(chan answer, 1)
		go func() {
			tk, err := e.Wait(ctx, "jobs", id)
			done <- answer{tk, err}
		}()
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := fc.WaitForSleeperAt(wctx, fc.Now().Add(50*time.Millisecond)); err != nil {
			t.Fatal("Wait never waited")
		}
		return done
	}
	got := func(done <-chan answer) answer {
		t.Helper()
		select {
		case a := <-done:
			return a
		case <-time.After(10 * time.Second):
			t.Fatal("Wait did not answer")
			return answer{}
		}
	}

	id := add(t, e, "slow", NewTask{Payload: json.RawMessage(`1`)})[0]
	done := waitOn(id)
	close(release)
	if a := got(done); a.err != nil || a.t.State != "succeeded" || string(a.t.Result) != `"done"` {
		t.Fatalf("Wait: %+v %v", a.t, a.err)
	}
	if tk, err := e.Wait(ctx, "jobs", id); err != nil || tk.State != "succeeded" {
		t.Fatalf("Wait of an ended task: %+v %v", tk, err)
	}

	pending := add(t, e, "work", NewTask{Payload: json.RawMessage(`2`)})[0]
	done = waitOn(pending)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if a := got(done); !errors.Is(a.err, ErrClosed) {
		t.Fatalf("Wait across Close: %+v %v", a.t, a.err)
	}
}
