package httpapi_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/id"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// exportJob runs a backup.export job to its end and returns its result and
// the bundle read from GET /api/tasks/{id}/bundle, checked against the
// result's size and hash.
func (b *bundle) exportJob(t *testing.T) (errandapi.ExportResult, []byte) {
	t.Helper()
	r := b.do("POST", "/api/backup/export", nil).want(t, 201, "")
	if r.obj("task")["kind"] != "backup.export" {
		t.Fatalf("export: %s", r.raw)
	}
	jobID := r.body["id"].(string)
	r = b.waitJob(jobID, "SUCCEEDED")
	var res errandapi.ExportResult
	raw, _ := json.Marshal(r.obj("task")["result"])
	if err := json.Unmarshal(raw, &res); err != nil || res.Bundle != "/api/tasks/"+jobID+"/bundle" {
		t.Fatalf("result %s: %v", raw, err)
	}
	dl := b.do("GET", res.Bundle, nil).want(t, 200, "")
	sum := sha256.Sum256(dl.raw)
	if int64(len(dl.raw)) != res.Bytes || hex.EncodeToString(sum[:]) != res.SHA256 {
		t.Fatalf("downloaded %d bytes, the result says %d (%s)", len(dl.raw), res.Bytes, raw)
	}
	return res, dl.raw
}

// TestOpsExportImport: POST /api/backup/export produces the bundle, with
// the trigger rules but no hook token or secret; loaded on another host it
// recreates the same configuration (a hook that had a secret disabled until
// it gets one), the rules fire there, and loading it again changes nothing.
func TestOpsExportImport(t *testing.T) {
	onEach(t, func(t *testing.T, b *bundle) {
		b.do("POST", "/v1/tasks/jobs/queues", map[string]any{"name": "dead", "mode": "pull"}).want(t, 201, "")
		b.do("POST", "/v1/tasks/jobs/queues", map[string]any{"name": "mail", "target": map[string]any{"webhook": "http://127.0.0.1:9/m"},
			"maxAttempts": 4, "ratePerSecond": 2.5, "deadLetterQueue": "dead", "paused": true}).want(t, 201, "")
		b.do("PATCH", "/v1/tasks/jobs/settings", map[string]any{"retentionDays": 3, "rateLimit": 100}).want(t, 200, "")
		b.do("POST", "/v1/instances", map[string]any{"name": "empty"}).want(t, 201, "")
		secret := id.WebhookKey()
		sched := b.do("POST", "/v1/tasks/jobs/triggers", `{"queue":"jobs/dead","schedule":{"cron":"@every 1m"},"params":{"team": "ops"},"payload":{"r":1},"priority":3}`).want(t, 201, "").obj("trigger")
		open := b.do("POST", "/v1/tasks/jobs/triggers", `{"queue":"jobs/dead","hook":{"headers":["x-event"]}}`).want(t, 201, "").obj("trigger")
		signed := b.do("POST", "/v1/tasks/jobs/triggers", `{"queue":"jobs/dead","hook":{"secret":"`+secret+`",
			"signature":{"header":"X-Acme-Signature","idHeader":"X-Acme-Delivery"}}}`).want(t, 201, "").obj("trigger")
		chain := b.do("POST", "/v1/tasks/jobs/triggers", `{"queue":"jobs/mail","task":{"queue":"jobs/dead","on":["succeeded","failed"]},"enabled":false}`).want(t, 201, "").obj("trigger")
		b.start()
		res, raw := b.exportJob(t)
		var bun engine.Bundle
		if err := json.Unmarshal(raw, &bun); err != nil {
			t.Fatal(err)
		}
		if res.Instances != 2 || res.Queues != 4 || res.Triggers != 4 || res.Parts != 1 || res.Version != 2 {
			t.Fatalf("result: %+v", res)
		}
		if len(bun.Instances) != 2 || bun.Instances[1].Name != "jobs" || len(bun.Instances[1].Queues) != 3 || bun.Instances[1].Settings.RetentionDays != 3 ||
			len(bun.Instances[1].Triggers) != 4 || bun.Version != 2 {
			t.Fatalf("bundle: %s", raw)
		}
		tokenOf := func(tr map[string]any) string {
			p := tr["hook"].(map[string]any)["path"].(string)
			return p[strings.LastIndex(p, "/")+1:]
		}
		for _, secret := range []string{"whsec_", "errand_", tokenOf(open), tokenOf(signed)} {
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
		tid := func(tr map[string]any) string { return "trigger jobs/" + tr["id"].(string) }
		want := &engine.ImportReport{
			Created: []string{"instance empty", "instance jobs", "queue jobs/dead", "queue jobs/mail", tid(sched), tid(open), tid(signed), tid(chain)},
			Changed: []string{"settings jobs"},
			Left:    []string{"settings empty", "queue empty/default", "queue jobs/default"},
			Notes:   []string{tid(signed) + ": a hook with a secret, which a bundle does not carry; it stays disabled until you set hook.secret and enable it (PATCH /v1/tasks/jobs/triggers/" + signed["id"].(string) + ")"},
		}
		if !reflect.DeepEqual(rep, want) {
			t.Fatalf("first import: %+v", rep)
		}
		again, err := other.eng.ImportBundle(ctx, "dev", &bun)
		if err != nil {
			t.Fatal(err)
		}
		if len(again.Created) != 0 || len(again.Changed) != 0 || len(again.Left) != 2*2+4+4 {
			t.Fatalf("second import: %+v", again)
		}
		mine, err := other.eng.ExportBundle(ctx, "dev")
		if err != nil {
			t.Fatal(err)
		}
		mine.ExportedAt = bun.ExportedAt
		// The hook that had a secret waits, disabled, for one.
		want2 := bun
		want2.Instances = slices.Clone(bun.Instances)
		want2.Instances[1].Triggers = slices.Clone(bun.Instances[1].Triggers)
		for i, bt := range want2.Instances[1].Triggers {
			if bt.ID == signed["id"] {
				// Its own signature scheme (no secret) travels with it.
				sig := &errandapi.HookSignature{Header: "X-Acme-Signature", Hash: "sha256", Encoding: "hex", IDHeader: "X-Acme-Delivery"}
				if !reflect.DeepEqual(bt.Hook.Signature, sig) {
					t.Fatalf("the bundle's signature scheme: %+v", bt.Hook.Signature)
				}
				bt.Enabled, bt.Hook = false, &engine.BundleHook{Headers: []string{}, HasSecret: false, Signature: sig}
				want2.Instances[1].Triggers[i] = bt
			}
		}
		if !reflect.DeepEqual(mine, &want2) {
			t.Fatalf("imported configuration differs:\n%+v\n%+v", mine, &want2)
		}

		// The rules work on the other host: the schedule ticks, the open hook
		// takes calls at its new URL, the signed one is off.
		other.eng.Scheduler().RunOnce(ctx)
		other.clock.Advance(time.Minute)
		if n, err := other.eng.Scheduler().RunOnce(ctx); n != 1 || err != nil {
			t.Fatalf("the imported schedule fired %d times: %v", n, err)
		}
		rules := other.do("GET", "/v1/tasks/jobs/triggers", nil).want(t, 200, "").list("triggers")
		var newOpen, newSigned map[string]any
		for _, r := range rules {
			r := r.(map[string]any)
			switch r["id"] {
			case open["id"]:
				newOpen = r
			case signed["id"]:
				newSigned = r
			}
		}
		if tokenOf(newOpen) == tokenOf(open) {
			t.Fatal("the imported hook kept its origin's token")
		}
		other.hookCall(newOpen["hook"].(map[string]any)["path"].(string), []byte(`{"n":1}`), map[string]string{"X-Event": "push"}).want(t, 202, "")
		other.hookCall(newSigned["hook"].(map[string]any)["path"].(string), []byte(`{"n":1}`), nil).want(t, 404, "NOT_FOUND")
		tasks := other.do("GET", "/v1/tasks/jobs/queues/dead/tasks", nil).want(t, 200, "").list("tasks")
		sources := map[string]int{}
		for _, tk := range tasks {
			tk := tk.(map[string]any)
			sources[tk["source"].(string)]++
			if want := map[string]float64{"schedule": 3}[tk["source"].(string)]; tk["priority"] != want {
				t.Errorf("a %s task on the other host: priority %v, want %v (the rule's, carried by the bundle)", tk["source"], tk["priority"], want)
			}
		}
		if sources["schedule"] != 1 || sources["hook"] != 1 || len(tasks) != 2 {
			t.Fatalf("tasks on the other host: %v", tasks)
		}
		// Once the operator sets the secret and enables it, a later import
		// leaves it as it is.
		other.do("PATCH", "/v1/tasks/jobs/triggers/"+signed["id"].(string), `{"enabled":true,"hook":{"secret":"`+secret+`"}}`).want(t, 200, "")
		if rep, err := other.eng.ImportBundle(ctx, "dev", &bun); err != nil || len(rep.Changed) != 0 || len(rep.Notes) != 0 {
			t.Fatalf("import over the completed hook: %+v %v", rep, err)
		}
		// A rule whose kind would change is refused before anything is
		// written.
		kind := bun
		kind.Instances = slices.Clone(bun.Instances)
		kind.Instances[1].Triggers = slices.Clone(bun.Instances[1].Triggers)
		for i, bt := range kind.Instances[1].Triggers {
			if bt.ID == sched["id"] {
				bt.Schedule, bt.Hook = nil, &engine.BundleHook{}
				kind.Instances[1].Triggers[i] = bt
			}
		}
		if _, err := other.eng.ImportBundle(ctx, "dev", &kind); !task.IsCode(err, task.CodeInvalidArgument) || !strings.Contains(err.Error(), "kind cannot change") {
			t.Fatalf("kind change: %v", err)
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
		// Nor does one whose dead-letter queues loop: refused before any
		// queue is written, naming the field and the loop.
		loop := bun
		loop.Instances = append(slices.Clone(bun.Instances), engine.BundleInstance{Name: "looped", Settings: engine.BundleSettings{RetentionDays: 7, MaxInFlight: 50}, Queues: []engine.BundleQueue{
			{Name: "a", Mode: "pull", MaxAttempts: 1, MaxBackoffSeconds: 1, MinBackoffSeconds: 1, DeadlineSeconds: 60, DeadLetterQueue: "b"},
			{Name: "b", Mode: "pull", MaxAttempts: 1, MaxBackoffSeconds: 1, MinBackoffSeconds: 1, DeadlineSeconds: 60, DeadLetterQueue: "a"},
		}})
		_, err = other.eng.ImportBundle(ctx, "dev", &loop)
		if err == nil || !strings.Contains(err.Error(), ".queues[0].deadLetterQueue") || !strings.Contains(err.Error(), "a → b → a") {
			t.Fatalf("a bundle with a dead-letter loop: %v", err)
		}
		if l := other.do("GET", "/v1/tasks/looped/queues", nil).want(t, 200, "").list("queues"); len(l) != 1 {
			t.Fatalf("the refused import wrote queues: %v", l)
		}
	})
}

// TestOpsBundleRefusals: the bundle of a job that is not a finished
// backup.export is refused with the operations API's codes; a rule create
// that sends an id keeps it, and refuses a taken or malformed one naming
// id.
func TestOpsBundleRefusals(t *testing.T) {
	b := setup(t)
	r := b.do("POST", "/api/backup/export", nil).want(t, 201, "")
	jobID := r.body["id"].(string)
	b.do("GET", "/api/tasks/"+jobID+"/bundle", nil).want(t, 400, "invalid_argument") // PENDING
	b.do("GET", "/api/tasks/nope/bundle", nil).want(t, 404, "not_found")
	b.do("POST", "/v1/instances", `{"name":"jobs"}`).want(t, 201, "")
	replay := b.do("POST", "/api/tasks", map[string]any{"kind": "dlq.replay", "idempotency_key": "k", "payload": map[string]any{"instance": "jobs", "queue": "default"}}).want(t, 201, "")
	if m := b.do("GET", "/api/tasks/"+replay.body["id"].(string)+"/bundle", nil).want(t, 400, "invalid_argument").message(); !strings.Contains(m, "backup.export") {
		t.Fatalf("message: %s", m)
	}

	b.do("POST", "/v1/tasks/jobs/queues", `{"name":"out","mode":"pull"}`).want(t, 201, "")
	tr := b.do("POST", "/v1/tasks/jobs/triggers", `{"id":"rule-1","queue":"jobs/out","hook":{}}`).want(t, 201, "").obj("trigger")
	if tr["id"] != "rule-1" {
		t.Fatalf("created %v", tr)
	}
	for _, body := range []string{`{"id":"rule-1","queue":"jobs/out","hook":{}}`, `{"id":"a b","queue":"jobs/out","hook":{}}`} {
		if m := b.do("POST", "/v1/tasks/jobs/triggers", body).want(t, 400, "INVALID_ARGUMENT").message(); !strings.HasPrefix(m, "id") {
			t.Fatalf("%s: %s", body, m)
		}
	}
	b.do("PATCH", "/v1/tasks/jobs/triggers/rule-1", `{"id":"rule-2"}`).want(t, 400, "INVALID_ARGUMENT").names(t, "id")
	if n := len(b.do("GET", "/v1/tasks/jobs/triggers", nil).list("triggers")); n != 1 {
		t.Fatalf("%d rules after the refusals", n)
	}
}

// TestOpsExportRetryDropsParts: an export attempt that died after storing
// some parts of its bundle (its node killed) is rescued and retried; the
// next attempt writes its own parts, the bundle read afterwards is the new
// attempt's, and the dead attempt's parts are removed.
func TestOpsExportRetryDropsParts(t *testing.T) {
	onEach(t, func(t *testing.T, b *bundle) {
		ctx := context.Background()
		jid := b.do("POST", "/api/backup/export", nil).want(t, 201, "").body["id"].(string)
		claimed := b.claimJob("backup.export")[0]
		if claimed.ID != jid || claimed.Attempt != 1 {
			t.Fatalf("claimed %+v", claimed)
		}
		// What the dead attempt left: three parts of a bundle.
		files := &task.Instance{ID: id.New(b.clock.Now()), Org: "dev", Name: task.OpsFilesInstance, CreatedAt: T0.UnixMilli(), Settings: task.DefaultSettings(), WebhookKey: id.WebhookKey()}
		if err := b.eng.Store().InstanceCreate(ctx, files); err != nil {
			t.Fatal(err)
		}
		if err := b.eng.Store().QueueCreate(ctx, task.NewQueue(files.ID, task.OpsFilesQueue, task.ModePull)); err != nil {
			t.Fatal(err)
		}
		now := b.clock.Now().UnixMilli()
		var dead []*task.Task
		for n := range 3 {
			pid := fmt.Sprintf("%s.1.%d", jid, n)
			dead = append(dead, &task.Task{InstanceID: files.ID, ID: pid, Queue: task.OpsFilesQueue, Name: pid, State: task.Succeeded, Pull: true,
				Attempt: 1, MaxAttempts: 1, RunAt: now, CreatedAt: now, FinishedAt: now, Source: task.SourceAPI, Payload: json.RawMessage(`"cGFydA=="`)})
		}
		if res, err := b.eng.Store().TaskAdd(ctx, dead); err != nil || res[0].Err != nil {
			t.Fatalf("parts: %v %v", err, res)
		}
		b.clock.Advance(31 * time.Second)
		if n, err := b.eng.Rescuer().RunOnce(ctx); err != nil || n != 1 {
			t.Fatalf("rescued %d, %v", n, err)
		}
		b.clock.Advance(5 * time.Second)
		b.start()
		r := b.waitJob(jid, "SUCCEEDED")
		var res errandapi.ExportResult
		raw, _ := json.Marshal(r.obj("task")["result"])
		if err := json.Unmarshal(raw, &res); err != nil || res.Attempt != 2 || res.Parts != 1 {
			t.Fatalf("result %s", raw)
		}
		dl := b.do("GET", res.Bundle, nil).want(t, 200, "")
		var bun engine.Bundle
		if err := json.Unmarshal(dl.raw, &bun); err != nil || int64(len(dl.raw)) != res.Bytes {
			t.Fatalf("bundle %q: %v", dl.raw, err)
		}
		for _, p := range dead {
			if _, err := b.eng.Store().TaskGet(ctx, store.TaskRef{InstanceID: files.ID, ID: p.ID}); !task.IsCode(err, task.CodeNotFound) {
				t.Fatalf("the dead attempt's part %s is still there: %v", p.ID, err)
			}
		}
		// The files instance is errand's own: never listed.
		for _, in := range b.do("GET", "/v1/instances", nil).want(t, 200, "").list("instances") {
			if n := in.(map[string]any)["name"].(string); strings.HasPrefix(n, "_") {
				t.Fatalf("instance %s is listed", n)
			}
		}
	})
}
