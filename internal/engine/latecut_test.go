package engine

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/errandhq/errand/internal/clock"
	"github.com/errandhq/errand/internal/deliver"
	"github.com/errandhq/errand/internal/task"
)

// hangingTarget never answers: it returns when its request is cut.
type hangingTarget struct{}

func (hangingTarget) Deliver(ctx context.Context, _ *deliver.Request) deliver.Result {
	<-ctx.Done()
	return deliver.Result{Outcome: task.Outcome{Status: task.AttemptFailed, Error: "request cut: " + ctx.Err().Error()}}
}

// TestDeliverCutAfterLateCap: a target that never answers is cut lateCap
// after the attempt's deadline, and the timed-out attempt says so (not
// "the target then answered: no answer").
func TestDeliverCutAfterLateCap(t *testing.T) {
	clk := clock.NewFake(time.UnixMilli(1_000_000_000))
	d := &Dispatcher{dispatcherDeps: dispatcherDeps{clock: clk, targets: hangingTarget{}, usage: newUsage(usageDeps{clock: clk})}}
	q := task.NewQueue("i1", "q", task.ModePush)
	// Its deadline passed lateCap less 20 ms ago: the cut comes in 20 ms.
	tk := &task.Task{InstanceID: "i1", ID: "t1", Target: &task.Target{Webhook: "https://example.com/h"},
		DeadlineAt: clk.Now().Add(-lateCap + 20*time.Millisecond).UnixMilli()}
	g := deadlineGroups(context.Background(), []*task.Task{tk}, clk.Now())[0]
	res := d.deliver(g, tk, q, &task.Instance{ID: "i1"})
	g.done()
	if res.Outcome.Status != task.AttemptTimedOut || !strings.Contains(res.Outcome.Error, "no answer came in the 10 minutes after it: the request was cut") {
		t.Fatalf("%+v", res.Outcome)
	}
}
