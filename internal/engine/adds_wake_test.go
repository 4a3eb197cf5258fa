package engine_test

import (
	"net/http"
	"testing"

	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/task"
)

// TestAddsWakeWhatTheyConcern: an add to a pull queue wakes the long polls
// but not the dispatcher, no pass of which would claim the task; an add to
// a push queue, paused or not, wakes both, unless the add claimed its task
// (its delivery is under way: nothing of it is left due).
func TestAddsWakeWhatTheyConcern(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.queue("pulled", &task.QueuePatch{Mode: new(task.ModePull)})
	b.queue("paused", &task.QueuePatch{Target: targetPtr("http://127.0.0.1:1/hook"), Paused: ptr(true)})
	b.queue("pushed", &task.QueuePatch{Target: targetPtr("http://127.0.0.1:1/hook"), Paused: ptr(true)})
	for _, c := range []struct {
		queue    string
		dispatch bool
	}{{"pulled", false}, {"paused", true}} {
		d, w := engine.DispatchWakes(b.eng), engine.Wakes(b.eng)
		b.add(c.queue, task.AddInput{})
		if (engine.DispatchWakes(b.eng) != d) != c.dispatch || engine.Wakes(b.eng) == w {
			t.Fatalf("an add to %s: dispatcher woken %d times, long polls %d; want the dispatcher woken: %v",
				c.queue, engine.DispatchWakes(b.eng)-d, engine.Wakes(b.eng)-w, c.dispatch)
		}
	}
	if _, err := b.eng.QueuePatch(b.ctx, engine.QueueRef{Org: "dev", Instance: "jobs", Queue: "pushed"}, &task.QueuePatch{Paused: ptr(false)}); err != nil {
		t.Fatal(err)
	}
	d, w := engine.DispatchWakes(b.eng), engine.Wakes(b.eng)
	b.add("pushed", task.AddInput{Delay: ptr(3600.0)})
	if engine.DispatchWakes(b.eng) == d || engine.Wakes(b.eng) == w {
		t.Fatal("an add to a push queue did not wake the dispatcher and the long polls")
	}

	// The receiver holds the delivery, so that no outcome wakes anything.
	release := make(chan struct{})
	rcv := newReceiver(t)
	rcv.answer.Store(func(w http.ResponseWriter) { <-release; w.WriteHeader(200) })
	t.Cleanup(func() { close(release) }) // before the receiver closes
	b.queue("claimed", &task.QueuePatch{Target: targetPtr(rcv.URL)})
	d, w = engine.DispatchWakes(b.eng), engine.Wakes(b.eng)
	res, err := b.eng.TaskAdd(b.ctx, engine.QueueRef{Org: "dev", Instance: "jobs", Queue: "claimed"}, []task.AddInput{{}})
	if err != nil || res[0].Err != nil {
		t.Fatalf("add: %v %+v", err, res)
	}
	if res[0].Task.State != task.Running {
		t.Fatalf("a lone due add to an idle webhook queue left its task %s, want it claimed by the add", res[0].Task.State)
	}
	if engine.DispatchWakes(b.eng) != d || engine.Wakes(b.eng) == w {
		t.Fatalf("an add that claimed its task: dispatcher woken %d times, long polls %d; want 0 and some",
			engine.DispatchWakes(b.eng)-d, engine.Wakes(b.eng)-w)
	}
}
