package engine_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/errandhq/errand/internal/clock"
	"github.com/errandhq/errand/internal/deliver"
	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/store/sqlite"
	"github.com/errandhq/errand/internal/task"
)

// TestOpsRetentionFollowsTheNode: the operations' own instance keeps its
// finished jobs as long as the node that uses it says (its
// --ops-retention-days), not as long as the run that made it said: the v1
// API cannot reach that instance, so the flag is the one way to change it.
func TestOpsRetentionFollowsTheNode(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "errand.db")
	for _, days := range []int{30, 1, 1} {
		st, err := sqlite.Open(ctx, path, sqlite.Options{Logger: discardLog})
		if err != nil {
			t.Fatal(err)
		}
		wh := deliver.NewWebhook(deliver.WebhookOptions{})
		eng := engine.New(engine.Config{Store: st, Clock: clock.NewFake(T0), Dev: true, Logger: discardLog,
			Deliverer: &deliver.Mux{Webhook: wh}, Ops: engine.OpsConfig{RetentionDays: days}})
		if err := eng.Start(ctx); err != nil {
			t.Fatal(err)
		}
		_, err = eng.OpsList(ctx, "dev", 1, 0, func(*engine.OpsJob) bool { return true })
		eng.Stop()
		wh.Close()
		if err != nil {
			t.Fatal(err)
		}
		inst, err := st.InstanceGet(ctx, store.InstanceRef{Org: "dev", Name: task.OpsInstance})
		if err != nil || inst.Settings.RetentionDays != days {
			t.Fatalf("with %d days: %+v %v", days, inst, err)
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
