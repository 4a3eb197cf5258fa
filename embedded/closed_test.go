package embedded

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/errandhq/errand/errandapi"
)

// TestCallsAfterCloseAreErrClosed: every call on a closed engine returns
// ErrClosed (not a store error, not nil), and Close again returns nil.
func TestCallsAfterCloseAreErrClosed(t *testing.T) {
	t.Parallel()
	e, _ := open(t, "sqlite")
	ctx := context.Background()
	must(t, e.CreateQueue(ctx, "jobs", "q", QueueOptions{Pull: true}))
	must(t, e.Close())
	if err := e.Close(); err != nil {
		t.Fatalf("Close again: %v, want nil", err)
	}
	h := func(context.Context, *Task) (json.RawMessage, error) { return nil, nil }
	one := func(_ any, err error) error { return err }
	calls := map[string]error{
		"Handle":           e.Handle("app/x", h),
		"CreateInstance":   e.CreateInstance(ctx, "other"),
		"UpdateSettings":   e.UpdateSettings(ctx, "jobs", Settings{}),
		"CreateQueue":      e.CreateQueue(ctx, "jobs", "q2", QueueOptions{Pull: true}),
		"Add":              one(e.Add(ctx, "jobs", "q", NewTask{})),
		"AddTx":            one(e.AddTx(ctx, nil, "jobs", "q", NewTask{})),
		"Get":              one(e.Get(ctx, "jobs", "0000000000000000000000")),
		"Lease":            one(e.Lease(ctx, "jobs", "q", 1, time.Minute, 0)),
		"AckMany":          one(e.AckMany(ctx, "jobs", "q", []Ack{{ID: "x", LeaseID: "y"}})),
		"Release":          e.Release(ctx, "jobs", "x", "y", "", 0),
		"Queue":            one(e.Queue(ctx, "jobs", "q")),
		"SetPaused":        e.SetPaused(ctx, "jobs", "q", true),
		"Wait":             one(e.Wait(ctx, "jobs", "x")),
		"Extend":           one(e.Extend(ctx, "jobs", "x", "y", time.Minute)),
		"List":             one(e.List(ctx, "jobs", "q", ListOptions{})),
		"RunNow":           one(e.RunNow(ctx, "jobs", "x")),
		"Cancel":           one(e.Cancel(ctx, "jobs", "x")),
		"Retry":            one(e.Retry(ctx, "jobs", "x")),
		"Delete":           one(e.Delete(ctx, "jobs", "x")),
		"Queues":           one(e.Queues(ctx, "jobs")),
		"DeleteQueue":      one(e.DeleteQueue(ctx, "jobs", "q")),
		"PurgeQueue":       one(e.PurgeQueue(ctx, "jobs", "q")),
		"UpdateQueue":      one(e.UpdateQueue(ctx, "jobs", "q", errandapi.QueueRequest{})),
		"CreateTrigger":    one(e.CreateTrigger(ctx, "jobs", errandapi.TriggerRequest{})),
		"Triggers":         one(e.Triggers(ctx, "jobs")),
		"Trigger":          one(e.Trigger(ctx, "jobs", "x")),
		"UpdateTrigger":    one(e.UpdateTrigger(ctx, "jobs", "x", errandapi.TriggerRequest{})),
		"DeleteTrigger":    e.DeleteTrigger(ctx, "jobs", "x"),
		"Instances":        one(e.Instances(ctx)),
		"DeleteInstance":   e.DeleteInstance(ctx, "other"),
		"InstanceSettings": one(e.InstanceSettings(ctx, "jobs")),
	}
	for name, err := range calls {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", name, err)
		}
	}
}

// TestCloseEndsAWaitingLease: a Lease waiting for a task returns ErrClosed
// as soon as Close begins, not when its wait runs out (on the fake clock,
// never).
func TestCloseEndsAWaitingLease(t *testing.T) {
	eachStore(t, func(t *testing.T, kind string) {
		e, fc := open(t, kind)
		ctx := context.Background()
		must(t, e.CreateQueue(ctx, "jobs", "q", QueueOptions{Pull: true}))
		const wait = 17 * time.Second // no service of the engine sleeps until now+17s
		waitsUntil := fc.Now().Add(wait)
		done := make(chan error, 1)
		go func() {
			_, err := e.Lease(ctx, "jobs", "q", 1, time.Minute, wait)
			done <- err
		}()
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := fc.WaitForSleeperAt(wctx, waitsUntil); err != nil {
			t.Fatalf("the Lease did not start waiting: %v", err)
		}
		must(t, e.Close())
		select {
		case err := <-done:
			if !errors.Is(err, ErrClosed) {
				t.Fatalf("waiting Lease ended with %v, want ErrClosed", err)
			}
		case <-wctx.Done():
			t.Fatal("a waiting Lease outlived Close")
		}
	})
}
