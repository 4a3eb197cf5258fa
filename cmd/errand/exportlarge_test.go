package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/errandhq/errand/client"
	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/id"
)

// adminNode starts `errand serve` on a new store of kind and returns its
// URL and a key with full:* (what export and import need).
func adminNode(t *testing.T, bin, kind string) (string, string) {
	t.Helper()
	store := "sqlite://" + filepath.Join(t.TempDir(), "errand.db")
	if kind == "postgres" {
		store = pgSchemaURL(t)
	}
	code, out, errOut := runMain("keys", "create", "--store", store, "--create", "--org", "acme", "--grant", "full:*")
	if code != 0 {
		t.Fatalf("keys create: %s", errOut)
	}
	_, url, logs := startServe(t, bin, "--store", store, "--webhook-allow", "127.0.0.0/8")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("serve log:\n%s", tail(logs.String(), 40))
		}
	})
	return url, strings.TrimSpace(out)
}

// readBundleFile decodes a bundle file whole (for the test's comparisons).
func readBundleFile(t *testing.T, path string) *engine.Bundle {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var b engine.Bundle
	if err := json.Unmarshal(raw, &b); err != nil {
		t.Fatal(err)
	}
	return &b
}

// TestExportImportLarge: an instance of 2,000 queues and 250 trigger rules
// (plus a small one) goes through `errand export` — a bundle far over the
// 64 KiB job result, stored in parts and streamed — and `errand import`
// into another `errand serve`, on SQLite and on PostgreSQL. The second
// node's configuration equals the first's (hooks with a secret disabled
// until they get one), a second import leaves everything, and the imported
// rules fire there: the schedule ticks, a hook takes a call at its new
// URL, a chain adds a task when a watched task succeeds.
func TestExportImportLarge(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildErrand(t)
	for _, kind := range []string{"sqlite", "postgres"} {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			srcURL, srcKey := adminNode(t, bin, kind)
			dstURL, dstKey := adminNode(t, bin, kind)
			src, _ := client.New(srcURL, client.Options{APIKey: srcKey})
			dst, _ := client.New(dstURL, client.Options{APIKey: dstKey})
			for _, inst := range []string{"big", "small"} {
				if _, err := src.CreateInstance(ctx, inst); err != nil {
					t.Fatal(err)
				}
			}
			// 2,000 queues, 8 at a time, with varied settings.
			const queues = 2000
			work := make(chan int)
			var wg sync.WaitGroup
			errs := make(chan error, queues)
			for range 8 {
				wg.Go(func() {
					for i := range work {
						req := errandapi.QueueRequest{Mode: new(errandapi.ModePull), MaxAttempts: new(1 + i%10)}
						if i%3 == 0 {
							req.Mode = new(errandapi.ModePush)
							req.Target = errandapi.Value(errandapi.Target{Webhook: fmt.Sprintf("http://127.0.0.1:9/q/%d", i)})
							req.RatePerSecond = errandapi.Value(float64(i%7) + 0.5)
						}
						if _, err := src.CreateQueue(ctx, "big", fmt.Sprintf("q%04d", i), req); err != nil {
							errs <- err
						}
					}
				})
			}
			for i := range queues {
				work <- i
			}
			close(work)
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			// 250 rules on big: schedules, hooks (half with a secret), chains.
			var openHook, tickRule, chainRule string
			for i := range 250 {
				q := fmt.Sprintf("big/q%04d", i*6+1) // a pull queue (i%3 != 0)
				req := errandapi.TriggerRequest{Queue: &q, Params: json.RawMessage(fmt.Sprintf(`{"i": %d}`, i))}
				switch i % 5 {
				case 0, 1:
					cron := fmt.Sprintf("%d 9 * * 1-5", i%60)
					if i == 0 {
						cron = "@every 1s"
					}
					req.Schedule = &errandapi.TriggerScheduleSpec{Cron: &cron, TimeZone: new("Europe/Paris")}
				case 2, 3:
					req.Hook = &errandapi.TriggerHookSpec{Headers: &[]string{"X-Event"}}
					if i%5 == 3 {
						req.Hook.Secret = errandapi.Value(id.WebhookKey())
					}
				case 4:
					watched := fmt.Sprintf("big/q%04d", i*6+2)
					req.Task = &errandapi.TriggerTaskSpec{Queue: &watched, On: &[]string{"succeeded"}}
				}
				tr, err := src.CreateTrigger(ctx, "big", req)
				if err != nil {
					t.Fatal(err)
				}
				switch {
				case i == 0:
					tickRule = tr.ID
				case i == 2:
					openHook = tr.ID
				case i == 4:
					chainRule = tr.ID
				}
			}
			dir := t.TempDir()
			file := filepath.Join(dir, "bundle.json")
			code, stdout, stderr := runMain("export", "--url", srcURL, "--api-key", srcKey, "--out", file, "--json")
			var sum exportSummary
			if code != 0 || json.Unmarshal([]byte(stdout), &sum) != nil || sum.Instances != 2 || sum.Queues != queues+2 || sum.Triggers != 250 {
				t.Fatalf("export: exit %d, %q, %q", code, stdout, stderr)
			}
			if st, _ := os.Stat(file); st.Size() != sum.Bytes || st.Size() < 3*256<<10 {
				t.Fatalf("the bundle is %d bytes (summary %d): not several parts", st.Size(), sum.Bytes)
			}

			code, stdout, stderr = runMain("import", "--url", dstURL, "--api-key", dstKey, "--json", file)
			var rep engine.ImportReport
			if code != 0 || json.Unmarshal([]byte(stdout), &rep) != nil {
				t.Fatalf("import: exit %d, %q, %q", code, tail(stdout, 500), stderr)
			}
			// 2 instances, their settings changed or left, 2,000 queues and
			// 250 rules created; the default queues left.
			if len(rep.Created) != 2+queues+250 || len(rep.Notes) != 50 {
				t.Fatalf("import created %d items, %d notes: %s", len(rep.Created), len(rep.Notes), tail(stdout, 500))
			}
			again := filepath.Join(dir, "again.json")
			if code, _, stderr := runMain("export", "--url", dstURL, "--api-key", dstKey, "--out", again); code != 0 {
				t.Fatalf("export of the copy: %s", stderr)
			}
			want, got := readBundleFile(t, file), readBundleFile(t, again)
			want.ExportedAt = got.ExportedAt
			for i := range want.Instances {
				for j, bt := range want.Instances[i].Triggers {
					if bt.Hook != nil && bt.Hook.HasSecret {
						bt.Enabled, bt.Hook = false, &engine.BundleHook{Headers: bt.Hook.Headers, HasSecret: false}
						want.Instances[i].Triggers[j] = bt
					}
				}
			}
			// Raw JSON compares after a round trip through the same encoder.
			wj, _ := json.Marshal(want)
			gj, _ := json.Marshal(got)
			var w2, g2 any
			_ = json.Unmarshal(wj, &w2)
			_ = json.Unmarshal(gj, &g2)
			if !reflect.DeepEqual(w2, g2) {
				t.Fatalf("the copy's configuration differs from the bundle")
			}
			code, stdout, _ = runMain("import", "--url", dstURL, "--api-key", dstKey, "--json", file)
			rep = engine.ImportReport{}
			if code != 0 || json.Unmarshal([]byte(stdout), &rep) != nil || len(rep.Created)+len(rep.Changed) != 0 {
				t.Fatalf("second import: %d %s", code, tail(stdout, 500))
			}

			// The imported rules fire on the copy.
			rules, err := dst.ListTriggers(ctx, "big")
			if err != nil {
				t.Fatal(err)
			}
			byID := map[string]errandapi.Trigger{}
			for _, r := range rules {
				byID[r.ID] = r
			}
			lease := func(queue string) errandapi.LeasedTask {
				t.Helper()
				got, err := dst.Lease(ctx, "big", queue, errandapi.LeaseRequest{WaitSeconds: 10})
				if err != nil || len(got) != 1 {
					t.Fatalf("lease on %s: %v %v", queue, got, err)
				}
				return got[0]
			}
			tick := lease(strings.TrimPrefix(byID[tickRule].Queue, "big/"))
			if tick.Source != "schedule" {
				t.Fatalf("the schedule's task: %+v", tick)
			}
			hook := byID[openHook]
			token := hook.Hook.Path[strings.LastIndex(hook.Hook.Path, "/")+1:]
			if _, err := dst.FireHook(ctx, "big", token, []byte(`{"n":1}`), nil); err != nil {
				t.Fatal(err)
			}
			if h := lease(strings.TrimPrefix(hook.Queue, "big/")); h.Source != "hook" {
				t.Fatalf("the hook's task: %+v", h)
			}
			chain := byID[chainRule]
			watched := strings.TrimPrefix(chain.Task.Queue, "big/")
			if _, err := dst.AddTask(ctx, "big", watched, errandapi.NewTask{Payload: json.RawMessage(`{"w":1}`)}); err != nil {
				t.Fatal(err)
			}
			w := lease(watched)
			if _, err := dst.Ack(ctx, "big", w.ID, errandapi.AckRequest{LeaseID: w.LeaseID}); err != nil {
				t.Fatal(err)
			}
			if c := lease(strings.TrimPrefix(chain.Queue, "big/")); c.Source != "task" {
				t.Fatalf("the chain's task: %+v", c)
			}
		})
	}
}
