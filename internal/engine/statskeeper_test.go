package engine_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/errandhq/errand/internal/clock"
	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/task"
	"github.com/errandhq/errand/internal/testkit/stores"
)

// TestStatsKeeperAnalyzesAGrownTable: on PostgreSQL the engine runs the
// stats keeper, whose first check (at start) analyzes a tasks table that
// holds a backlog and no statistics.
func TestStatsKeeperAnalyzesAGrownTable(t *testing.T) {
	st := stores.Open(t, "postgres")
	defer st.Close()
	ctx := context.Background()
	inst := &task.Instance{ID: "i1", Org: "dev", Name: "jobs", CreatedAt: 1, Settings: task.DefaultSettings()}
	if err := st.InstanceCreate(ctx, inst); err != nil {
		t.Fatal(err)
	}
	q := task.NewQueue("i1", "backlog", task.ModePull)
	if err := st.QueueCreate(ctx, q); err != nil {
		t.Fatal(err)
	}
	for b := range 100 {
		var ts []*task.Task
		for i := range 100 {
			tk, err := task.NewTask(q, task.AddInput{Payload: []byte(`{"padding":"` + fmt.Sprint(make([]byte, 60)) + `"}`)}, 1, task.URLRules{})
			if err != nil {
				t.Fatal(err)
			}
			tk.ID = fmt.Sprint("t", b*100+i)
			tk.RunAt = 1e13
			ts = append(ts, tk)
		}
		if _, err := st.TaskAdd(ctx, ts); err != nil {
			t.Fatal(err)
		}
	}
	eng := engine.New(engine.Config{Store: st, Clock: clock.NewFake(time.UnixMilli(1_000_000)),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	sig := engine.WithSignals(eng)
	if err := eng.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer eng.Stop()
	sig.StatsRefreshed(t, 1)
}
