package httpapi_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/errandhq/errand/internal/engine"
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
// payload byte-identical; a wrong key, a truncated and a damaged archive
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
