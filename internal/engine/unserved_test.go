package engine_test

import (
	"strings"
	"testing"

	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/task"
)

// TestUnservedNoteOnGetAndList: a due task of a function no worker serves
// says why it waits when it is read and when its queue is listed; one not
// yet due says nothing.
func TestUnservedNoteOnGetAndList(t *testing.T) {
	b := setup(t)
	fn := &task.Target{Function: "app/nobody"}
	b.queue("fns", &task.QueuePatch{Target: &fn})
	due := b.add("fns", task.AddInput{})
	later := b.add("fns", task.AddInput{Delay: ptr(3600.0)})

	const note = "no worker serves app/nobody: "
	tk, err := b.eng.TaskGet(b.ctx, engine.TaskRef{Org: "dev", Instance: "jobs", ID: due})
	if err != nil || !strings.HasPrefix(tk.LastError, note) {
		t.Fatalf("get: %q %v", tk.LastError, err)
	}
	page, err := b.eng.TaskList(b.ctx, engine.QueueRef{Org: "dev", Instance: "jobs", Queue: "fns"}, engine.ListFilter{Limit: 10})
	if err != nil || len(page.Tasks) != 2 {
		t.Fatalf("list: %+v %v", page, err)
	}
	for _, tk := range page.Tasks {
		if noted := strings.HasPrefix(tk.LastError, note); noted != (tk.ID == due) {
			t.Errorf("listed %s (due %v, later %v): lastError %q", tk.ID, tk.ID == due, tk.ID == later, tk.LastError)
		}
	}
}
