package httpapi_test

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/errandhq/errand/internal/engine"
)

// TestOpsExportImport: POST /api/backup/export produces the bundle; loaded
// on another host it recreates the same configuration, and loading it again
// changes nothing.
func TestOpsExportImport(t *testing.T) {
	onEach(t, func(t *testing.T, b *bundle) {
		b.do("POST", "/v1/tasks/jobs/queues", map[string]any{"name": "dead", "mode": "pull"}).want(t, 201, "")
		b.do("POST", "/v1/tasks/jobs/queues", map[string]any{"name": "mail", "target": map[string]any{"webhook": "http://127.0.0.1:9/m"},
			"maxAttempts": 4, "ratePerSecond": 2.5, "deadLetterQueue": "dead", "paused": true}).want(t, 201, "")
		b.do("PATCH", "/v1/tasks/jobs/settings", map[string]any{"retentionDays": 3, "rateLimit": 100}).want(t, 200, "")
		b.do("POST", "/v1/instances", map[string]any{"name": "empty"}).want(t, 201, "")
		b.start()
		r := b.do("POST", "/api/backup/export", nil).want(t, 201, "")
		if r.obj("task")["kind"] != "backup.export" {
			t.Fatalf("export: %s", r.raw)
		}
		r = b.waitJob(r.body["id"].(string), "SUCCEEDED")
		raw, _ := json.Marshal(r.obj("task")["result"])
		var bun engine.Bundle
		if err := json.Unmarshal(raw, &bun); err != nil {
			t.Fatal(err)
		}
		if len(bun.Instances) != 2 || bun.Instances[1].Name != "jobs" || len(bun.Instances[1].Queues) != 3 || bun.Instances[1].Settings.RetentionDays != 3 {
			t.Fatalf("bundle: %s", raw)
		}
		for _, secret := range []string{"whsec_", "errand_"} {
			if strings.Contains(string(raw), secret) {
				t.Fatalf("the bundle holds a secret: %s", raw)
			}
		}

		// Another host.
		other := setupOn(t, "sqlite")
		ctx := context.Background()
		rep, err := other.eng.ImportBundle(ctx, "dev", &bun)
		if err != nil {
			t.Fatal(err)
		}
		// Each new instance comes with its default queue, left as it is.
		want := &engine.ImportReport{
			Created: []string{"instance empty", "instance jobs", "queue jobs/dead", "queue jobs/mail"},
			Changed: []string{"settings jobs"},
			Left:    []string{"settings empty", "queue empty/default", "queue jobs/default"},
		}
		if !reflect.DeepEqual(rep, want) {
			t.Fatalf("first import: %+v", rep)
		}
		again, err := other.eng.ImportBundle(ctx, "dev", &bun)
		if err != nil {
			t.Fatal(err)
		}
		if len(again.Created) != 0 || len(again.Changed) != 0 || len(again.Left) != 2*2+4 {
			t.Fatalf("second import: %+v", again)
		}
		mine, err := other.eng.ExportBundle(ctx, "dev")
		if err != nil {
			t.Fatal(err)
		}
		mine.ExportedAt = bun.ExportedAt
		if !reflect.DeepEqual(mine, &bun) {
			t.Fatalf("imported configuration differs:\n%+v\n%+v", mine, &bun)
		}
		other.do("PATCH", "/v1/tasks/jobs/queues/mail", map[string]any{"maxAttempts": 9}).want(t, 200, "")
		third, err := other.eng.ImportBundle(ctx, "dev", &bun)
		if err != nil || !slices.Equal(third.Changed, []string{"queue jobs/mail"}) {
			t.Fatalf("third import: %+v %v", third, err)
		}
		// A bad bundle changes nothing.
		bad := bun
		bad.Instances = append(slices.Clone(bun.Instances), engine.BundleInstance{Name: "new", Queues: []engine.BundleQueue{{Name: "x", Mode: "push", MaxAttempts: 0}}})
		if _, err := other.eng.ImportBundle(ctx, "dev", &bad); err == nil {
			t.Fatal("a bundle with a bad queue was imported")
		}
		other.do("GET", "/v1/tasks/new/queues", nil).want(t, 200, "") // dev creates on first use; the import did not
		if l := other.do("GET", "/v1/tasks/new/queues", nil).list("queues"); len(l) != 1 {
			t.Fatalf("the refused import wrote queues: %v", l)
		}
	})
}
