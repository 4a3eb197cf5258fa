package embedded

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/task"
)

// TestUnservedEndsAtMaxAge: a task whose function nobody serves waits
// without an attempt, and maxAgeSeconds still ends it, on every backend.
func TestUnservedEndsAtMaxAge(t *testing.T) {
	eachStore(t, func(t *testing.T, kind string) {
		e, fc := open(t, kind)
		ctx := context.Background()
		target := &task.Target{Function: "app/nobody"}
		age := int64(60)
		agep := &age
		if _, err := e.eng.QueueCreate(ctx, engine.QueueRef{Org: e.org, Instance: "jobs", Queue: "q"},
			&task.QueuePatch{Target: &target, MaxAgeSeconds: &agep}); err != nil {
			t.Fatal(err)
		}
		id := add(t, e, "q", NewTask{})[0]
		if tk, err := e.Get(ctx, "jobs", id); err != nil || tk.State != "scheduled" || tk.Attempt != 0 {
			t.Fatalf("unserved: %+v %v", tk, err)
		}
		fc.Advance(61 * time.Second)
		e.eng.Wake()
		tk := waitState(t, e, id, "failed")
		if !strings.Contains(tk.LastError, "maxAgeSeconds") || tk.Attempt != 0 {
			t.Fatalf("ended as %+v; want failed by maxAgeSeconds, no attempt counted", tk)
		}
	})
}
