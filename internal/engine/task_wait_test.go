package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/store/sqlite"
	"github.com/errandhq/errand/internal/task"
)

// waitResult is what a TaskWait in a goroutine answered.
type waitResult struct {
	t   *task.Task
	err error
}

// waitFor starts a TaskWait of id for up to wait seconds, waits until it
// parks (it read the task, found it not ended and waits), and returns the
// channel of its answer.
func (b *bundle) waitFor(id string, wait int) <-chan waitResult {
	b.t.Helper()
	parked := b.sig.Parked(b.t, 0)
	got := make(chan waitResult, 1)
	go func() {
		t, err := b.eng.TaskWait(b.ctx, engine.TaskRef{Org: "dev", Instance: "jobs", ID: id}, wait, nil)
		got <- waitResult{t, err}
	}()
	b.sig.Parked(b.t, parked+1)
	select {
	case r := <-got:
		b.t.Fatalf("answered before the task ended: %+v %v", r.t, r.err)
	default:
	}
	return got
}

// answer is the answer on got, or a failure after 10 s.
func answer(t *testing.T, got <-chan waitResult) *task.Task {
	t.Helper()
	select {
	case r := <-got:
		if r.err != nil {
			t.Fatal(r.err)
		}
		return r.t
	case <-time.After(10 * time.Second):
		t.Fatal("the wait did not answer")
		return nil
	}
}

// TestTaskWait: a wait is answered as soon as its task ends on this node —
// acked, cancelled — with the ended task; a task ended behind the engine's
// back (another node) is seen at the next read; an unended one is answered
// as it is when the wait runs out. The clock never moves in the first two
// cases, so only the node's own signal can answer them.
func TestTaskWait(t *testing.T) {
	t.Parallel()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "errand.db"), sqlite.Options{Logger: discardLog})
	if err != nil {
		t.Fatal(err)
	}
	b := start(t, st, func() { _ = st.Close() })
	b.queue("work", &task.QueuePatch{Mode: ptr(task.ModePull)})
	ref := func(id string) engine.TaskRef { return engine.TaskRef{Org: "dev", Instance: "jobs", ID: id} }

	// Acked: the answer holds the result.
	id := b.add("work", task.AddInput{})
	got := b.waitFor(id, 30)
	ts, err := b.eng.Lease(b.ctx, engine.QueueRef{Org: "dev", Instance: "jobs", Queue: "work"}, engine.LeaseParams{Count: 1, LeaseSeconds: 30})
	if err != nil || len(ts) != 1 {
		t.Fatalf("lease: %v %v", ts, err)
	}
	if _, err := b.eng.Ack(b.ctx, ref(id), engine.AckParams{LeaseID: ts[0].LeaseID, Result: json.RawMessage(`{"ok":true}`)}); err != nil {
		t.Fatal(err)
	}
	if tk := answer(t, got); tk.State != task.Succeeded || string(tk.Result) != `{"ok":true}` {
		t.Fatalf("acked: %s %s", tk.State, tk.Result)
	}
	// An ended task is answered at once.
	if tk, err := b.eng.TaskWait(b.ctx, ref(id), 30, nil); err != nil || tk.State != task.Succeeded {
		t.Fatalf("ended: %v %v", tk, err)
	}

	// Cancelled.
	id = b.add("work", task.AddInput{})
	got = b.waitFor(id, 30)
	if _, err := b.eng.TaskCancel(b.ctx, ref(id)); err != nil {
		t.Fatal(err)
	}
	if tk := answer(t, got); tk.State != task.Cancelled {
		t.Fatalf("cancelled: %s", tk.State)
	}

	// Ended where this node does not see it: the next read finds it.
	id = b.add("work", task.AddInput{})
	got = b.waitFor(id, 30)
	tk, err := b.eng.TaskGet(b.ctx, ref(id))
	if err != nil {
		t.Fatal(err)
	}
	now := b.clock.Now().UnixMilli()
	if _, err := st.TaskUpdate(b.ctx, store.TaskRef{InstanceID: tk.InstanceID, ID: id}, func(t *task.Task) error { return t.Cancel(now) }); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-got:
		t.Fatalf("answered before its next read: %+v", r.t)
	default:
	}
	b.clock.Advance(time.Second) // past the first reads' pauses
	if tk := answer(t, got); tk.State != task.Cancelled {
		t.Fatalf("ended elsewhere: %s", tk.State)
	}

	// Not ended: answered as it is when the wait runs out.
	id = b.add("work", task.AddInput{})
	got = b.waitFor(id, 5)
	b.clock.Advance(5 * time.Second)
	if tk := answer(t, got); tk.State != task.Pending {
		t.Fatalf("timed out: %s", tk.State)
	}

	// Refusals: the wait's bounds, a task that is not there.
	var te *task.Error
	if _, err := b.eng.TaskWait(b.ctx, ref(id), 31, nil); !errors.As(err, &te) || te.Code != task.CodeInvalidArgument || te.Field != "waitSeconds" {
		t.Fatalf("31 s: %v", err)
	}
	if _, err := b.eng.TaskWait(b.ctx, ref("nope"), 1, nil); !task.IsCode(err, task.CodeNotFound) {
		t.Fatalf("missing: %v", err)
	}

	// A node ending its long polls answers its waits at once.
	got = b.waitFor(id, 30)
	b.eng.EndLongPolls()
	if tk := answer(t, got); tk.State != task.Pending {
		t.Fatalf("ended polls: %s", tk.State)
	}
}
