package engine_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/errandhq/errand/internal/clock"
	"github.com/errandhq/errand/internal/deliver"
	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/store/sqlite"
	"github.com/errandhq/errand/internal/task"
	"github.com/errandhq/errand/internal/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m, "internal/engine") }

// T0 is where the fake clock starts.
var T0 = time.UnixMilli(1_790_000_000_000)

type bundle struct {
	t     *testing.T
	eng   *engine.Engine
	clock *clock.Fake
	ctx   context.Context
	sig   *engine.Signals
}

// setup starts a real engine on a real SQLite file with a real webhook
// deliverer, a fake clock and its test signals.
func setup(t *testing.T) *bundle {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "errand.db"), sqlite.Options{Logger: discardLog})
	if err != nil {
		t.Fatal(err)
	}
	return start(t, st, func() { _ = st.Close() })
}

// start starts a real engine on st with a real webhook deliverer, a fake
// clock and its test signals; closeStore runs once the engine stopped.
func start(t *testing.T, st store.Store, closeStore func()) *bundle {
	t.Helper()
	ctx := context.Background()
	fc := clock.NewFake(T0)
	wh := deliver.NewWebhook(deliver.WebhookOptions{})
	eng := engine.New(engine.Config{
		Store: st, Clock: fc, Dev: true, URLRules: task.URLRules{AllowHTTP: true},
		Logger: discardLog, Deliverer: &deliver.Mux{Webhook: wh},
	})
	sig := engine.WithSignals(eng)
	if err := eng.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		eng.Stop()
		wh.Close()
		closeStore()
	})
	return &bundle{t: t, eng: eng, clock: fc, ctx: ctx, sig: sig}
}

// queue creates a queue from a patch.
func (b *bundle) queue(name string, p *task.QueuePatch) *task.Queue {
	b.t.Helper()
	q, err := b.eng.QueueCreate(b.ctx, engine.QueueRef{Org: "dev", Instance: "jobs", Queue: name}, p)
	if err != nil {
		b.t.Fatal(err)
	}
	return q
}

// add adds one task and returns its id.
func (b *bundle) add(queue string, in task.AddInput) string {
	b.t.Helper()
	res, err := b.eng.TaskAdd(b.ctx, engine.QueueRef{Org: "dev", Instance: "jobs", Queue: queue}, []task.AddInput{in})
	if err != nil || res[0].Err != nil {
		b.t.Fatalf("add: %v %v", err, res)
	}
	return res[0].Task.ID
}

// waitState waits until the task reaches state: it reads the task, and
// again after each attempt outcome the engine stores (a test signal),
// never on a timer.
func (b *bundle) waitState(id string, state task.State) *task.Task {
	b.t.Helper()
	for {
		seen := b.sig.Outcomes()
		tk, err := b.eng.TaskGet(b.ctx, engine.TaskRef{Org: "dev", Instance: "jobs", ID: id})
		if err != nil {
			b.t.Fatal(err)
		}
		if tk.State == state {
			return tk
		}
		if b.t.Failed() {
			b.t.FailNow()
		}
		b.sig.OutcomesAfter(b.t, seen)
	}
}

func ptr[T any](v T) *T { return &v }

func targetPtr(url string) **task.Target {
	t := &task.Target{Webhook: url}
	return &t
}
