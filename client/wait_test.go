package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/errandhq/errand/errandapi"
)

// TestWaitTask: WaitTask answers with the task once it has ended (here
// acked by a worker while the call waited on the node), at once for a task
// already ended, and with ctx's error when ctx ends first.
func TestWaitTask(t *testing.T) {
	e := start(t, options{})
	c, ctx := e.c, context.Background()
	must(c.CreateInstance(ctx, "jobs")).of(t)
	must(c.CreateQueue(ctx, "jobs", "work", errandapi.QueueRequest{Mode: new(errandapi.ModePull)})).of(t)
	added := must(c.AddTask(ctx, "jobs", "work", errandapi.NewTask{Payload: json.RawMessage(`1`)})).of(t)

	type answer struct {
		t   *errandapi.Task
		err error
	}
	done := make(chan answer, 1)
	go func() {
		tk, err := c.WaitTask(ctx, "jobs", added.ID)
		done <- answer{tk, err}
	}()
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := e.clock.WaitForSleeperAt(wctx, e.clock.Now().Add(50*time.Millisecond)); err != nil {
		t.Fatal("the wait never reached the node")
	}
	leased := must(c.Lease(ctx, "jobs", "work", errandapi.LeaseRequest{})).of(t)
	must(c.Ack(ctx, "jobs", added.ID, errandapi.AckRequest{LeaseID: leased[0].LeaseID, Result: json.RawMessage(`"done"`)})).of(t)
	select {
	case a := <-done:
		if a.err != nil || a.t.State != errandapi.StateSucceeded || string(a.t.Result) != `"done"` {
			t.Fatalf("WaitTask: %+v %v", a.t, a.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("WaitTask did not answer when the task ended")
	}
	if tk, err := c.WaitTask(ctx, "jobs", added.ID); err != nil || tk.State != errandapi.StateSucceeded {
		t.Fatalf("ended: %+v %v", tk, err)
	}

	other := must(c.AddTask(ctx, "jobs", "work", errandapi.NewTask{Payload: json.RawMessage(`2`)})).of(t)
	short, cancelShort := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancelShort()
	if tk, err := c.WaitTask(short, "jobs", other.ID); !errors.Is(err, context.DeadlineExceeded) || tk != nil {
		t.Fatalf("ctx ended: %+v %v", tk, err)
	}
}
