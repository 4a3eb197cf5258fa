package httpapi_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/errandhq/errand/internal/deliver"
	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/id"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
	"github.com/errandhq/errand/internal/testkit/stores"
)

// backupBundle is the API with instance backups on: a backup directory
// and a key.
func backupBundle(t *testing.T, kind string) (*bundle, string, []byte) {
	dir := t.TempDir()
	key := bytes.Repeat([]byte{7}, engine.BackupKeySize)
	b := setupWith(t, kind, func(c *engine.Config) { c.Ops = engine.OpsConfig{BackupDir: dir, BackupKey: key} })
	return b, dir, key
}

// TestOpsBackupRestore: an instance's queues and tasks go into an
// encrypted archive and come back, every task field equal and every
// payload byte-identical, signing with the same webhook key; a wrong key, a truncated and a damaged archive
// are refused, and nothing is restored by a refused call.
func TestOpsBackupRestore(t *testing.T) {
	for _, kind := range stores.Kinds {
		t.Run(kind, func(t *testing.T) {
			b, dir, key := backupBundle(t, kind)
			ctx := context.Background()
			ids, _ := b.failed("src", "work", "dead", 300)
			payloads := []string{`{"a": 1,   "b":"ü\u00e9"}`, "[1,2 ,3]", `"text"`, "null", `{"nested":{"x":[true,false,null]}}`}
			for i, p := range payloads {
				b.do("POST", "/v1/tasks/src/queues/default/tasks", `{"name":"n`+string(rune('a'+i))+`","payload":`+p+`,"target":{"webhook":"http://127.0.0.1:9/x"},"delay":60}`).want(t, 201, "")
			}
			b.start()
			r := b.do("POST", "/api/instances/src/backup", nil).want(t, 201, "")
			if r.obj("task")["kind"] != "instance.backup" {
				t.Fatalf("backup: %s", r.raw)
			}
			res := result(b.waitJob(r.body["id"].(string), "SUCCEEDED"))
			path := res["path"].(string)
			if res["tasks"] != float64(2*300+len(payloads)) || filepath.Dir(path) != dir {
				t.Fatalf("result: %v", res)
			}
			entries, _ := os.ReadDir(dir)
			if len(entries) != 1 {
				t.Fatalf("backup dir holds %d files", len(entries))
			}
			raw, _ := os.ReadFile(path)
			if bytes.Contains(raw, []byte(`"nested"`)) || bytes.Contains(raw, []byte(`"payload"`)) {
				t.Fatal("the archive is not encrypted")
			}

			// Refusals first: nothing restored.
			wrong := bytes.Repeat([]byte{8}, engine.BackupKeySize)
			if _, err := b.eng.RestoreInstance(ctx, "dev", "copy", path, wrong); !task.IsCode(err, task.CodeInvalidArgument) || !strings.Contains(err.Error(), "not the key") {
				t.Fatalf("wrong key: %v", err)
			}
			cut := filepath.Join(t.TempDir(), "cut")
			_ = os.WriteFile(cut, raw[:len(raw)-100], 0o600)
			if _, err := b.eng.RestoreInstance(ctx, "dev", "copy", cut, key); err == nil || !strings.Contains(err.Error(), "truncated") {
				t.Fatalf("truncated: %v", err)
			}
			_ = os.WriteFile(cut, raw[:20], 0o600)
			if _, err := b.eng.RestoreInstance(ctx, "dev", "copy", cut, key); err == nil || !strings.Contains(err.Error(), "truncated") {
				t.Fatalf("truncated header: %v", err)
			}
			bad := bytes.Clone(raw)
			bad[len(bad)/2] ^= 1
			_ = os.WriteFile(cut, bad, 0o600)
			if _, err := b.eng.RestoreInstance(ctx, "dev", "copy", cut, key); err == nil || !strings.Contains(err.Error(), "damaged") {
				t.Fatalf("damaged: %v", err)
			}
			if _, err := b.eng.Store().InstanceGet(ctx, store.InstanceRef{Org: "dev", Name: "copy"}); !task.IsCode(err, task.CodeNotFound) {
				t.Fatalf("a refused restore left an instance: %v", err)
			}
			if _, err := b.eng.RestoreInstance(ctx, "dev", "src", path, key); !task.IsCode(err, task.CodeInstanceExists) {
				t.Fatalf("restore over an existing instance: %v", err)
			}

			got, err := b.eng.RestoreInstance(ctx, "dev", "copy", path, key)
			if err != nil || got.Tasks != 2*300+len(payloads) {
				t.Fatalf("restore: %+v %v", got, err)
			}
			src, _ := b.eng.Store().InstanceGet(ctx, store.InstanceRef{Org: "dev", Name: "src"})
			dst, _ := b.eng.Store().InstanceGet(ctx, store.InstanceRef{Org: "dev", Name: "copy"})
			if dst.Settings != src.Settings {
				t.Fatalf("settings %+v, want %+v", dst.Settings, src.Settings)
			}
			// Receivers check the restored instance's deliveries as they
			// did the original's.
			if dst.WebhookKey != src.WebhookKey {
				t.Fatalf("the restored instance signs with %q, the original with %q", dst.WebhookKey, src.WebhookKey)
			}
			sq, _ := b.eng.Store().QueueList(ctx, src.ID)
			dq, _ := b.eng.Store().QueueList(ctx, dst.ID)
			for i := range sq {
				sq[i].InstanceID, sq[i].CreatedAt, dq[i].CreatedAt = dst.ID, 0, 0
				if !reflect.DeepEqual(sq[i], dq[i]) {
					t.Fatalf("queue %+v, want %+v", dq[i], sq[i])
				}
			}
			all := append([]string{}, ids...)
			for _, name := range []string{"na", "nb", "nc", "nd", "ne"} {
				l := b.do("GET", "/v1/tasks/src/queues/default/tasks?name="+name, nil).list("tasks")
				all = append(all, l[0].(map[string]any)["id"].(string))
			}
			st, _ := b.eng.Store().TaskGetMany(ctx, src.ID, all)
			dt, _ := b.eng.Store().TaskGetMany(ctx, dst.ID, all)
			if len(dt) != len(all) {
				t.Fatalf("restored %d of %d tasks", len(dt), len(all))
			}
			for _, tid := range all {
				s, d := st[tid], dt[tid]
				if !bytes.Equal(s.Payload, d.Payload) || !bytes.Equal(s.Result, d.Result) || !bytes.Equal(s.Params, d.Params) {
					t.Fatalf("task %s: payload %q, want %q", tid, d.Payload, s.Payload)
				}
				s.InstanceID = d.InstanceID
				if !reflect.DeepEqual(s, d) {
					t.Fatalf("task %s:\n%+v\nwant\n%+v", tid, d, s)
				}
			}
			if string(st[all[len(all)-5]].Payload) != payloads[0] {
				t.Fatalf("payload stored as %q", st[all[len(all)-5]].Payload)
			}
		})
	}
}

// TestOpsBackupNeverPartial: an attempt that fails while placing the
// archive leaves no archive and no temp file; a temp file a crashed attempt
// left is removed by the next; a server without a key refuses the kind.
func TestOpsBackupNeverPartial(t *testing.T) {
	b, dir, _ := backupBundle(t, "sqlite")
	b.failed("src", "work", "", 50)
	// A name no instance can have is not found, as on the v1 routes.
	for _, bad := range []string{"a.b", "_x", "-bad", "a%00b", strings.Repeat("x", 101)} {
		if m := b.do("POST", "/api/instances/"+bad+"/backup", nil).want(t, 404, "not_found").message(); !strings.Contains(m, "not found") {
			t.Fatalf("%s: %s", bad, m)
		}
	}
	r := b.do("POST", "/api/instances/src/backup", map[string]any{"max_attempts": 1}).want(t, 201, "")
	jid := r.body["id"].(string)
	final := filepath.Join(dir, "src-"+jid+".errand-backup")
	// The archive's place is taken by a directory: the rename fails after
	// the whole temp file was written.
	if err := os.MkdirAll(filepath.Join(final, "blocker"), 0o700); err != nil {
		t.Fatal(err)
	}
	b.start()
	w := b.waitJob(jid, "FAILED").obj("task")
	if !strings.Contains(w["last_error"].(string), "placing the archive") {
		t.Fatalf("last error: %v", w["last_error"])
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || !entries[0].IsDir() {
		t.Fatalf("a failed backup left files: %v", entries)
	}
	// A crashed attempt's temp file, then a retry that succeeds.
	_ = os.RemoveAll(final)
	if err := os.WriteFile(final+".tmp", []byte("ERRANDBK partial"), 0o600); err != nil {
		t.Fatal(err)
	}
	b.do("POST", "/api/tasks/"+jid+"/retry", nil).want(t, 200, "")
	b.waitJob(jid, "SUCCEEDED")
	entries, _ = os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != filepath.Base(final) {
		t.Fatalf("backup dir: %v", entries)
	}

	off := setup(t)
	off.do("POST", "/api/instances/src/backup", nil).want(t, 400, "invalid_argument")
	off.do("POST", "/api/tasks", map[string]any{"kind": "instance.backup", "idempotency_key": "k", "payload": map[string]any{"instance": "src"}}).want(t, 400, "invalid_argument")
}

// TestOpsBackupRestoreTriggers: an instance backup carries the instance's
// trigger rules whole — a hook's token and secret included, since the
// archive is encrypted — and thousands of tasks in several sealed chunks.
// Restored on another host, the hook answers at the same URL and checks the
// same signatures and the schedule ticks; restored beside the original on
// the same store, the hook gets a new token (a token names one rule).
func TestOpsBackupRestoreTriggers(t *testing.T) {
	for _, kind := range stores.Kinds {
		t.Run(kind, func(t *testing.T) {
			b, _, key := backupBundle(t, kind)
			ctx := context.Background()
			ids, _ := b.failed("src", "work", "", 3000) // ≈ 1.2 MB of plaintext: more than one 1 MiB chunk
			b.do("POST", "/v1/tasks/src/queues", `{"name":"out","mode":"pull"}`).want(t, 201, "")
			secret := id.WebhookKey()
			hook := b.do("POST", "/v1/tasks/src/triggers", `{"queue":"src/out","hook":{"secret":"`+secret+`","headers":["x-event"]}}`).want(t, 201, "").obj("trigger")
			b.do("POST", "/v1/tasks/src/triggers", `{"queue":"src/out","schedule":{"cron":"@every 1m"},"payload":{"tick":true}}`).want(t, 201, "")
			b.do("POST", "/v1/tasks/src/triggers", `{"queue":"src/out","task":{"queue":"src/work","on":["failed"]}}`).want(t, 201, "")
			path := hook["hook"].(map[string]any)["path"].(string)
			b.start()
			r := b.do("POST", "/api/instances/src/backup", nil).want(t, 201, "")
			out := result(b.waitJob(r.body["id"].(string), "SUCCEEDED"))
			if out["tasks"] != float64(3000) || out["triggers"] != float64(3) || out["bytes"].(float64) <= 1<<20 {
				t.Fatalf("backup result: %v", out)
			}
			archive := out["path"].(string)
			body := []byte(`{"order":1}`)
			signedCall := func(h *bundle, p string) res {
				ts := h.clock.Now().Unix()
				sig, _ := deliver.SignStandard(secret, "msg-"+p, ts, body)
				return h.hookCall(p, body, map[string]string{"webhook-id": "msg-" + p, "webhook-timestamp": strconv.FormatInt(ts, 10), "webhook-signature": sig})
			}

			// Another host: same URL path, same secret, same schedule.
			other, _, _ := backupBundle(t, kind)
			got, err := other.eng.RestoreInstance(ctx, "dev", "", archive, key)
			if err != nil || got.Triggers != 3 || got.HooksRenewed != 0 || got.Tasks != 3000 {
				t.Fatalf("restore on another host: %+v %v", got, err)
			}
			other.hookCall(path, body, nil).want(t, 401, "UNAUTHENTICATED")
			signedCall(other, path).want(t, 202, "")
			other.clock.Advance(time.Minute)
			if n, err := other.eng.Scheduler().RunOnce(ctx); n != 1 || err != nil {
				t.Fatalf("the restored schedule fired %d times: %v", n, err)
			}
			if n := len(other.do("GET", "/v1/tasks/src/queues/out/tasks", nil).want(t, 200, "").list("tasks")); n != 2 {
				t.Fatalf("%d tasks from the restored rules, want 2", n)
			}
			inst, _ := other.eng.Store().InstanceGet(ctx, store.InstanceRef{Org: "dev", Name: "src"})
			if ts, _ := other.eng.Store().TaskGetMany(ctx, inst.ID, ids); len(ts) != len(ids) {
				t.Fatalf("restored %d of %d tasks", len(ts), len(ids))
			}

			// Beside the original: a new token, the same secret.
			got, err = b.eng.RestoreInstance(ctx, "dev", "copy", archive, key)
			if err != nil || got.HooksRenewed != 1 {
				t.Fatalf("restore beside the original: %+v %v", got, err)
			}
			var copyPath string
			for _, tr := range b.do("GET", "/v1/tasks/copy/triggers", nil).want(t, 200, "").list("triggers") {
				if h, ok := tr.(map[string]any)["hook"].(map[string]any); ok {
					copyPath = h["path"].(string)
				}
			}
			if copyPath == "" || strings.HasSuffix(copyPath, path[strings.LastIndex(path, "/"):]) {
				t.Fatalf("the copy's hook %q shares the original's token %q", copyPath, path)
			}
			signedCall(b, copyPath).want(t, 202, "")
			signedCall(b, path).want(t, 202, "")
		})
	}
}
