package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/errandhq/errand/internal/clock"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
	"github.com/errandhq/errand/internal/testkit/stores"
)

// TestBackupCarriesPendingChainEvents: a task that succeeded whose chain
// rule had not added its follow-up yet (the event still in the outbox at
// the snapshot) is archived with its event, and the restored instance's
// chainer adds the follow-up: the copy is whole, as the original becomes.
func TestBackupCarriesPendingChainEvents(t *testing.T) {
	for _, kind := range stores.Kinds {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			fc := clock.NewFake(time.UnixMilli(1_790_000_000_000))
			key := bytes.Repeat([]byte{7}, BackupKeySize)
			dir := t.TempDir()
			open := func() *Engine {
				st := stores.Open(t, kind)
				t.Cleanup(func() { _ = st.Close() })
				return New(Config{Store: st, Clock: fc, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Dev: true,
					Ops: OpsConfig{BackupDir: dir, BackupKey: key}})
			}
			src := open()
			if _, err := src.InstanceCreate(ctx, "dev", "jobs"); err != nil {
				t.Fatal(err)
			}
			pull := task.ModePull
			for _, q := range []string{"a", "b"} {
				if _, err := src.QueueCreate(ctx, QueueRef{Org: "dev", Instance: "jobs", Queue: q}, &task.QueuePatch{Mode: &pull}); err != nil {
					t.Fatal(err)
				}
			}
			b, a := "jobs/b", "jobs/a"
			if _, err := src.TriggerCreate(ctx, "dev", "jobs", &task.TriggerPatch{Queue: &b, Task: &task.TaskOnPatch{Queue: &a}}); err != nil {
				t.Fatal(err)
			}
			ref := QueueRef{Org: "dev", Instance: "jobs", Queue: "a"}
			if _, err := src.TaskAdd(ctx, ref, []task.AddInput{{Payload: json.RawMessage(`{"n":1}`)}}); err != nil {
				t.Fatal(err)
			}
			leased, err := src.Lease(ctx, ref, LeaseParams{Count: 1, LeaseSeconds: 60})
			if err != nil || len(leased) != 1 {
				t.Fatalf("lease: %v %v", leased, err)
			}
			// The ack writes the chain event; no chainer runs here.
			if _, err := src.Ack(ctx, TaskRef{Org: "dev", Instance: "jobs", ID: leased[0].ID}, AckParams{LeaseID: leased[0].LeaseID}); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "jobs.errand-backup")
			if _, err := src.writeArchive(ctx, "dev", "jobs", path); err != nil {
				t.Fatal(err)
			}

			dst := open()
			if _, err := dst.RestoreInstance(ctx, "dev", "", path, key); err != nil {
				t.Fatal(err)
			}
			inst, err := dst.Store().InstanceGet(ctx, store.InstanceRef{Org: "dev", Name: "jobs"})
			if err != nil {
				t.Fatal(err)
			}
			if n, err := dst.Chainer().RunOnce(ctx); n != 1 || err != nil {
				t.Fatalf("the restored chainer added %d tasks (%v), want the pending follow-up", n, err)
			}
			page, err := dst.Store().TaskList(ctx, &store.ListParams{InstanceID: inst.ID, Queue: "b", Limit: 10})
			if err != nil || len(page.Tasks) != 1 {
				t.Fatalf("queue b of the copy: %d tasks (%v), want the follow-up", len(page.Tasks), err)
			}
			follow, err := dst.Store().TaskGet(ctx, store.TaskRef{InstanceID: inst.ID, ID: page.Tasks[0].ID})
			if err != nil || !bytes.Contains(follow.Payload, []byte(leased[0].ID)) {
				t.Fatalf("the follow-up's payload %s does not name %s (%v)", follow.Payload, leased[0].ID, err)
			}
		})
	}
}
