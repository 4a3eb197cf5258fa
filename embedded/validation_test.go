package embedded

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/errandhq/errand/client"
)

// refused fails t unless err is an INVALID_ARGUMENT *Error whose message
// begins with want (the field, named as the v1 API names it).
func refused(t *testing.T, what string, err error, want string) {
	t.Helper()
	var pe *Error
	if !errors.As(err, &pe) || !errors.Is(err, client.ErrInvalidArgument) || !strings.HasPrefix(pe.Message, want) {
		t.Errorf("%s: %v; want INVALID_ARGUMENT %q…", what, err, want)
	}
}

// TestInputIsCheckedAsOverHTTP: what the v1 API refuses, the embedded
// engine refuses too, instead of taking a default or another value: a
// negative Delay, Delay with RunAt, negative queue settings, and a
// Deadline that is not whole seconds.
func TestInputIsCheckedAsOverHTTP(t *testing.T) {
	t.Parallel()
	e, fc := open(t, "sqlite")
	ctx := context.Background()
	must(t, e.CreateQueue(ctx, "jobs", "q", QueueOptions{Pull: true}))
	// One task is tasks[0], as the SDK's AddTask is refused (it sends a
	// batch); in a batch, tasks[i].
	_, err := e.Add(ctx, "jobs", "q", NewTask{Delay: -5 * time.Second})
	refused(t, "Delay -5s", err, "tasks[0].delay: must be 0–31536000 seconds")
	_, err = e.Add(ctx, "jobs", "q", NewTask{Delay: time.Hour, RunAt: fc.Now().Add(time.Minute)})
	refused(t, "Delay and RunAt", err, "tasks[0].delay: send delay or runAt, not both")
	_, err = e.Add(ctx, "jobs", "q", NewTask{}, NewTask{Delay: -time.Second})
	refused(t, "a batch's second task", err, "tasks[1].delay: must be 0–31536000 seconds")

	for _, c := range []struct {
		name string
		o    QueueOptions
		want string
	}{
		{"MaxAttempts -1", QueueOptions{Pull: true, MaxAttempts: -1}, "maxAttempts: must be"},
		{"MaxConcurrent -1", QueueOptions{Pull: true, MaxConcurrent: -1}, "maxConcurrent: must be"},
		{"MinBackoff -1s", QueueOptions{Pull: true, MinBackoff: -time.Second}, "minBackoffSeconds: must be"},
		{"MaxBackoff -1s", QueueOptions{Pull: true, MaxBackoff: -time.Second}, "maxBackoffSeconds: must be"},
		{"Deadline -5s", QueueOptions{Pull: true, Deadline: -5 * time.Second}, "deadlineSeconds: must be 1–"},
		{"Deadline 1500ms", QueueOptions{Pull: true, Deadline: 1500 * time.Millisecond}, "deadlineSeconds: must be whole seconds"},
		{"Deadline 500ms", QueueOptions{Pull: true, Deadline: 500 * time.Millisecond}, "deadlineSeconds: must be whole seconds"},
	} {
		refused(t, c.name, e.CreateQueue(ctx, "jobs", "bad", c.o), c.want)
	}
	if _, err := e.Queue(ctx, "jobs", "bad"); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("a refused queue exists: %v", err)
	}
	_, err = e.Lease(ctx, "jobs", "q", 1, time.Minute, -500*time.Millisecond)
	refused(t, "Lease wait -500ms", err, "waitSeconds: must be")
}

// TestWholeSeconds: a lease or a wait travels in whole seconds, a fraction
// rounded away from zero (never less than asked; a negative stays negative,
// for the engine to refuse).
func TestWholeSeconds(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want int
	}{{0, 0}, {time.Nanosecond, 1}, {500 * time.Millisecond, 1}, {time.Second, 1}, {1500 * time.Millisecond, 2},
		{30 * time.Second, 30}, {-500 * time.Millisecond, -1}, {-2 * time.Second, -2}} {
		if got := wholeSeconds(c.d); got != c.want {
			t.Errorf("wholeSeconds(%v) = %d, want %d", c.d, got, c.want)
		}
	}
}

// TestLeaseRoundsUp: a wait under a second waits (it was cut to none): the
// Lease parks, and a task added meanwhile is what it returns; a lease of
// 1.5 s is leased for 2 s.
func TestLeaseRoundsUp(t *testing.T) {
	t.Parallel()
	e, fc := open(t, "sqlite")
	ctx := context.Background()
	must(t, e.CreateQueue(ctx, "jobs", "q", QueueOptions{Pull: true}))
	done := make(chan []*Task, 1)
	go func() {
		got, err := e.Lease(ctx, "jobs", "q", 1, time.Minute, 500*time.Millisecond)
		if err != nil {
			t.Error(err)
		}
		done <- got
	}()
	// The Lease's timer is at now+1 s once it waits (a service's sleep may
	// be there too: then the task is added before the Lease begins, and it
	// leases it at once — the check passes without proving the wait, but
	// cannot hang; a wait cut to none returns nothing first).
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := fc.WaitForSleeperAt(wctx, fc.Now().Add(time.Second)); err != nil {
		t.Fatal("no sleeper at now+1 s")
	}
	add(t, e, "q", NewTask{})
	if got := <-done; len(got) != 1 {
		t.Fatalf("Lease(wait 500 ms) returned %d tasks; want it to wait and lease the task added meanwhile", len(got))
	}
	add(t, e, "q", NewTask{})
	got, err := e.Lease(ctx, "jobs", "q", 1, 1500*time.Millisecond, 0)
	if err != nil || len(got) != 1 || !got[0].LeaseExpiresAt.Equal(fc.Now().Add(2*time.Second)) {
		t.Fatalf("Lease(1.5 s): %+v %v; want one task leased for 2 s", got, err)
	}
}
