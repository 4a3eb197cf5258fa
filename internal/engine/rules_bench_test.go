package engine_test

import (
	"testing"
	"time"

	"github.com/errandhq/errand/internal/clock"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
	"github.com/errandhq/errand/internal/testkit/stores"
)

// BenchmarkChainerDrain measures how fast the chainer turns pending chain
// events into tasks: b.N tasks of a watched pull queue are acked (one event
// each, outside the timer), then the chainers of one node (SQLite,
// PostgreSQL) or two nodes on one PostgreSQL drain them at once. Run it
// with a fixed count, e.g. -benchtime=5000x: the set-up is b.N adds, leases
// and acks.
func BenchmarkChainerDrain(b *testing.B) {
	b.Run("sqlite", func(b *testing.B) { benchChainerDrain(b, []store.Store{stores.Open(b, "sqlite")}) })
	b.Run("postgres", func(b *testing.B) { benchChainerDrain(b, []store.Store{stores.Open(b, "postgres")}) })
	b.Run("postgres-2nodes", func(b *testing.B) {
		open := stores.OpenPostgresShared(b)
		benchChainerDrain(b, []store.Store{open(), open()})
	})
}

func benchChainerDrain(b *testing.B, sts []store.Store) {
	fc := clock.NewFake(time.Now())
	var nodes []*node
	for _, st := range sts {
		b.Cleanup(func() { _ = st.Close() })
		nodes = append(nodes, newNode(b, st, fc))
	}
	n := nodes[0]
	n.pullQueue("a")
	n.pullQueue("b")
	n.rule(&task.TriggerPatch{Queue: ptr("jobs/b"), Task: &task.TaskOnPatch{Queue: ptr("jobs/a")}})
	n.ackAll("a", b.N)
	b.ResetTimer()
	total := concurrently(b, nodes, func(n *node) (int, error) { return n.eng.Chainer().RunOnce(n.ctx) })
	b.StopTimer()
	if total != b.N {
		b.Fatalf("chainers added %d tasks, want %d", total, b.N)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkSchedulePass measures one scheduler pass over b.N schedule
// rules due at once (fake clock): the fires a second one node makes when
// every rule ticks together, as `* * * * *` rules do at each minute. Run it
// with a fixed count, e.g. -benchtime=1000x.
func BenchmarkSchedulePass(b *testing.B) {
	for _, kind := range stores.Kinds {
		b.Run(kind, func(b *testing.B) {
			st := stores.Open(b, kind)
			b.Cleanup(func() { _ = st.Close() })
			n := newNode(b, st, clock.NewFake(T0))
			n.pullQueue("ticks")
			for range b.N {
				n.rule(&task.TriggerPatch{Queue: ptr("jobs/ticks"), Schedule: &task.SchedulePatch{Cron: ptr("* * * * *")}})
			}
			n.clock.Advance(time.Minute)
			b.ResetTimer()
			got, err := n.eng.Scheduler().RunOnce(n.ctx)
			b.StopTimer()
			if err != nil || got != b.N {
				b.Fatalf("the pass added %d tasks (%v), want %d", got, err, b.N)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "fires/s")
		})
	}
}
