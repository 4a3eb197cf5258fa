package embedded

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"
)

// TestPriority: a push queue delivers its due tasks from the highest
// priority down, each priority in runAt order, the default (0) last — one
// at a time under maxConcurrent 1, on each store; a task answers its
// priority; one out of range is refused naming the field.
func TestPriority(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, kind string) {
		e, _ := open(t, kind)
		ctx := context.Background()
		ran := namesQueue(t, e, QueueOptions{Paused: true, MaxConcurrent: 1})
		ids := add(t, e, "q", NewTask{Name: "plain-1"}, NewTask{Name: "low", Priority: 1}, NewTask{Name: "plain-2"},
			NewTask{Name: "high", Priority: 9}, NewTask{Name: "mid", Priority: 4})
		if tk, err := e.Get(ctx, "jobs", ids[3]); err != nil || tk.Priority != 9 {
			t.Fatalf("Get: priority %v, %v", tk, err)
		}
		must(t, e.SetPaused(ctx, "jobs", "q", false))
		order := names(ran, len(ids))
		if want := []string{"high", "mid", "low", "plain-1", "plain-2"}; !slices.Equal(order, want) {
			t.Fatalf("delivered %v, want %v", order, want)
		}
		_, err := e.Add(ctx, "jobs", "q", NewTask{Priority: 10})
		wantCode(t, err, "INVALID_ARGUMENT", "tasks[0].priority", "priority 10")
	})
}

// TestSetPriority: SetPriority raises a waiting task above those added
// before it, so the paused queue delivers it first once resumed; a
// priority out of range is refused naming the field, changing nothing; a
// missing task is NOT_FOUND.
func TestSetPriority(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, kind string) {
		e, _ := open(t, kind)
		ctx := context.Background()
		ran := namesQueue(t, e, QueueOptions{Paused: true, MaxConcurrent: 1})
		ids := add(t, e, "q", NewTask{Name: "first"}, NewTask{Name: "second"}, NewTask{Name: "last"})
		tk, err := e.SetPriority(ctx, "jobs", ids[2], 5)
		if err != nil || tk.Priority != 5 || tk.ID != ids[2] {
			t.Fatalf("SetPriority: %+v, %v", tk, err)
		}
		for _, bad := range []int{-1, 10} {
			_, err := e.SetPriority(ctx, "jobs", ids[2], bad)
			wantCode(t, err, "INVALID_ARGUMENT", "priority", "SetPriority out of range")
		}
		if tk, err := e.Get(ctx, "jobs", ids[2]); err != nil || tk.Priority != 5 {
			t.Fatalf("after the refusals: %+v, %v; want priority 5", tk, err)
		}
		_, err = e.SetPriority(ctx, "jobs", "no-such-task", 1)
		wantCode(t, err, "NOT_FOUND", "", "SetPriority(missing)")
		must(t, e.SetPaused(ctx, "jobs", "q", false))
		order := names(ran, len(ids))
		if want := []string{"last", "first", "second"}; !slices.Equal(order, want) {
			t.Fatalf("delivered %v, want %v", order, want)
		}
	})
}

// TestReschedule: Reschedule moves a task due in an hour to now, and the
// queue delivers it at once (the clock does not move); a past time means
// now; a task whose attempt ran is refused NOT_RUNNABLE; a time more than
// a year ahead is refused naming runAt.
func TestReschedule(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, kind string) {
		e, fc := open(t, kind)
		ctx := context.Background()
		ran := namesQueue(t, e, QueueOptions{})
		ids := add(t, e, "q", NewTask{Name: "later", Delay: time.Hour})
		_, err := e.Reschedule(ctx, "jobs", ids[0], fc.Now().Add(366*24*time.Hour))
		wantCode(t, err, "INVALID_ARGUMENT", "runAt", "Reschedule past a year")
		tk, err := e.Reschedule(ctx, "jobs", ids[0], fc.Now().Add(-time.Minute))
		if err != nil || tk.RunAt.UnixMilli() != fc.Now().UnixMilli() {
			t.Fatalf("Reschedule to a past time: %+v, %v; want due now", tk, err)
		}
		if name := <-ran; name != "later" {
			t.Fatalf("delivered %q", name)
		}
		waitState(t, e, ids[0], "succeeded")
		_, err = e.Reschedule(ctx, "jobs", ids[0], fc.Now())
		wantCode(t, err, "NOT_RUNNABLE", "", "Reschedule(succeeded)")
	})
}

// namesQueue serves function app/x, which sends each task's name on the
// channel it returns, and creates queue "q" of instance "jobs" with o
// targeting it.
func namesQueue(t *testing.T, e *Engine, o QueueOptions) <-chan string {
	t.Helper()
	ran := make(chan string, 8)
	must(t, e.Handle("app/x", func(_ context.Context, tk *Task) (json.RawMessage, error) {
		ran <- tk.Name
		return nil, nil
	}))
	o.Function = "app/x"
	must(t, e.CreateQueue(context.Background(), "jobs", "q", o))
	return ran
}

// names reads n names from ran, in the order they come.
func names(ran <-chan string, n int) []string {
	out := make([]string, 0, n)
	for range n {
		out = append(out, <-ran)
	}
	return out
}
