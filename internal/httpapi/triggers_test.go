package httpapi_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/errandhq/errand/internal/deliver"
	"github.com/errandhq/errand/internal/id"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// hookCall posts body to a hook path with headers and no API key.
func (b *bundle) hookCall(path string, body []byte, headers map[string]string) res {
	b.t.Helper()
	req, _ := http.NewRequest("POST", b.srv.URL+path, bytes.NewReader(body))
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	return b.send(req)
}

// hookRule makes a hook rule adding to jobs/out with secret and returns
// its URL's path.
func (b *bundle) hookRule(t *testing.T, secret string) string {
	t.Helper()
	return b.do("POST", "/v1/tasks/jobs/triggers", `{"queue":"jobs/out","hook":{"secret":"`+secret+`"}}`).
		want(t, 201, "").obj("trigger")["hook"].(map[string]any)["path"].(string)
}

func TestTriggerRoutesRefuseBadInput(t *testing.T) {
	s := setupServe(t)
	a := s.as(s.key("acme", "full:*"))
	a.do("POST", "/v1/instances", `{"name":"jobs"}`).want(t, 201, "")
	a.do("POST", "/v1/tasks/jobs/queues", `{"name":"out","mode":"pull"}`).want(t, 201, "")
	for _, c := range []struct{ body, code, field string }{
		{`{"queue":"jobs/out","schedule":{"cron":"99 * * * *"}}`, "INVALID_ARGUMENT", "schedule.cron"},
		{`{"queue":"jobs/out","schedule":{"cron":"@daily","timeZone":"Europe/Atlantis"}}`, "INVALID_ARGUMENT", "schedule.timeZone"},
		{`{"queue":"other/out","hook":{}}`, "INVALID_ARGUMENT", "queue"},
		{`{"queue":"jobs/out"}`, "INVALID_ARGUMENT", "schedule"},
		{`{"queue":"jobs/out","hook":{},"task":{"queue":"jobs/out"}}`, "INVALID_ARGUMENT", "task: send exactly one of schedule, hook or task; hook is sent too"},
		{`{"queue":"jobs/out","hook":{"secret":"plain"}}`, "INVALID_ARGUMENT", "hook.secret"},
		{`{"queue":"jobs/out","hook":{},"priority":10}`, "INVALID_ARGUMENT", "priority: must be 0–9"},
		{`{"queue":"jobs/out","hook":{},"priority":"high"}`, "INVALID_ARGUMENT", "priority: "},
		{`{"queue":"jobs/out","hook":{"headers":["X-Event","bad header"]}}`, "INVALID_ARGUMENT", "hook.headers[1]: \"bad header\" is not a header name"},
		{`{"queue":"jobs/out","hook":{"headers":["X-Event","authorization"]}}`, "INVALID_ARGUMENT", "hook.headers[1]: Authorization carries credentials"},
		{`{"queue":"jobs/out","hook":{"headers":["Cookie"]}}`, "INVALID_ARGUMENT", "hook.headers[0]: Cookie carries credentials"},
		{`{"queue":"jobs/out","hook":{"headers":["host"]}}`, "INVALID_ARGUMENT", "hook.headers[0]: Host is the request's authority"},
		{`{"queue":"jobs/out","hook":{"headers":["X-Event","X(bad)"]}}`, "INVALID_ARGUMENT", "hook.headers[1]: \"X(bad)\" is not a header name"},
		{`{"queue":"jobs/out","hook":{"headers":["X-Event","x-event"]}}`, "INVALID_ARGUMENT", "hook.headers[1]: X-Event is named twice"},
		{`{"queue":"jobs/out","hook":{"headers":["X-Event"]},"params":{"headers":{}}}`, "INVALID_ARGUMENT", "params.headers: "},
		{`{"id":"..","queue":"jobs/out","hook":{}}`, "INVALID_ARGUMENT", "id: "},
		{`{"id":".","queue":"jobs/out","hook":{}}`, "INVALID_ARGUMENT", "id: "},
		{`{"queue":"jobs/out","hook":{},"colour":1}`, "INVALID_ARGUMENT", "colour"},
		{`{"queue":"jobs/out","hook":{},"params":[1]}`, "INVALID_ARGUMENT", "params"},
		{`{"queue":"jobs/out","task":{"queue":"jobs/out","on":["done"]}}`, "INVALID_ARGUMENT", "task.on"},
		{`{"queue":"jobs/out","hook":{"signature":{"header":"X-Sig"}}}`, "INVALID_ARGUMENT", "hook.signature: a hook's own signature needs its secret"},
		{`{"queue":"jobs/out","hook":{"secret":"s-of-sixteen-chars","signature":{}}}`, "INVALID_ARGUMENT", "hook.signature.header: is required"},
		{`{"queue":"jobs/out","hook":{"secret":"s-of-sixteen-chars","signature":{"header":"X Sig"}}}`, "INVALID_ARGUMENT", "hook.signature.header: \"X Sig\" is not a header name"},
		{`{"queue":"jobs/out","hook":{"secret":"s-of-sixteen-chars","signature":{"header":"authorization"}}}`, "INVALID_ARGUMENT", "hook.signature.header: Authorization cannot hold"},
		{`{"queue":"jobs/out","hook":{"secret":"s-of-sixteen-chars","signature":{"header":"X-Sig","hash":"md5"}}}`, "INVALID_ARGUMENT", "hook.signature.hash: must be one of sha1, sha256, sha384, sha512"},
		{`{"queue":"jobs/out","hook":{"secret":"s-of-sixteen-chars","signature":{"header":"X-Sig","hash":"SHA256"}}}`, "INVALID_ARGUMENT", "hook.signature.hash: must be one of"},
		{`{"queue":"jobs/out","hook":{"secret":"s-of-sixteen-chars","signature":{"header":"X-Sig","encoding":"base32"}}}`, "INVALID_ARGUMENT", "hook.signature.encoding: must be hex or base64"},
		{`{"queue":"jobs/out","hook":{"secret":"s-of-sixteen-chars","signature":{"header":"X-Sig","prefix":"a b"}}}`, "INVALID_ARGUMENT", "hook.signature.prefix: "},
		{`{"queue":"jobs/out","hook":{"secret":"s-of-sixteen-chars","signature":{"header":"X-Sig","prefix":"` + strings.Repeat("p", 33) + `"}}}`, "INVALID_ARGUMENT", "hook.signature.prefix: at most 32"},
		{`{"queue":"jobs/out","hook":{"secret":"s-of-sixteen-chars","signature":{"header":"X-Sig","idHeader":"x-sig"}}}`, "INVALID_ARGUMENT", "hook.signature.idHeader: is the signature's header"},
		{`{"queue":"jobs/out","hook":{"secret":"s-of-sixteen-chars","signature":{"header":"X-Sig","idHeader":"Idempotency-Key"}}}`, "INVALID_ARGUMENT", "hook.signature.idHeader: Idempotency-Key cannot"},
		{`{"queue":"jobs/out","hook":{"secret":"s-of-sixteen-chars","signature":{"header":"X-Sig","algo":"sha1"}}}`, "INVALID_ARGUMENT", "hook.signature.algo"},
		{`{"queue":"jobs/default","hook":{}}`, "NO_TARGET", ""},
	} {
		r := a.do("POST", "/v1/tasks/jobs/triggers", c.body)
		r.want(t, 400, c.code)
		if !strings.HasPrefix(r.message(), c.field) {
			t.Errorf("%s: message %q does not name %s", c.body, r.message(), c.field)
		}
	}
	a.do("POST", "/v1/tasks/jobs/triggers", `{"queue":"jobs/missing","hook":{}}`).want(t, 404, "NOT_FOUND")
	a.do("POST", "/v1/tasks/jobs/triggers", `{"queue":"jobs/out","task":{"queue":"jobs/missing"}}`).want(t, 404, "NOT_FOUND")
	if l := a.do("GET", "/v1/tasks/jobs/triggers", nil).want(t, 200, "").list("triggers"); len(l) != 0 {
		t.Fatalf("refused creates left %d rules", len(l))
	}
	// A good rule, read back; a PATCH of another kind's block is refused.
	tr := a.do("POST", "/v1/tasks/jobs/triggers", `{"queue":"jobs/out","schedule":{"cron":"0 9 * * 1-5","timeZone":"Europe/Paris"},"params":{"a":1}}`).
		want(t, 201, "").obj("trigger")
	if tr["kind"] != "schedule" || tr["queue"] != "jobs/out" || tr["schedule"].(map[string]any)["nextTickAt"] == nil {
		t.Fatalf("created %v", tr)
	}
	path := "/v1/tasks/jobs/triggers/" + tr["id"].(string)
	for _, c := range []struct{ body, field string }{
		{`{"hook":{}}`, "hook"},
		{`{"task":{"queue":"jobs/out"}}`, "task"},
		{`{"schedule":{"timeZone":"Mars/Base"}}`, "schedule.timeZone"},
		{`{"schedule":{"cron":"61 * * * *"}}`, "schedule.cron"},
		{`{"queue":"other/out"}`, "queue"},
		{`{"id":"another"}`, "id"},
		{`{"params":[1]}`, "params"},
		{`{"colour":1}`, "colour"},
	} {
		a.do("PATCH", path, c.body).want(t, 400, "INVALID_ARGUMENT").names(t, c.field)
	}
	got := a.do("GET", path, nil).want(t, 200, "").obj("trigger")
	if got["schedule"].(map[string]any)["timeZone"] != "Europe/Paris" {
		t.Fatalf("refused patch changed the rule: %v", got)
	}
	off := a.do("PATCH", path, `{"enabled":false}`).want(t, 200, "").obj("trigger")
	if off["enabled"] != false || off["schedule"].(map[string]any)["nextTickAt"] != nil {
		t.Fatalf("disabled: %v", off)
	}
	// Deleting the queue deletes its rules.
	a.do("DELETE", "/v1/tasks/jobs/queues/out?confirm=true", nil).want(t, 200, "")
	a.do("GET", path, nil).want(t, 404, "NOT_FOUND")
}

// TestTaskRuleOnNamesEachItem: a task rule's task.on names each outcome
// once; a refused item is named by its place, as hook.headers[i] is, on
// create and on PATCH, and nothing is stored (audit: ["succeeded",
// "succeeded"] was taken).
func TestTaskRuleOnNamesEachItem(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.do("POST", "/v1/tasks/jobs/queues", `{"name":"out","mode":"pull"}`).want(t, 201, "")
	for _, c := range []struct{ on, want string }{
		{`["succeeded","succeeded"]`, `task.on[1]: succeeded is named twice`},
		{`["failed","succeeded","failed"]`, `task.on[2]: failed is named twice`},
		{`["failed","SUCCEEDED"]`, `task.on[1]: must be succeeded or failed, not "SUCCEEDED"`},
		{`["done"]`, `task.on[0]: must be succeeded or failed, not "done"`},
		// A long value is quoted to its first 128 bytes and its length.
		{`["` + strings.Repeat("é", 50_000) + `"]`, `task.on[0]: must be succeeded or failed, not "` + strings.Repeat("é", 64) + `"… (100000 bytes)`},
		{`[]`, `task.on: name succeeded, failed or both`},
	} {
		r := b.do("POST", "/v1/tasks/jobs/triggers", `{"queue":"jobs/out","task":{"queue":"jobs/out","on":`+c.on+`}}`).want(t, 400, "INVALID_ARGUMENT")
		if r.message() != c.want {
			t.Errorf("create with on %s: %q, want %q", c.on, r.message(), c.want)
		}
	}
	if l := b.do("GET", "/v1/tasks/jobs/triggers", nil).want(t, 200, "").list("triggers"); len(l) != 0 {
		t.Fatalf("refused creates left %d rules", len(l))
	}
	tr := b.do("POST", "/v1/tasks/jobs/triggers", `{"queue":"jobs/out","task":{"queue":"jobs/out","on":["failed"]}}`).want(t, 201, "").obj("trigger")
	path := "/v1/tasks/jobs/triggers/" + tr["id"].(string)
	r := b.do("PATCH", path, `{"task":{"on":["succeeded","failed","succeeded"]}}`).want(t, 400, "INVALID_ARGUMENT")
	if want := "task.on[2]: succeeded is named twice"; r.message() != want {
		t.Errorf("PATCH: %q, want %q", r.message(), want)
	}
	r = b.do("PATCH", path, `{"task":{"on":["`+strings.Repeat("z", 1<<20)+`"]}}`).want(t, 400, "INVALID_ARGUMENT")
	if want := `task.on[0]: must be succeeded or failed, not "` + strings.Repeat("z", 128) + `"… (1048576 bytes)`; r.message() != want {
		t.Errorf("PATCH with a 1 MiB outcome: %.200q, want %q", r.message(), want)
	}
	on := b.do("GET", path, nil).want(t, 200, "").obj("trigger")["task"].(map[string]any)["on"].([]any)
	if len(on) != 1 || on[0] != "failed" {
		t.Fatalf("a refused PATCH changed task.on: %v", on)
	}
	on = b.do("PATCH", path, `{"task":{"on":["failed","succeeded"]}}`).want(t, 200, "").obj("trigger")["task"].(map[string]any)["on"].([]any)
	if len(on) != 2 {
		t.Fatalf("both outcomes: %v", on)
	}
}

func TestHookWithoutSecret(t *testing.T) {
	s := setupServe(t)
	a := s.as(s.key("acme", "full:*"))
	a.do("POST", "/v1/instances", `{"name":"jobs"}`).want(t, 201, "")
	a.do("POST", "/v1/tasks/jobs/queues", `{"name":"out","mode":"pull"}`).want(t, 201, "")
	tr := a.do("POST", "/v1/tasks/jobs/triggers", `{"queue":"jobs/out","hook":{"headers":["X-Github-Event"]},"params":{"source":"gh"}}`).
		want(t, 201, "").obj("trigger")
	hook := tr["hook"].(map[string]any)
	path := hook["path"].(string)
	if !strings.HasPrefix(path, "/v1/hooks/jobs/hk_") || hook["hasSecret"] != false {
		t.Fatalf("hook: %v", hook)
	}
	// No API key needed: the URL is the capability.
	r := s.hookCall(path, []byte(`{"ref":"main"}`), map[string]string{"X-GitHub-Event": "push", "Idempotency-Key": "delivery-1"}).want(t, 202, "")
	taskID := r.body["id"].(string)
	got := a.do("GET", "/v1/tasks/jobs/tasks/"+taskID, nil).want(t, 200, "").obj("task")
	params, _ := json.Marshal(got["params"])
	if got["source"] != "hook" || got["name"] != tr["id"].(string)+"-delivery-1" || got["payload"].(map[string]any)["ref"] != "main" ||
		string(params) != `{"headers":{"X-Github-Event":"push"},"source":"gh"}` {
		t.Fatalf("hook task: %v", got)
	}
	// The sender's retry with the same key adds nothing.
	again := s.hookCall(path, []byte(`{"ref":"main"}`), map[string]string{"Idempotency-Key": "delivery-1"}).want(t, 202, "")
	if again.body["id"] != taskID || again.body["duplicate"] != true {
		t.Fatalf("duplicate: %s", again.raw)
	}
	// The key names the task within the rule: another rule's sender, or an
	// add of the API, with the same name is another task.
	other := a.do("POST", "/v1/tasks/jobs/triggers", `{"queue":"jobs/out","hook":{}}`).want(t, 201, "").obj("trigger")
	otherPath := other["hook"].(map[string]any)["path"].(string)
	if r := s.hookCall(otherPath, []byte(`{}`), map[string]string{"Idempotency-Key": "delivery-1"}).want(t, 202, ""); r.body["id"] == taskID || r.body["duplicate"] != false {
		t.Fatalf("another rule's call with the same key: %s", r.raw)
	}
	a.do("POST", "/v1/tasks/jobs/queues/out/tasks", `{"name":"api-named"}`).want(t, 201, "")
	if r := s.hookCall(path, []byte(`{}`), map[string]string{"Idempotency-Key": "api-named"}).want(t, 202, ""); r.body["duplicate"] != false {
		t.Fatalf("a key equal to an API task's name: %s", r.raw)
	}
	a.do("DELETE", "/v1/tasks/jobs/triggers/"+other["id"].(string), nil).want(t, 200, "")
	s.hookCall(path, nil, nil).want(t, 202, "") // an empty body: payload null
	s.hookCall(path, []byte(`{"ref":`), nil).want(t, 400, "INVALID_ARGUMENT").names(t, "body")
	s.hookCall(path, []byte(`<xml/>`), nil).want(t, 400, "INVALID_ARGUMENT").names(t, "body")
	big := []byte(`"` + strings.Repeat("x", 64<<10) + `"`)
	s.hookCall(path, big, nil).want(t, 400, "PAYLOAD_TOO_LARGE")
	s.hookCall(path, []byte(`{}`), map[string]string{"Idempotency-Key": "a key with spaces"}).want(t, 400, "INVALID_ARGUMENT").names(t, "Idempotency-Key")
	s.hookCall(strings.Replace(path, "/jobs/", "/other/", 1), []byte(`{}`), nil).want(t, 404, "NOT_FOUND")
	s.hookCall("/v1/hooks/jobs/hk_nope", []byte(`{}`), nil).want(t, 404, "NOT_FOUND")
	for _, seg := range []string{"hk_%00", "hk_%ff", "hk_" + strings.Repeat("a", 100)} {
		s.hookCall("/v1/hooks/jobs/"+seg, []byte(`{}`), nil).want(t, 404, "NOT_FOUND")
	}
	if n := len(a.do("GET", "/v1/tasks/jobs/queues/out/tasks", nil).want(t, 200, "").list("tasks")); n != 5 {
		t.Fatalf("%d tasks, want 5 (refused calls add nothing)", n)
	}
	// fired counts the tasks added: not the retry, not the refused calls.
	if got := a.do("GET", "/v1/tasks/jobs/triggers/"+tr["id"].(string), nil).want(t, 200, "").obj("trigger"); got["fired"] != 3.0 || got["errorCount"] != 0.0 {
		t.Fatalf("rule after the calls: fired %v, errorCount %v, want 3 and 0", got["fired"], got["errorCount"])
	}
	// A disabled hook answers as a missing one.
	a.do("PATCH", "/v1/tasks/jobs/triggers/"+tr["id"].(string), `{"enabled":false}`).want(t, 200, "")
	s.hookCall(path, []byte(`{}`), nil).want(t, 404, "NOT_FOUND")
	// Hook calls count against the instance's rateLimit.
	a.do("PATCH", "/v1/tasks/jobs/triggers/"+tr["id"].(string), `{"enabled":true}`).want(t, 200, "")
	a.do("PATCH", "/v1/tasks/jobs/settings", `{"rateLimit":1}`).want(t, 200, "")
	limited := false
	for range 5 {
		if r := s.hookCall(path, []byte(`{}`), nil); r.status == 429 {
			r.want(t, 429, "RATE_LIMITED")
			limited = true
			break
		}
	}
	if !limited {
		t.Fatal("hook calls past the instance's rateLimit were not limited")
	}
}

// TestHookPathNeedsWrite: a hook's path adds tasks, so only a caller with
// write on the instance sees it; a read key lists and gets the rule
// without it.
func TestHookPathNeedsWrite(t *testing.T) {
	s := setupServe(t)
	a := s.as(s.key("acme", "full:*"))
	a.do("POST", "/v1/instances", `{"name":"jobs"}`).want(t, 201, "")
	a.do("POST", "/v1/tasks/jobs/queues", `{"name":"out","mode":"pull"}`).want(t, 201, "")
	tr := a.do("POST", "/v1/tasks/jobs/triggers", `{"queue":"jobs/out","hook":{}}`).want(t, 201, "").obj("trigger")
	path := tr["hook"].(map[string]any)["path"].(string)
	for grant, want := range map[string]string{"read:jobs": "", "read:*": "", "write:jobs": path, "full:jobs": path} {
		k := s.as(s.key("acme", grant))
		got := k.do("GET", "/v1/tasks/jobs/triggers/"+tr["id"].(string), nil).want(t, 200, "").obj("trigger")["hook"].(map[string]any)
		listed := k.do("GET", "/v1/tasks/jobs/triggers", nil).want(t, 200, "").list("triggers")[0].(map[string]any)["hook"].(map[string]any)
		for what, h := range map[string]map[string]any{"get": got, "list": listed} {
			if p, _ := h["path"].(string); p != want || (want == "" && h["path"] != nil) {
				t.Errorf("%s %s: hook %v, want path %q", grant, what, h, want)
			}
		}
	}
}

// TestHookQueueWithoutTarget: a hook whose push queue lost its target (a
// PATCH is refused while the rule is enabled; an imported bundle, or a
// PATCH racing the rule's save, can leave it so) answers the sender
// NO_TARGET in words a sender can act on (the rule's owner must fix the
// queue), adds nothing, and records the refusal on the rule, where its
// owner looks.
func TestHookQueueWithoutTarget(t *testing.T) {
	s := setupServe(t)
	a := s.as(s.key("acme", "full:*"))
	a.do("POST", "/v1/instances", `{"name":"jobs"}`).want(t, 201, "")
	a.do("POST", "/v1/tasks/jobs/queues", `{"name":"out","target":{"webhook":"http://127.0.0.1:1/x"}}`).want(t, 201, "")
	tr := a.do("POST", "/v1/tasks/jobs/triggers", `{"queue":"jobs/out","hook":{}}`).want(t, 201, "").obj("trigger")
	a.do("PATCH", "/v1/tasks/jobs/queues/out", `{"target":null}`).want(t, 400, "NO_TARGET")
	s.clearTarget("acme", "jobs", "out")
	r := s.hookCall(tr["hook"].(map[string]any)["path"].(string), []byte(`{}`), nil).want(t, 400, "NO_TARGET")
	if m := r.message(); !strings.Contains(m, `the hook's queue "out" has no target`) || !strings.Contains(m, "the rule's owner") {
		t.Fatalf("message %q", m)
	}
	if n := len(a.do("GET", "/v1/tasks/jobs/queues/out/tasks", nil).want(t, 200, "").list("tasks")); n != 0 {
		t.Fatalf("%d tasks added by a refused call", n)
	}
	s.hookCall(tr["hook"].(map[string]any)["path"].(string), []byte(`{}`), nil).want(t, 400, "NO_TARGET")
	got := a.do("GET", "/v1/tasks/jobs/triggers/"+tr["id"].(string), nil).want(t, 200, "").obj("trigger")
	if got["errorCount"] != float64(2) || got["lastErrorAt"] == nil ||
		!strings.HasPrefix(got["lastError"].(string), `NO_TARGET: the hook's queue "out" has no target`) {
		t.Fatalf("the refusals were not recorded on the rule: %v", got)
	}
	// While the queue has no target its owner can still edit the rule,
	// enabled or not, and disable it; enabling it again, or naming the
	// queue, is refused.
	path := "/v1/tasks/jobs/triggers/" + tr["id"].(string)
	a.do("PATCH", path, `{"params":{"a":0}}`).want(t, 200, "")
	a.do("PATCH", path, `{"enabled":false}`).want(t, 200, "")
	a.do("PATCH", path, `{"params":{"a":1}}`).want(t, 200, "")
	a.do("PATCH", path, `{"enabled":true}`).want(t, 400, "NO_TARGET")
	a.do("PATCH", path, `{"queue":"jobs/out"}`).want(t, 400, "NO_TARGET")
	// A task rule is checked when a PATCH names the queue it watches too.
	a.do("POST", "/v1/tasks/jobs/queues", `{"name":"src","mode":"pull"}`).want(t, 201, "")
	a.do("PATCH", "/v1/tasks/jobs/queues/out", `{"target":{"webhook":"http://127.0.0.1:1/x"}}`).want(t, 200, "")
	chain := a.do("POST", "/v1/tasks/jobs/triggers", `{"queue":"jobs/out","task":{"queue":"jobs/src"}}`).want(t, 201, "").obj("trigger")
	a.do("PATCH", "/v1/tasks/jobs/queues/out", `{"target":null}`).want(t, 400, "NO_TARGET")
	s.clearTarget("acme", "jobs", "out")
	chainPath := "/v1/tasks/jobs/triggers/" + chain["id"].(string)
	a.do("PATCH", chainPath, `{"params":{"a":1}}`).want(t, 200, "")
	a.do("PATCH", chainPath, `{"task":{"queue":"jobs/src"}}`).want(t, 400, "NO_TARGET")
}

func TestHookWithSecret(t *testing.T) {
	s := setupServe(t)
	a := s.as(s.key("acme", "full:*"))
	a.do("POST", "/v1/instances", `{"name":"jobs"}`).want(t, 201, "")
	a.do("POST", "/v1/tasks/jobs/queues", `{"name":"out","mode":"pull"}`).want(t, 201, "")
	secret := id.WebhookKey()
	tr := a.do("POST", "/v1/tasks/jobs/triggers", `{"queue":"jobs/out","hook":{"secret":"`+secret+`"}}`).want(t, 201, "").obj("trigger")
	if h := tr["hook"].(map[string]any); h["hasSecret"] != true || strings.Contains(string(mustJSON(tr)), secret) {
		t.Fatalf("secret shown or missing: %v", tr)
	}
	path := tr["hook"].(map[string]any)["path"].(string)
	body := []byte(`{"order":42}`)
	signed := func(msgID string, at time.Time, key string, b []byte) map[string]string {
		ts := at.Unix()
		sig, ok := deliver.SignStandard(key, msgID, ts, b)
		if !ok {
			t.Fatal("sign")
		}
		return map[string]string{"webhook-id": msgID, "webhook-timestamp": strconv.FormatInt(ts, 10), "webhook-signature": "v1,bm90IGl0 " + sig}
	}
	now := s.clock.Now()
	s.hookCall(path, body, nil).want(t, 401, "UNAUTHENTICATED")
	s.hookCall(path, body, signed("msg_1", now, id.WebhookKey(), body)).want(t, 401, "UNAUTHENTICATED")
	s.hookCall(path, []byte(`{"order":43}`), signed("msg_1", now, secret, body)).want(t, 401, "UNAUTHENTICATED")
	r := s.hookCall(path, body, signed("msg_1", now, secret, body)).want(t, 202, "")
	// The same message again within the window (a replay, or the sender's
	// retry): the same task, nothing added.
	again := s.hookCall(path, body, signed("msg_1", now.Add(time.Minute), secret, body)).want(t, 202, "")
	if again.body["id"] != r.body["id"] || again.body["duplicate"] != true {
		t.Fatalf("replay in the window: %s vs %s", again.raw, r.raw)
	}
	// A signature older than 5 minutes is refused, however valid.
	s.clock.Advance(6 * time.Minute)
	s.hookCall(path, body, signed("msg_2", now, secret, body)).want(t, 401, "UNAUTHENTICATED")
	s.hookCall(path, body, signed("msg_2", s.clock.Now(), secret, body)).want(t, 202, "")
	// A webhook-id that is no task name (a ':') still names the message.
	odd := s.hookCall(path, body, signed("msg:6", s.clock.Now(), secret, body)).want(t, 202, "")
	if again := s.hookCall(path, body, signed("msg:6", s.clock.Now(), secret, body)).want(t, 202, ""); again.body["id"] != odd.body["id"] || again.body["duplicate"] != true {
		t.Fatalf("the same message msg:6 twice: %s vs %s", again.raw, odd.raw)
	}
	if n := len(a.do("GET", "/v1/tasks/jobs/queues/out/tasks", nil).want(t, 200, "").list("tasks")); n != 3 {
		t.Fatalf("%d tasks, want 3", n)
	}
	// Protocol headers sent twice are read by their first value: a second
	// signature line or a repeated timestamp does not spoil a valid one.
	req, _ := http.NewRequest("POST", s.srv.URL+path, bytes.NewReader(body))
	for k, v := range signed("msg_7", s.clock.Now(), secret, body) {
		req.Header.Add(k, v)
		req.Header.Add(k, map[string]string{"webhook-signature": "v1,bm90IGl0", "webhook-timestamp": v, "webhook-id": v}[k])
	}
	s.send(req).want(t, 202, "")
	// The secret can be removed: then no signature is needed.
	a.do("PATCH", "/v1/tasks/jobs/triggers/"+tr["id"].(string), `{"hook":{"secret":null}}`).want(t, 200, "")
	s.hookCall(path, body, nil).want(t, 202, "")
}

func mustJSON(v any) []byte { b, _ := json.Marshal(v); return b }

// clearTarget removes queue's target in the store, past the engine's
// checks: the state an imported bundle can leave.
func (s *served) clearTarget(org, instance, queue string) {
	s.t.Helper()
	ctx := context.Background()
	inst, err := s.st.InstanceGet(ctx, store.InstanceRef{Org: org, Name: instance})
	if err != nil {
		s.t.Fatal(err)
	}
	if _, err := s.st.QueueUpdate(ctx, store.QueueRef{InstanceID: inst.ID, Name: queue}, func(q *task.Queue) error {
		q.Target = nil
		return nil
	}); err != nil {
		s.t.Fatal(err)
	}
}

// TestHookCopiesEveryValueOfARepeatedHeader: a header sent twice reaches
// the task's params.headers with both values, joined as HTTP joins them.
func TestHookCopiesEveryValueOfARepeatedHeader(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.do("POST", "/v1/tasks/jobs/queues", `{"name":"out","mode":"pull"}`).want(t, 201, "")
	path := b.do("POST", "/v1/tasks/jobs/triggers", `{"queue":"jobs/out","hook":{"headers":["X-Event"]}}`).
		want(t, 201, "").obj("trigger")["hook"].(map[string]any)["path"].(string)
	req := b.request("POST", path, `{}`)
	req.Header.Add("X-Event", "push")
	req.Header.Add("X-Event", "second")
	// A repeated Idempotency-Key is read by its first value, as before.
	req.Header.Add("Idempotency-Key", "k1")
	req.Header.Add("Idempotency-Key", "k1")
	id := b.send(req).want(t, 202, "").body["id"].(string)
	params, _ := json.Marshal(b.do("GET", "/v1/tasks/jobs/tasks/"+id, nil).want(t, 200, "").obj("task")["params"])
	if string(params) != `{"headers":{"X-Event":"push, second"}}` {
		t.Fatalf("params %s", params)
	}
}

// TestHookReadsForms: a hook called with an HTML form's body (Slack's slash
// commands, Twilio) adds a task whose payload is the form's fields; the
// signature of a signed hook is over the bytes sent; JSON labelled a form
// (curl -d) is still JSON; a body that is neither is refused and adds
// nothing.
func TestHookReadsForms(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.do("POST", "/v1/tasks/jobs/queues", `{"name":"out","mode":"pull"}`).want(t, 201, "")
	secret := id.WebhookKey()
	path := b.hookRule(t, secret)
	call := func(body, contentType string) res {
		t.Helper()
		ts := b.clock.Now().Unix()
		msgID := fmt.Sprintf("msg_%d", len(body))
		sig, _ := deliver.SignStandard(secret, msgID, ts, []byte(body))
		return b.hookCall(path, []byte(body), map[string]string{"Content-Type": contentType,
			"webhook-id": msgID, "webhook-timestamp": strconv.FormatInt(ts, 10), "webhook-signature": sig})
	}
	payload := func(r res) string {
		t.Helper()
		p, _ := json.Marshal(b.do("GET", "/v1/tasks/jobs/tasks/"+r.body["id"].(string), nil).want(t, 200, "").obj("task")["payload"])
		return string(p)
	}
	slash := "command=%2Fdeploy&text=api+v2&user_name=ada&channel_id=C1&tag=a&tag=b"
	if got := payload(call(slash, "application/x-www-form-urlencoded").want(t, 202, "")); got != `{"channel_id":["C1"],"command":["/deploy"],"tag":["a","b"],"text":["api v2"],"user_name":["ada"]}` {
		t.Fatalf("form payload %s", got)
	}
	if got := payload(call(`{"order":42}`, "application/x-www-form-urlencoded").want(t, 202, "")); got != `{"order":42}` {
		t.Fatalf("JSON labelled a form: payload %s", got)
	}
	call("order=42", "text/plain").want(t, 400, "INVALID_ARGUMENT").names(t, "body")
	call("order=%zz", "application/x-www-form-urlencoded").want(t, 400, "INVALID_ARGUMENT").names(t, "body")
	call("q="+strings.Repeat("%01", 20000), "application/x-www-form-urlencoded").want(t, 400, "PAYLOAD_TOO_LARGE").names(t, "body")
	if n := len(b.do("GET", "/v1/tasks/jobs/queues/out/tasks", nil).want(t, 200, "").list("tasks")); n != 2 {
		t.Fatalf("%d tasks, want 2 (refused calls add nothing)", n)
	}
}

// TestHookGitHubAndStripeSignatures: a hook with a secret takes GitHub's
// X-Hub-Signature-256 (the secret string given to GitHub; X-GitHub-Delivery
// names the task, so a redelivery adds nothing) and Stripe's
// Stripe-Signature (the endpoint's whsec_ secret given to errand; its time
// within 5 minutes), besides Standard Webhooks (under Svix's header names
// too); a wrong, stale or malformed one is 401 and adds nothing.
func TestHookGitHubAndStripeSignatures(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.do("POST", "/v1/tasks/jobs/queues", `{"name":"out","mode":"pull"}`).want(t, 201, "")
	// A Stripe endpoint secret: whsec_ and 32 characters.
	secret := "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	path := b.hookRule(t, secret)
	body := []byte(`{"action":"opened","number":7}`)
	gh := func(sig, delivery string) res {
		t.Helper()
		return b.hookCall(path, body, map[string]string{"X-GitHub-Event": "pull_request", "X-GitHub-Delivery": delivery, "X-Hub-Signature-256": sig})
	}
	first := gh(deliver.SignGitHub(secret, body), "72d3162e-cc78-11e3-81ab-4c9367dc0958").want(t, 202, "")
	if again := gh("sha256="+strings.ToUpper(deliver.SignGitHub(secret, body)[7:]), "72d3162e-cc78-11e3-81ab-4c9367dc0958").want(t, 202, ""); again.body["id"] != first.body["id"] || again.body["duplicate"] != true {
		t.Fatalf("GitHub's redelivery: %s, first %s", again.raw, first.raw)
	}
	gh(deliver.SignGitHub(id.WebhookKey(), body), "d-2").want(t, 401, "UNAUTHENTICATED")
	gh(strings.TrimPrefix(deliver.SignGitHub(secret, body), "sha256="), "d-3").want(t, 401, "UNAUTHENTICATED")
	if r := b.hookCall(path, []byte(`{"action":"closed"}`), map[string]string{"X-Hub-Signature-256": deliver.SignGitHub(secret, body)}); r.status != 401 {
		t.Fatalf("GitHub's signature of another body: %d %s", r.status, r.raw)
	}

	stripe := func(sig string) res {
		t.Helper()
		return b.hookCall(path, body, map[string]string{"Stripe-Signature": sig})
	}
	now := b.clock.Now().Unix()
	stripe(deliver.SignStripe(secret, now, body)+",v0=6ffbb59b2300aae63f272406069a9788598b792a944a07aba816edb039989a39").want(t, 202, "")
	// Stripe sends several v1 while it rolls a secret: any one may match.
	stripe(fmt.Sprintf("t=%d,v1=00ff,%s", now, strings.TrimPrefix(deliver.SignStripe(secret, now, body), fmt.Sprintf("t=%d,", now)))).want(t, 202, "")
	stripe(deliver.SignStripe(secret, now-6*60, body)).want(t, 401, "UNAUTHENTICATED")
	stripe(deliver.SignStripe(id.WebhookKey(), now, body)).want(t, 401, "UNAUTHENTICATED")
	stripe(deliver.SignStripe(secret, now+1, body)[len("t=")+11:]).want(t, 401, "UNAUTHENTICATED") // no t
	stripe(fmt.Sprintf("t=%d", now)).want(t, 401, "UNAUTHENTICATED")                               // no v1
	// Svix's own header names stand for Standard Webhooks'.
	sv, _ := deliver.SignStandard(secret, "msg_svix", now, body)
	b.hookCall(path, body, map[string]string{"svix-id": "msg_svix", "svix-timestamp": strconv.FormatInt(now, 10), "svix-signature": sv}).want(t, 202, "")
	b.hookCall(path, body, map[string]string{"svix-id": "msg_svix2", "svix-timestamp": strconv.FormatInt(now, 10), "svix-signature": sv}).want(t, 401, "UNAUTHENTICATED")
	// No signature at all names the three forms.
	r := b.hookCall(path, body, nil).want(t, 401, "UNAUTHENTICATED")
	if msg := r.body["error"].(map[string]any)["message"].(string); !strings.Contains(msg, "X-Hub-Signature-256") || !strings.Contains(msg, "Stripe-Signature") {
		t.Fatalf("unsigned call: %s", msg)
	}
	if n := len(b.do("GET", "/v1/tasks/jobs/queues/out/tasks", nil).want(t, 200, "").list("tasks")); n != 4 {
		t.Fatalf("%d tasks, want 4 (one GitHub delivery, two Stripe events, one Svix message)", n)
	}
}

// TestHookSlackSignatureAndPlainSecret: a hook's secret may be a string a
// sender issued (Slack's signing secret) or was given (GitHub's): it checks
// Slack's X-Slack-Signature over a form body (a slash command), answers
// Slack's signed url_verification with its challenge (adding nothing), and
// checks GitHub's signature, but not Standard Webhooks', whose key must be
// whsec_.
func TestHookSlackSignatureAndPlainSecret(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.do("POST", "/v1/tasks/jobs/queues", `{"name":"out","mode":"pull"}`).want(t, 201, "")
	b.do("POST", "/v1/tasks/jobs/triggers", `{"queue":"jobs/out","hook":{"secret":"too short"}}`).want(t, 400, "INVALID_ARGUMENT").names(t, "hook.secret")
	secret := "8f742231b10e8888abcd99yyyzzz85a5"
	path := b.hookRule(t, secret)
	body := []byte("command=%2Fdeploy&text=api&user_id=U2147483697")
	now := b.clock.Now().Unix()
	slack := func(ts int64, sig string) res {
		t.Helper()
		return b.hookCall(path, body, map[string]string{"Content-Type": "application/x-www-form-urlencoded",
			"X-Slack-Request-Timestamp": strconv.FormatInt(ts, 10), "X-Slack-Signature": sig})
	}
	// A slash command is answered with the bare 200 Slack takes as
	// success (any other answer shows its user an error; a body would be
	// posted as a message), and added.
	if r := slack(now, deliver.SignSlack(secret, now, body)).want(t, 200, ""); len(r.raw) != 0 {
		t.Fatalf("a slash command answered %q, want no body", r.raw)
	}
	added := b.do("GET", "/v1/tasks/jobs/queues/out/tasks", nil).want(t, 200, "").list("tasks")
	if len(added) != 1 {
		t.Fatalf("%d tasks after the slash command, want 1", len(added))
	}
	p, _ := json.Marshal(b.do("GET", "/v1/tasks/jobs/tasks/"+added[0].(map[string]any)["id"].(string), nil).want(t, 200, "").obj("task")["payload"])
	if string(p) != `{"command":["/deploy"],"text":["api"],"user_id":["U2147483697"]}` {
		t.Fatalf("slash command payload %s", p)
	}
	slack(now-6*60, deliver.SignSlack(secret, now-6*60, body)).want(t, 401, "UNAUTHENTICATED")
	slack(now, deliver.SignSlack(secret, now+1, body)).want(t, 401, "UNAUTHENTICATED")
	slack(now, deliver.SignSlack("8f742231b10e8888abcd99yyyzzz85a6", now, body)).want(t, 401, "UNAUTHENTICATED")
	slack(now, strings.TrimPrefix(deliver.SignSlack(secret, now, body), "v0=")).want(t, 401, "UNAUTHENTICATED")
	b.hookCall(path, body, map[string]string{"X-Slack-Signature": deliver.SignSlack(secret, now, body)}).want(t, 401, "UNAUTHENTICATED") // no timestamp

	// Slack's url_verification, signed: the challenge is echoed, nothing is
	// added; unsigned or signed wrongly it is refused.
	challenge := []byte(`{"token":"Jhj5dZrVaK7ZwHHjRyZWjbDl","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P","type":"url_verification"}`)
	verify := b.hookCall(path, challenge, map[string]string{"Content-Type": "application/json",
		"X-Slack-Request-Timestamp": strconv.FormatInt(now, 10), "X-Slack-Signature": deliver.SignSlack(secret, now, challenge)}).want(t, 200, "")
	if string(verify.raw) != `{"challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"}`+"\n" {
		t.Fatalf("url_verification answered %q", verify.raw)
	}
	b.hookCall(path, challenge, map[string]string{"X-Slack-Request-Timestamp": strconv.FormatInt(now, 10),
		"X-Slack-Signature": deliver.SignSlack(secret, now, body)}).want(t, 401, "UNAUTHENTICATED")
	b.hookCall(path, challenge, nil).want(t, 401, "UNAUTHENTICATED")

	b.hookCall(path, []byte(`{}`), map[string]string{"X-Hub-Signature-256": deliver.SignGitHub(secret, []byte(`{}`))}).want(t, 202, "")
	// Standard Webhooks needs a whsec_ key: the refusal says so.
	std := b.hookCall(path, []byte(`{}`), map[string]string{"webhook-id": "m1", "webhook-timestamp": strconv.FormatInt(now, 10), "webhook-signature": "v1,AAAA"}).
		want(t, 401, "UNAUTHENTICATED")
	if msg := std.body["error"].(map[string]any)["message"].(string); !strings.Contains(msg, "not a whsec_ key") {
		t.Fatalf("a Standard Webhooks call to a hook with a plain secret: %s", msg)
	}
	if n := len(b.do("GET", "/v1/tasks/jobs/queues/out/tasks", nil).want(t, 200, "").list("tasks")); n != 2 {
		t.Fatalf("%d tasks, want 2", n)
	}
}

// TestHookStripeAndSlackEventsNameTheirTasks: Stripe and Slack carry an
// event's id in the body, not a header; a call signed by either names its
// task by it, so Stripe's redelivery of an event (signed anew, minutes or
// days later) and Slack's retry of an Events API callback add nothing
// twice, while another event, or a body with no event id, adds its own.
// An Idempotency-Key still wins.
func TestHookStripeAndSlackEventsNameTheirTasks(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.do("POST", "/v1/tasks/jobs/queues", `{"name":"out","mode":"pull"}`).want(t, 201, "")
	secret := "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	rule := b.do("POST", "/v1/tasks/jobs/triggers", `{"queue":"jobs/out","hook":{"secret":"`+secret+`"}}`).want(t, 201, "").obj("trigger")
	path, ruleID := rule["hook"].(map[string]any)["path"].(string), rule["id"].(string)
	stripe := func(body string, extra map[string]string) res {
		t.Helper()
		now := b.clock.Now().Unix()
		h := map[string]string{"Stripe-Signature": deliver.SignStripe(secret, now, []byte(body))}
		for k, v := range extra {
			h[k] = v
		}
		return b.hookCall(path, []byte(body), h)
	}
	name := func(id string) string {
		t.Helper()
		n, _ := b.do("GET", "/v1/tasks/jobs/tasks/"+id, nil).want(t, 200, "").obj("task")["name"].(string)
		return n
	}
	event := `{"id":"evt_1NG8Du2eZvKYlo2CUI79vXWy","object":"event","type":"invoice.paid","data":{"object":{"id":"in_1"}}}`
	first := stripe(event, nil).want(t, 202, "")
	if n := name(first.body["id"].(string)); n != ruleID+"-evt_1NG8Du2eZvKYlo2CUI79vXWy" {
		t.Fatalf("a Stripe event's task is named %q", n)
	}
	b.clock.Advance(time.Hour) // Stripe redelivers with a new signature
	if again := stripe(event, nil).want(t, 202, ""); again.body["id"] != first.body["id"] || again.body["duplicate"] != true {
		t.Fatalf("Stripe's redelivery: %s, first %s", again.raw, first.raw)
	}
	stripe(`{"id":"evt_2","object":"event","type":"invoice.paid"}`, nil).want(t, 202, "")
	unnamed := stripe(`{"id":"in_1","object":"invoice"}`, nil).want(t, 202, "")
	if n := name(unnamed.body["id"].(string)); n != "" {
		t.Fatalf("a Stripe body that is not an event named its task %q", n)
	}
	keyed := stripe(event, map[string]string{"Idempotency-Key": "k-1"}).want(t, 202, "")
	if n := name(keyed.body["id"].(string)); n != ruleID+"-k-1" {
		t.Fatalf("an Idempotency-Key beside the event id named the task %q", n)
	}

	// Slack: an Events API callback's event_id; its retry (X-Slack-Retry-Num)
	// is a duplicate.
	slackKey := "8f742231b10e8888abcd99yyyzzz85a5"
	spath := b.hookRule(t, slackKey)
	slack := func(body string, extra map[string]string) res {
		t.Helper()
		now := b.clock.Now().Unix()
		h := map[string]string{"Content-Type": "application/json", "X-Slack-Request-Timestamp": strconv.FormatInt(now, 10),
			"X-Slack-Signature": deliver.SignSlack(slackKey, now, []byte(body))}
		for k, v := range extra {
			h[k] = v
		}
		return b.hookCall(spath, []byte(body), h)
	}
	cb := `{"type":"event_callback","team_id":"T1","event_id":"Ev08MFMKH6","event":{"type":"app_mention","text":"hi"}}`
	s1 := slack(cb, nil).want(t, 202, "")
	b.clock.Advance(time.Minute)
	if s2 := slack(cb, map[string]string{"X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_timeout"}).want(t, 202, ""); s2.body["id"] != s1.body["id"] || s2.body["duplicate"] != true {
		t.Fatalf("Slack's retry: %s, first %s", s2.raw, s1.raw)
	}
	slack(`{"type":"event_callback","event_id":"Ev08MFMKH7","event":{"type":"app_mention"}}`, nil).want(t, 202, "")
	// The same event id unsigned by Slack's form (GitHub's) names nothing.
	gh := b.hookCall(spath, []byte(cb), map[string]string{"X-Hub-Signature-256": deliver.SignGitHub(slackKey, []byte(cb))}).want(t, 202, "")
	if gh.body["duplicate"] == true {
		t.Fatalf("a GitHub-signed call was named by a Slack event id: %s", gh.raw)
	}
	if n := len(b.do("GET", "/v1/tasks/jobs/queues/out/tasks", nil).want(t, 200, "").list("tasks")); n != 7 {
		t.Fatalf("%d tasks, want 7 (three Stripe events, one Stripe invoice, two Slack events, one GitHub call)", n)
	}
}

// TestHookTwilioSignature: a hook whose secret is a Twilio auth token takes
// X-Twilio-Signature, the HMAC-SHA1 of the URL Twilio called and a form's
// fields (or, for a JSON body, of the URL carrying the body's SHA-256): the
// URL as the node saw it, or as a proxy in front was called (Host,
// X-Forwarded-Host, the default port given or not); Twilio's
// I-Twilio-Idempotency-Token names the task. A signature of another URL,
// another body or another token is 401 and adds nothing.
func TestHookTwilioSignature(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.do("POST", "/v1/tasks/jobs/queues", `{"name":"out","mode":"pull"}`).want(t, 201, "")
	token := "9b1f6c2e0d8a4f3b7c5e1a2d3f4b6c8e" // an auth token: 32 hex digits
	path := b.hookRule(t, token)
	sms := url.Values{"MessageSid": {"SM123"}, "From": {"+14158675309"}, "To": {"+18005551212"}, "Body": {"STOP now"}}
	call := func(uri, host string, body []byte, header map[string]string) res {
		t.Helper()
		req, _ := http.NewRequest("POST", b.srv.URL+uri, bytes.NewReader(body))
		if host != "" {
			req.Host = host
		}
		for k, v := range header {
			req.Header.Set(k, v)
		}
		return b.send(req)
	}
	form := func(signedURL, host string, extra map[string]string) res {
		t.Helper()
		h := map[string]string{"Content-Type": "application/x-www-form-urlencoded", "X-Twilio-Signature": deliver.SignTwilio(token, signedURL, sms)}
		for k, v := range extra {
			h[k] = v
		}
		return call(path, host, []byte(sms.Encode()), h)
	}
	first := form(b.srv.URL+path, "", map[string]string{"I-Twilio-Idempotency-Token": "a1b2c3d4-0001"}).want(t, 202, "")
	got := b.do("GET", "/v1/tasks/jobs/tasks/"+first.body["id"].(string), nil).want(t, 200, "").obj("task")
	if p, _ := json.Marshal(got["payload"]); string(p) != `{"Body":["STOP now"],"From":["+14158675309"],"MessageSid":["SM123"],"To":["+18005551212"]}` {
		t.Fatalf("Twilio's form became %s", p)
	}
	if again := form(b.srv.URL+path, "", map[string]string{"I-Twilio-Idempotency-Token": "a1b2c3d4-0001"}).want(t, 202, ""); again.body["id"] != first.body["id"] || again.body["duplicate"] != true {
		t.Fatalf("Twilio's retry: %s, first %s", again.raw, first.raw)
	}
	// Behind a proxy: Twilio called the public URL.
	form("https://hooks.example.com"+path, "hooks.example.com", nil).want(t, 202, "")
	form("https://hooks.example.com:443"+path, "hooks.example.com", nil).want(t, 202, "")
	form("https://public.example.com"+path, "", map[string]string{"X-Forwarded-Host": "public.example.com", "X-Forwarded-Proto": "https"}).want(t, 202, "")
	// Another URL, another token, another body: refused.
	form("https://evil.example.com"+path, "hooks.example.com", nil).want(t, 401, "UNAUTHENTICATED")
	call(path, "", []byte(sms.Encode()), map[string]string{"Content-Type": "application/x-www-form-urlencoded",
		"X-Twilio-Signature": deliver.SignTwilio("0000000000000000000000000000000a", b.srv.URL+path, sms)}).want(t, 401, "UNAUTHENTICATED")
	call(path, "", []byte(sms.Encode()+"&Extra=1"), map[string]string{"Content-Type": "application/x-www-form-urlencoded",
		"X-Twilio-Signature": deliver.SignTwilio(token, b.srv.URL+path, sms)}).want(t, 401, "UNAUTHENTICATED")

	// A JSON body: the URL carries its SHA-256, and the URL alone is signed.
	body := []byte(`{"property": "value", "boolean": true}`)
	sum := sha256.Sum256(body)
	jpath := path + "?bodySHA256=" + hex.EncodeToString(sum[:])
	jsonCall := func(b2 []byte) res {
		t.Helper()
		return call(jpath, "", b2, map[string]string{"Content-Type": "application/json", "X-Twilio-Signature": deliver.SignTwilio(token, b.srv.URL+jpath, nil)})
	}
	jsonCall(body).want(t, 202, "")
	jsonCall([]byte(`{"property": "other", "boolean": true}`)).want(t, 401, "UNAUTHENTICATED")
	r := call(path, "", body, map[string]string{"X-Twilio-Signature": deliver.SignTwilio(token, b.srv.URL+path, nil)}).want(t, 401, "UNAUTHENTICATED")
	if msg := r.body["error"].(map[string]any)["message"].(string); !strings.Contains(msg, "X-Twilio-Signature") {
		t.Fatalf("a JSON call without bodySHA256: %s", msg)
	}
	if n := len(b.do("GET", "/v1/tasks/jobs/queues/out/tasks", nil).want(t, 200, "").list("tasks")); n != 5 {
		t.Fatalf("%d tasks, want 5 (one retried form, three through proxies, one JSON)", n)
	}
}

// TestHookShopifySignature: a hook whose secret is a Shopify app's client
// secret takes X-Shopify-Hmac-Sha256 (the base64 HMAC-SHA256 of the body),
// and X-Shopify-Webhook-Id names the task, so Shopify's retry of a webhook
// adds nothing; another body or secret is 401 and adds nothing.
func TestHookShopifySignature(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.do("POST", "/v1/tasks/jobs/queues", `{"name":"out","mode":"pull"}`).want(t, 201, "")
	secret := "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"
	path := b.do("POST", "/v1/tasks/jobs/triggers", `{"queue":"jobs/out","hook":{"secret":"`+secret+`","headers":["X-Shopify-Topic"]}}`).
		want(t, 201, "").obj("trigger")["hook"].(map[string]any)["path"].(string)
	body := []byte(`{"id":820982911946154508,"email":"jon@example.com","total_price":"25.00"}`)
	shop := func(sig, id string, b2 []byte) res {
		t.Helper()
		return b.hookCall(path, b2, map[string]string{"Content-Type": "application/json", "X-Shopify-Topic": "orders/create",
			"X-Shopify-Hmac-Sha256": sig, "X-Shopify-Webhook-Id": id})
	}
	first := shop(deliver.SignShopify(secret, body), "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043", body).want(t, 202, "")
	got := b.do("GET", "/v1/tasks/jobs/tasks/"+first.body["id"].(string), nil).want(t, 200, "").obj("task")
	if p, _ := json.Marshal(got["params"]); string(p) != `{"headers":{"X-Shopify-Topic":"orders/create"}}` {
		t.Fatalf("params %s", p)
	}
	if again := shop(deliver.SignShopify(secret, body), "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043", body).want(t, 202, ""); again.body["id"] != first.body["id"] || again.body["duplicate"] != true {
		t.Fatalf("Shopify's retry: %s, first %s", again.raw, first.raw)
	}
	shop(deliver.SignShopify(secret, body), "w-2", []byte(`{"id":1}`)).want(t, 401, "UNAUTHENTICATED")
	shop(deliver.SignShopify("shpss_00000000000000000000000000000000", body), "w-3", body).want(t, 401, "UNAUTHENTICATED")
	shop(strings.ToLower(deliver.SignShopify(secret, body)), "w-4", body).want(t, 401, "UNAUTHENTICATED")
	if n := len(b.do("GET", "/v1/tasks/jobs/queues/out/tasks", nil).want(t, 200, "").list("tasks")); n != 1 {
		t.Fatalf("%d tasks, want 1", n)
	}
}

// TestHookBodySignatures: the senders that sign the body alone (the HMAC of
// the body keyed with the whole secret, in a header of their own), each
// computed here from its sender's description: a call is 202, its delivery
// id (when the sender sends one, or Typeform's event_id in the body) names
// the task so a retry is a duplicate, and a signature with another secret
// is 401.
func TestHookBodySignatures(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.do("POST", "/v1/tasks/jobs/queues", `{"name":"out","mode":"pull"}`).want(t, 201, "")
	secret := "a-sender-secret-of-some-length"
	path := b.hookRule(t, secret)
	mac := func(key string, h func() hash.Hash, body []byte) []byte {
		m := hmac.New(h, []byte(key))
		m.Write(body)
		return m.Sum(nil)
	}
	b64 := func(p []byte) string { return base64.StdEncoding.EncodeToString(p) }
	added := 0
	for _, c := range []struct {
		name, header, idHeader string
		sign                   func(key string, body []byte) string
		body                   string // the sender's own body, whose id names the task; else one without
	}{
		{"WooCommerce", "X-WC-Webhook-Signature", "X-WC-Webhook-Delivery-ID", func(k string, b []byte) string { return b64(mac(k, sha256.New, b)) }, ""},
		{"Linear", "Linear-Signature", "Linear-Delivery", func(k string, b []byte) string { return hex.EncodeToString(mac(k, sha256.New, b)) }, ""},
		{"Sentry", "Sentry-Hook-Signature", "", func(k string, b []byte) string { return hex.EncodeToString(mac(k, sha256.New, b)) }, ""},
		{"Typeform", "Typeform-Signature", "", func(k string, b []byte) string { return "sha256=" + b64(mac(k, sha256.New, b)) },
			`{"event_id":"01HM3K8N2P9X","event_type":"form_response","form_response":{"form_id":"abc"}}`},
		{"Intercom (X-Hub-Signature)", "X-Hub-Signature", "", func(k string, b []byte) string { return "sha1=" + hex.EncodeToString(mac(k, sha1.New, b)) }, ""},
		{"Jira (X-Hub-Signature, SHA-256)", "X-Hub-Signature", "X-Atlassian-Webhook-Identifier", func(k string, b []byte) string { return "sha256=" + hex.EncodeToString(mac(k, sha256.New, b)) }, ""},
		{"WebSub's SHA-512", "X-Hub-Signature", "", func(k string, b []byte) string { return "SHA512=" + hex.EncodeToString(mac(k, sha512.New, b)) }, ""},
		{"Forgejo", "X-Forgejo-Signature", "X-Forgejo-Delivery", func(k string, b []byte) string { return hex.EncodeToString(mac(k, sha256.New, b)) }, ""},
		{"Gitea", "X-Gitea-Signature", "X-Gitea-Delivery", func(k string, b []byte) string { return hex.EncodeToString(mac(k, sha256.New, b)) }, ""},
		{"Gogs", "X-Gogs-Signature", "X-Gogs-Delivery", func(k string, b []byte) string { return hex.EncodeToString(mac(k, sha256.New, b)) }, ""},
		{"Todoist", "X-Todoist-Hmac-SHA256", "X-Todoist-Delivery-ID", func(k string, b []byte) string { return b64(mac(k, sha256.New, b)) }, ""},
		{"Razorpay", "X-Razorpay-Signature", "X-Razorpay-Event-Id", func(k string, b []byte) string { return hex.EncodeToString(mac(k, sha256.New, b)) }, ""},
		{"Cal.com", "X-Cal-Signature-256", "", func(k string, b []byte) string { return hex.EncodeToString(mac(k, sha256.New, b)) }, ""},
		{"Coinbase Commerce", "X-CC-Webhook-Signature", "", func(k string, b []byte) string { return hex.EncodeToString(mac(k, sha256.New, b)) }, ""},
		{"Vercel", "X-Vercel-Signature", "", func(k string, b []byte) string { return hex.EncodeToString(mac(k, sha1.New, b)) }, ""},
		{"Notion", "X-Notion-Signature", "", func(k string, b []byte) string { return "sha256=" + hex.EncodeToString(mac(k, sha256.New, b)) }, ""},
		{"ClickUp (X-Signature)", "X-Signature", "", func(k string, b []byte) string { return hex.EncodeToString(mac(k, sha256.New, b)) }, ""},
		{"Segment (X-Signature, SHA-1)", "X-Signature", "", func(k string, b []byte) string { return hex.EncodeToString(mac(k, sha1.New, b)) },
			`{"type":"track","event":"Order Completed","messageId":"ajs-next-5ad1b0c1","userId":"u1","properties":{}}`},
		{"Segment without a messageId", "X-Signature", "", func(k string, b []byte) string { return hex.EncodeToString(mac(k, sha1.New, b)) }, ""},
		{"PagerDuty, two secrets", "X-PagerDuty-Signature", "", func(k string, b []byte) string {
			return "v1=" + hex.EncodeToString(mac("a-retired-secret-of-some-length", sha256.New, b)) + ", v1=" + hex.EncodeToString(mac(k, sha256.New, b))
		}, `{"event":{"id":"01DEN5D5WM7UPBANQJ0EVLWQ0D","event_type":"incident.triggered","resource_type":"incident","data":{}}}`},
	} {
		body := []byte(`{"sender":"` + c.name + `"}`)
		if c.body != "" {
			body = []byte(c.body)
		}
		named := c.idHeader != "" || c.body != ""
		h := map[string]string{c.header: c.sign(secret, body)}
		if c.idHeader != "" {
			h[c.idHeader] = "delivery-of-" + strings.ToLower(c.idHeader) // one for each sender
		}
		first := b.hookCall(path, body, h).want(t, 202, "")
		added++
		again := b.hookCall(path, body, h).want(t, 202, "")
		if dup := again.body["duplicate"] == true; dup != named {
			t.Errorf("%s: a second call duplicate=%v (%s, first %s)", c.name, dup, again.raw, first.raw)
		}
		if !named {
			added++
		}
		b.hookCall(path, body, map[string]string{c.header: c.sign("another-secret-of-some-length", body)}).want(t, 401, "UNAUTHENTICATED")
	}
	if n := len(b.do("GET", "/v1/tasks/jobs/queues/out/tasks", nil).want(t, 200, "").list("tasks")); n != added {
		t.Fatalf("%d tasks, want %d", n, added)
	}
}

// TestHookWebSubMethod: an X-Hub-Signature whose method is none of
// WebSub's (sha1, sha256, sha384, sha512), or which has none, is refused
// saying the form; an HMAC-SHA256 sent as sha1 does not match.
func TestHookWebSubMethod(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.do("POST", "/v1/tasks/jobs/queues", `{"name":"out","mode":"pull"}`).want(t, 201, "")
	secret := "a-sender-secret-of-some-length"
	path := b.hookRule(t, secret)
	body := []byte(`{"webhookEvent":"jira:issue_created"}`)
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	digest := hex.EncodeToString(m.Sum(nil))
	for _, sig := range []string{"md5=" + digest, digest} {
		r := b.hookCall(path, body, map[string]string{"X-Hub-Signature": sig}).want(t, 401, "UNAUTHENTICATED")
		if msg := r.message(); !strings.Contains(msg, `X-Hub-Signature must be "<method>=<hex digest>"`) {
			t.Errorf("%s: %q", sig, msg)
		}
	}
	r := b.hookCall(path, body, map[string]string{"X-Hub-Signature": "sha1=" + digest}).want(t, 401, "UNAUTHENTICATED")
	if msg := r.message(); !strings.Contains(msg, "X-Hub-Signature does not match this hook's secret") {
		t.Errorf("sha1 given SHA-256's digest: %q", msg)
	}
	b.hookCall(path, body, map[string]string{"X-Hub-Signature": "sha256=" + digest}).want(t, 202, "")
}

// TestHookGitLabToken: GitLab's X-Gitlab-Token carries the secret token
// itself: the hook's secret is taken, another refused; GitLab's
// Idempotency-Key names the task, so its retry adds nothing; and a call
// GitLab also signs with a signing token (Standard Webhooks headers, to a
// hook whose secret is the whsec_ key) is read as a Standard Webhooks one.
func TestHookGitLabToken(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.do("POST", "/v1/tasks/jobs/queues", `{"name":"out","mode":"pull"}`).want(t, 201, "")
	secret := "gitlab-secret-token-0123"
	path := b.hookRule(t, secret)
	body := []byte(`{"object_kind":"push","ref":"refs/heads/main"}`)
	h := map[string]string{"X-Gitlab-Token": secret, "X-Gitlab-Event": "Push Hook", "Idempotency-Key": "f0c2ef3b-8bd9-4ab0-a5b9-5e1d8b2f6c11"}
	first := b.hookCall(path, body, h).want(t, 202, "")
	again := b.hookCall(path, body, h).want(t, 202, "")
	if again.body["duplicate"] != true || again.body["id"] != first.body["id"] {
		t.Fatalf("GitLab's retry: %s (first %s)", again.raw, first.raw)
	}
	for _, token := range []string{"gitlab-secret-token-0124", strings.ToUpper(secret), secret[:len(secret)-1], ""} {
		r := b.hookCall(path, body, map[string]string{"X-Gitlab-Token": token, "X-Gitlab-Event": "Push Hook"})
		if token == "" {
			r.want(t, 401, "UNAUTHENTICATED") // no sender's header at all
			continue
		}
		if msg := r.want(t, 401, "UNAUTHENTICATED").message(); !strings.Contains(msg, "X-Gitlab-Token is not this hook's secret") {
			t.Errorf("token %q: %q", token, msg)
		}
	}

	key := "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	signed := b.hookRule(t, key)
	ts := b.clock.Now().Unix()
	sig, ok := deliver.SignStandard(key, "msg-gitlab-1", ts, body)
	if !ok {
		t.Fatal("sign")
	}
	b.hookCall(signed, body, map[string]string{"X-Gitlab-Token": "not-the-key-at-all", "webhook-id": "msg-gitlab-1",
		"webhook-timestamp": strconv.FormatInt(ts, 10), "webhook-signature": sig}).want(t, 202, "")
}

// TestHookZoom: a hook whose secret is a Zoom app's secret token takes
// x-zm-signature (Slack's scheme under Zoom's names, the timestamp within 5
// minutes) and answers Zoom's signed endpoint.url_validation with the plain
// token and its HMAC, adding nothing; unsigned or stale, it is refused.
func TestHookZoom(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.do("POST", "/v1/tasks/jobs/queues", `{"name":"out","mode":"pull"}`).want(t, 201, "")
	secret := "qgg8vlvZRS6UYooatFL8Aw2x"
	path := b.hookRule(t, secret)
	now := b.clock.Now().Unix()
	zoom := func(ts int64, key string, body string) res {
		t.Helper()
		m := hmac.New(sha256.New, []byte(key))
		m.Write([]byte("v0:" + strconv.FormatInt(ts, 10) + ":" + body))
		return b.hookCall(path, []byte(body), map[string]string{"Content-Type": "application/json",
			"x-zm-request-timestamp": strconv.FormatInt(ts, 10), "x-zm-signature": "v0=" + hex.EncodeToString(m.Sum(nil))})
	}
	event := `{"event":"meeting.ended","event_ts":1626230691572,"payload":{"object":{"id":"85012345678"}}}`
	first := zoom(now, secret, event).want(t, 202, "")
	// Zoom's retry of a notification (the same body, signed anew) adds
	// nothing; another event (another event_ts) adds its task.
	if again := zoom(now-90, secret, event).want(t, 202, ""); again.body["duplicate"] != true || again.body["id"] != first.body["id"] {
		t.Fatalf("Zoom's retry: %s (first %s)", again.raw, first.raw)
	}
	zoom(now, secret, strings.Replace(event, "1626230691572", "1626230691573", 1)).want(t, 202, "")
	zoom(now-6*60, secret, event).want(t, 401, "UNAUTHENTICATED")
	zoom(now, "another-secret-token-xx", event).want(t, 401, "UNAUTHENTICATED")

	check := `{"payload":{"plainToken":"qgg8vlvZRS6UYooatFL8Aw"},"event_ts":1654503849680,"event":"endpoint.url_validation"}`
	r := zoom(now, secret, check).want(t, 200, "")
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("qgg8vlvZRS6UYooatFL8Aw"))
	if r.body["plainToken"] != "qgg8vlvZRS6UYooatFL8Aw" || r.body["encryptedToken"] != hex.EncodeToString(m.Sum(nil)) {
		t.Fatalf("url_validation answered %s", r.raw)
	}
	b.hookCall(path, []byte(check), nil).want(t, 401, "UNAUTHENTICATED")
	zoom(now, "another-secret-token-xx", check).want(t, 401, "UNAUTHENTICATED")
	if n := len(b.do("GET", "/v1/tasks/jobs/queues/out/tasks", nil).want(t, 200, "").list("tasks")); n != 2 {
		t.Fatalf("%d tasks, want 2 (the two events; the retry and the validation add nothing)", n)
	}
}

// TestHookCalendly: Calendly signs as Stripe does, under
// Calendly-Webhook-Signature (t=<seconds>,v1=<hex HMAC-SHA256 of
// "<t>.<body>">, the webhook signing key): accepted within 5 minutes,
// refused stale, malformed or with another key.
func TestHookCalendly(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.do("POST", "/v1/tasks/jobs/queues", `{"name":"out","mode":"pull"}`).want(t, 201, "")
	key := "calendly-signing-key-0123456789"
	path := b.hookRule(t, key)
	body := []byte(`{"event":"invitee.created","payload":{"email":"ada@example.com"}}`)
	now := b.clock.Now().Unix()
	sign := func(k string, ts int64) string {
		m := hmac.New(sha256.New, []byte(k))
		m.Write([]byte(strconv.FormatInt(ts, 10) + "." + string(body)))
		return "t=" + strconv.FormatInt(ts, 10) + ",v1=" + hex.EncodeToString(m.Sum(nil))
	}
	call := func(sig string) res {
		t.Helper()
		return b.hookCall(path, body, map[string]string{"Calendly-Webhook-Signature": sig})
	}
	first := call(sign(key, now)).want(t, 202, "")
	call(sign(key, now-6*60)).want(t, 401, "UNAUTHENTICATED")
	call(sign("another-signing-key-0123456789", now)).want(t, 401, "UNAUTHENTICATED")
	r := call("v1=00").want(t, 401, "UNAUTHENTICATED")
	if msg := r.body["error"].(map[string]any)["message"].(string); !strings.HasPrefix(msg, "Calendly-Webhook-Signature must be t=") {
		t.Fatalf("a malformed signature: %s", msg)
	}
	// Calendly's retry: the same body, signed anew, adds nothing.
	if again := call(sign(key, now-60)).want(t, 202, ""); again.body["duplicate"] != true || again.body["id"] != first.body["id"] {
		t.Fatalf("Calendly's retry: %s (first %s)", again.raw, first.raw)
	}
	if n := len(b.do("GET", "/v1/tasks/jobs/queues/out/tasks", nil).want(t, 200, "").list("tasks")); n != 1 {
		t.Fatalf("%d tasks, want 1", n)
	}
}

// TestHookPaddle: Paddle signs with Paddle-Signature, ts=<seconds>;h1=<hex
// HMAC-SHA256 of "<ts>:<body>"> keyed with the destination's secret key
// (any of several h1 may match); the notification's event_id names the
// task, so Paddle's retry adds nothing; stale, malformed or another key's
// signatures are refused.
func TestHookPaddle(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.do("POST", "/v1/tasks/jobs/queues", `{"name":"out","mode":"pull"}`).want(t, 201, "")
	key := "pdl_ntfset_01gkpjp8bkm3tm53kdgkx6sms7_6h3qd3uFSi9YCD3OLYAShQI90XTI5vEI"
	path := b.hookRule(t, key)
	body := `{"event_id":"evt_01h8bzakzx3hm2fmen703n5q45","event_type":"transaction.completed","occurred_at":"2026-12-05T20:00:00Z","notification_id":"ntf_01h8bzam1z32agrxjwhjgqk8w6","data":{"id":"txn_1"}}`
	sign := func(k string, ts int64) string {
		m := hmac.New(sha256.New, []byte(k))
		m.Write([]byte(strconv.FormatInt(ts, 10) + ":" + body))
		return "ts=" + strconv.FormatInt(ts, 10) + ";h1=" + hex.EncodeToString(m.Sum(nil))
	}
	now := b.clock.Now().Unix()
	call := func(sig string) res {
		t.Helper()
		return b.hookCall(path, []byte(body), map[string]string{"Paddle-Signature": sig})
	}
	first := call(sign(key, now)).want(t, 202, "")
	if again := call(sign(key, now+30)+";h1=00ff").want(t, 202, ""); again.body["id"] != first.body["id"] || again.body["duplicate"] != true {
		t.Fatalf("Paddle's retry: %s, first %s", again.raw, first.raw)
	}
	call(sign(key, now-6*60)).want(t, 401, "UNAUTHENTICATED")
	call(sign("pdl_ntfset_another_key_0123456789", now)).want(t, 401, "UNAUTHENTICATED")
	r := call("h1=00").want(t, 401, "UNAUTHENTICATED")
	if msg := r.body["error"].(map[string]any)["message"].(string); !strings.HasPrefix(msg, "Paddle-Signature must be ts=") {
		t.Fatalf("a malformed signature: %s", msg)
	}
	if n := len(b.do("GET", "/v1/tasks/jobs/queues/out/tasks", nil).want(t, 200, "").list("tasks")); n != 1 {
		t.Fatalf("%d tasks, want 1", n)
	}
}

// TestHookSendGrid: a hook whose secret is SendGrid's verification key (a
// public key, base64 of its DER) takes SendGrid's signed Event Webhook —
// an ECDSA signature of the timestamp and the body, signed here as
// SendGrid signs — names its task by the batch's sg_event_ids, so a retry
// adds nothing, and refuses one signed with another key.
func TestHookSendGrid(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.do("POST", "/v1/tasks/jobs/queues", `{"name":"out","mode":"pull"}`).want(t, 201, "")
	priv, other := mustECDSA(t), mustECDSA(t)
	der, err := x509.MarshalPKIXPublicKey(&priv.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	path := b.hookRule(t, base64.StdEncoding.EncodeToString(der))
	body := []byte(`[{"email":"a@example.com","event":"delivered","sg_event_id":"ZGVsaXZlcmVk","timestamp":1790000000}]`)
	sign := func(k *ecdsa.PrivateKey) map[string]string {
		ts := strconv.FormatInt(b.clock.Now().Unix(), 10)
		sum := sha256.Sum256(append([]byte(ts), body...))
		sig, err := ecdsa.SignASN1(rand.Reader, k, sum[:])
		if err != nil {
			t.Fatal(err)
		}
		return map[string]string{"X-Twilio-Email-Event-Webhook-Signature": base64.StdEncoding.EncodeToString(sig),
			"X-Twilio-Email-Event-Webhook-Timestamp": ts}
	}
	first := b.hookCall(path, body, sign(priv)).want(t, 202, "")
	// SendGrid's retry of the batch, signed anew: the same events, the
	// first call's task.
	if again := b.hookCall(path, body, sign(priv)).want(t, 202, ""); again.body["id"] != first.body["id"] || again.body["duplicate"] != true {
		t.Fatalf("SendGrid's retry: %s, first %s", again.raw, first.raw)
	}
	b.hookCall(path, body, sign(other)).want(t, 401, "UNAUTHENTICATED")
	if n := len(b.do("GET", "/v1/tasks/jobs/queues/out/tasks", nil).want(t, 200, "").list("tasks")); n != 1 {
		t.Fatalf("%d tasks, want 1", n)
	}
}

// mustECDSA makes a P-256 key, as SendGrid's.
func mustECDSA(t *testing.T) *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestHookHubSpot: a hook whose secret is a HubSpot app's client secret
// takes X-HubSpot-Signature-v3 — the base64 HMAC-SHA256 of "POST", the URL
// HubSpot called, the body and X-HubSpot-Request-Timestamp (milliseconds)
// — as the node saw the URL or as a proxy in front was called, with the
// reserved characters HubSpot decodes escaped or not; another URL, secret
// or body, or a timestamp more than 5 minutes off, is 401 and adds nothing.
func TestHookHubSpot(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.do("POST", "/v1/tasks/jobs/queues", `{"name":"out","mode":"pull"}`).want(t, 201, "")
	secret := "yyyyyyyy-yyyy-yyyy-yyyy-yyyyyyyyyyyy" // a client secret, as HubSpot's own examples write it
	path := b.hookRule(t, secret)
	// events is a batch of HubSpot's events with these ids, at its
	// attemptNumber.
	events := func(attempt int, ids ...int) []byte {
		var evs []string
		for _, id := range ids {
			evs = append(evs, fmt.Sprintf(`{"eventId":%d,"subscriptionId":12345,"portalId":62515,"occurredAt":1564113600000,"subscriptionType":"contact.creation","attemptNumber":%d,"objectId":123}`, id, attempt))
		}
		return []byte("[" + strings.Join(evs, ",") + "]")
	}
	body := events(0, 1)
	// The signature as HubSpot's documentation computes it, written here
	// without deliver.SignHubSpot, which the check uses.
	sign := func(key, u string, b2 []byte, ms int64) string {
		m := hmac.New(sha256.New, []byte(key))
		m.Write([]byte("POST" + u + string(b2) + strconv.FormatInt(ms, 10)))
		return base64.StdEncoding.EncodeToString(m.Sum(nil))
	}
	now := b.clock.Now().UnixMilli()
	call := func(uri, host string, b2 []byte, sig string, ms int64, extra map[string]string) res {
		t.Helper()
		req, _ := http.NewRequest("POST", b.srv.URL+uri, bytes.NewReader(b2))
		if host != "" {
			req.Host = host
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-HubSpot-Signature-v3", sig)
		req.Header.Set("X-HubSpot-Request-Timestamp", strconv.FormatInt(ms, 10))
		for k, v := range extra {
			req.Header.Set(k, v)
		}
		return b.send(req)
	}
	if got := deliver.SignHubSpot(secret, b.srv.URL+path, body, now); got != sign(secret, b.srv.URL+path, body, now) {
		t.Fatalf("SignHubSpot %s, HubSpot's %s", got, sign(secret, b.srv.URL+path, body, now))
	}
	first := call(path, "", body, sign(secret, b.srv.URL+path, body, now), now, nil).want(t, 202, "")
	got := b.do("GET", "/v1/tasks/jobs/tasks/"+first.body["id"].(string), nil).want(t, 200, "").obj("task")
	var want any
	_ = json.Unmarshal(body, &want)
	if !reflect.DeepEqual(got["payload"], want) {
		t.Fatalf("HubSpot's events became %v", got["payload"])
	}
	// Behind a proxy: HubSpot called the public URL; a query's reserved
	// characters escaped in the call are signed decoded.
	b2, b3, b4 := events(0, 2, 3), events(0, 4), events(0, 5)
	call(path, "hooks.example.com", b2, sign(secret, "https://hooks.example.com"+path, b2, now), now, nil).want(t, 202, "")
	call(path, "", b3, sign(secret, "https://public.example.com"+path, b3, now), now,
		map[string]string{"X-Forwarded-Host": "public.example.com", "X-Forwarded-Proto": "https"}).want(t, 202, "")
	call(path+"?portal=62515%3Acrm", "", b4, sign(secret, b.srv.URL+path+"?portal=62515:crm", b4, now), now, nil).want(t, 202, "")
	// HubSpot's retry of a batch, signed anew with its attemptNumber
	// raised and its events in another order, is the same events: the
	// task of the first call, nothing added.
	retry := events(1, 3, 2)
	if r := call(path, "", retry, sign(secret, b.srv.URL+path, retry, now), now, nil).want(t, 202, ""); r.body["duplicate"] != true {
		t.Fatalf("HubSpot's retry of a batch: %s", r.raw)
	}
	// Refused: another URL, secret or body; a stale or future timestamp;
	// a timestamp in seconds.
	call(path, "hooks.example.com", body, sign(secret, "https://evil.example.com"+path, body, now), now, nil).want(t, 401, "UNAUTHENTICATED")
	call(path, "", body, sign("zzzzzzzz-zzzz-zzzz-zzzz-zzzzzzzzzzzz", b.srv.URL+path, body, now), now, nil).want(t, 401, "UNAUTHENTICATED")
	call(path, "", []byte(`[]`), sign(secret, b.srv.URL+path, body, now), now, nil).want(t, 401, "UNAUTHENTICATED")
	for _, ms := range []int64{now - 6*60_000, now + 6*60_000, now / 1000} {
		r := call(path, "", body, sign(secret, b.srv.URL+path, body, ms), ms, nil).want(t, 401, "UNAUTHENTICATED")
		if msg := r.body["error"].(map[string]any)["message"].(string); !strings.Contains(msg, "X-HubSpot-Request-Timestamp") {
			t.Fatalf("a timestamp %d off: %s", ms-now, msg)
		}
	}
	if n := len(b.do("GET", "/v1/tasks/jobs/queues/out/tasks", nil).want(t, 200, "").list("tasks")); n != 4 {
		t.Fatalf("%d tasks, want 4 (one direct, two through proxies, one with an escaped query)", n)
	}
}

// TestHookMailgun: a hook whose secret is Mailgun's HTTP webhook signing
// key takes the signature Mailgun puts in the body (JSON, or a form's
// fields): the hex HMAC-SHA256 of the timestamp and the token, or a
// subaccount's parent-signature. The token names the task, since the
// signature does not cover the event: the same call again, or a replay of
// its signature with another event, adds nothing. Another key, a stale
// timestamp or a changed token is 401.
func TestHookMailgun(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.do("POST", "/v1/tasks/jobs/queues", `{"name":"out","mode":"pull"}`).want(t, 201, "")
	key := "key-3ax6xnjp29jd6fds4gc373sgvjxteol0"
	path := b.hookRule(t, key)
	// Signed as Mailgun's documentation describes, without the engine's code.
	sign := func(k, ts, token string) string {
		m := hmac.New(sha256.New, []byte(k))
		m.Write([]byte(ts + token))
		return hex.EncodeToString(m.Sum(nil))
	}
	ts := strconv.FormatInt(b.clock.Now().Unix(), 10)
	event := func(sig, parent, ts, token, id string) []byte {
		s := map[string]string{"timestamp": ts, "token": token, "signature": sig}
		if parent != "" {
			s["parent-signature"] = parent
		}
		body, _ := json.Marshal(map[string]any{"signature": s, "event-data": map[string]any{"event": "delivered", "id": id, "recipient": "a@example.com"}})
		return body
	}
	json1 := map[string]string{"Content-Type": "application/json"}
	token := "a8ce0edb2dd8301dee6c2405235584e45aa91d1e9f979f3de0"
	first := b.hookCall(path, event(sign(key, ts, token), "", ts, token, "CPgfbmQMTCKtHW6uIWtuVe"), json1).want(t, 202, "")
	got := b.do("GET", "/v1/tasks/jobs/tasks/"+first.body["id"].(string), nil).want(t, 200, "").obj("task")
	if ed, _ := got["payload"].(map[string]any)["event-data"].(map[string]any); ed["id"] != "CPgfbmQMTCKtHW6uIWtuVe" {
		t.Fatalf("Mailgun's event became %v", got["payload"])
	}
	for _, again := range [][]byte{
		event(sign(key, ts, token), "", ts, token, "CPgfbmQMTCKtHW6uIWtuVe"), // the same call
		event(sign(key, ts, token), "", ts, token, "forged-event"),           // its signature on another event
	} {
		if r := b.hookCall(path, again, json1).want(t, 202, ""); r.body["id"] != first.body["id"] || r.body["duplicate"] != true {
			t.Fatalf("a call with a signature seen before: %s, first %s", r.raw, first.raw)
		}
	}
	// A subaccount's call, matched by its parent-signature; a form's fields.
	t2 := "b9df1fec3ee9412eef7d3516346695f56bb02e2f0a8a4e4ef1"
	b.hookCall(path, event(sign("key-subaccount-own-key-0000000", ts, t2), sign(key, ts, t2), ts, t2, "sub-1"), json1).want(t, 202, "")
	t3 := "c0e02a0df4ffa523ff8e462745778a06cc13f3f1b9b5f5f0f2"
	form := url.Values{"timestamp": {ts}, "token": {t3}, "signature": {sign(key, ts, t3)}, "event": {"delivered"}}
	b.hookCall(path, []byte(form.Encode()), map[string]string{"Content-Type": "application/x-www-form-urlencoded"}).want(t, 202, "")
	// Refused: another key, a stale timestamp, a changed token, a body
	// without a signature.
	t4 := "d1f13b1e05aab634009f573856889b17dd24f4f2cac6a6a1a3"
	b.hookCall(path, event(sign("key-not-this-hooks-key-00000000", ts, t4), "", ts, t4, "x"), json1).want(t, 401, "UNAUTHENTICATED")
	stale := strconv.FormatInt(b.clock.Now().Add(-6*time.Minute).Unix(), 10)
	r := b.hookCall(path, event(sign(key, stale, t4), "", stale, t4, "x"), json1).want(t, 401, "UNAUTHENTICATED")
	if msg := r.body["error"].(map[string]any)["message"].(string); !strings.Contains(msg, "Mailgun's signature.timestamp") {
		t.Fatalf("a stale Mailgun call: %s", msg)
	}
	b.hookCall(path, event(sign(key, ts, t4), "", ts, t4+"0", "x"), json1).want(t, 401, "UNAUTHENTICATED")
	r = b.hookCall(path, []byte(`{"event-data":{"event":"delivered"}}`), json1).want(t, 401, "UNAUTHENTICATED")
	if msg := r.body["error"].(map[string]any)["message"].(string); !strings.Contains(msg, "Mailgun's signature in the body") {
		t.Fatalf("an unsigned call: %s", msg)
	}
	if n := len(b.do("GET", "/v1/tasks/jobs/queues/out/tasks", nil).want(t, 200, "").list("tasks")); n != 3 {
		t.Fatalf("%d tasks, want 3 (one event, one subaccount's, one form)", n)
	}
}

// TestHookOwnSignature: a hook rule's own signature scheme (header, hash,
// encoding, prefix, id header) checks its calls alone — a sender's header
// errand reads by name is not read then —, its id header names the task,
// and null removes the scheme (the rule then reads the senders again).
func TestHookOwnSignature(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.do("POST", "/v1/tasks/jobs/queues", `{"name":"out","mode":"pull"}`).want(t, 201, "")
	secret := "acme-shared-secret-123"
	tr := b.do("POST", "/v1/tasks/jobs/triggers", `{"queue":"jobs/out","hook":{"secret":"`+secret+`",
		"signature":{"header":"x-acme-signature","hash":"sha512","encoding":"base64","prefix":"v1=","idHeader":"x-acme-delivery"}}}`).
		want(t, 201, "").obj("trigger")
	hook := tr["hook"].(map[string]any)
	if got, _ := json.Marshal(hook["signature"]); string(got) != `{"encoding":"base64","hash":"sha512","header":"X-Acme-Signature","idHeader":"X-Acme-Delivery","prefix":"v1="}` {
		t.Fatalf("signature shown as %s", got)
	}
	path := hook["path"].(string)
	body := []byte(`{"order":42}`)
	mac := func(key string, h func() hash.Hash) []byte {
		m := hmac.New(h, []byte(key))
		m.Write(body)
		return m.Sum(nil)
	}
	good := base64.StdEncoding.EncodeToString(mac(secret, sha512.New))
	first := b.hookCall(path, body, map[string]string{"X-Acme-Signature": "v1=" + good, "X-Acme-Delivery": "d-1"}).want(t, 202, "")
	// The URL alphabet, no padding, the prefix in another case; the same
	// delivery id: the same task.
	again := b.hookCall(path, body, map[string]string{"X-Acme-Signature": "V1=" + base64.RawURLEncoding.EncodeToString(mac(secret, sha512.New)), "X-Acme-Delivery": "d-1"}).want(t, 202, "")
	if again.body["duplicate"] != true || again.body["id"] != first.body["id"] {
		t.Fatalf("a redelivery: %s (first %s)", again.raw, first.raw)
	}
	for name, h := range map[string]map[string]string{
		"no signature":       {"X-Acme-Delivery": "d-2"},
		"no prefix":          {"X-Acme-Signature": good},
		"another secret":     {"X-Acme-Signature": "v1=" + base64.StdEncoding.EncodeToString(mac("another-secret-123456", sha512.New))},
		"another hash":       {"X-Acme-Signature": "v1=" + base64.StdEncoding.EncodeToString(mac(secret, sha256.New))},
		"hex, not base64":    {"X-Acme-Signature": "v1=" + hex.EncodeToString(mac(secret, sha512.New))},
		"GitHub's, not ours": {"X-Hub-Signature-256": "sha256=" + hex.EncodeToString(mac(secret, sha256.New))},
	} {
		r := b.hookCall(path, body, h)
		r.want(t, 401, "UNAUTHENTICATED")
		if !strings.Contains(r.message(), "X-Acme-Signature") {
			t.Errorf("%s: the refusal does not name the header: %s", name, r.message())
		}
	}
	// Without an id header each call adds a task; hex in either case.
	rule := "/v1/tasks/jobs/triggers/" + tr["id"].(string)
	b.do("PATCH", rule, `{"hook":{"signature":{"header":"X-Acme-Signature"}}}`).want(t, 200, "")
	sig := strings.ToUpper(hex.EncodeToString(mac(secret, sha256.New)))
	b.hookCall(path, body, map[string]string{"X-Acme-Signature": sig}).want(t, 202, "")
	if r := b.hookCall(path, body, map[string]string{"X-Acme-Signature": sig}).want(t, 202, ""); r.body["duplicate"] == true {
		t.Fatalf("no id header, yet a duplicate: %s", r.raw)
	}
	// Removing the secret alone is refused (the scheme needs it); null
	// removes the scheme, and GitHub's signature is read again.
	b.do("PATCH", rule, `{"hook":{"secret":null}}`).want(t, 400, "INVALID_ARGUMENT").names(t, "hook.secret")
	got := b.do("PATCH", rule, `{"hook":{"signature":null}}`).want(t, 200, "").obj("trigger")["hook"].(map[string]any)
	if got["signature"] != nil || got["hasSecret"] != true {
		t.Fatalf("after null: %v", got)
	}
	b.hookCall(path, body, map[string]string{"X-Hub-Signature-256": "sha256=" + hex.EncodeToString(mac(secret, sha256.New))}).want(t, 202, "")
	b.hookCall(path, body, map[string]string{"X-Acme-Signature": sig}).want(t, 401, "UNAUTHENTICATED")
	if n := len(b.do("GET", "/v1/tasks/jobs/queues/out/tasks", nil).want(t, 200, "").list("tasks")); n != 4 {
		t.Fatalf("%d tasks, want 4", n)
	}
	// A disabled hook may hold a scheme without its secret (as an import
	// makes it); enabling it so is refused, naming enabled.
	waiting := b.do("POST", "/v1/tasks/jobs/triggers", `{"queue":"jobs/out","enabled":false,"hook":{"signature":{"header":"X-Acme-Signature"}}}`).
		want(t, 201, "").obj("trigger")["id"].(string)
	b.do("PATCH", "/v1/tasks/jobs/triggers/"+waiting, `{"enabled":true}`).want(t, 400, "INVALID_ARGUMENT").names(t, "enabled")
}

// TestHookOwnSignatureTimed: a hook's own scheme that signs the call's
// time: a timestamp header (seconds or milliseconds, within 5 minutes of
// the node's clock) and the signed content's template ("v0:{timestamp}:
// {body}", the default "{timestamp}.{body}", "{id}.{timestamp}.{body}");
// a stale or missing time, or a signature of the body alone, is 401; each
// bad template is refused naming hook.signature.signed.
func TestHookOwnSignatureTimed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.do("POST", "/v1/tasks/jobs/queues", `{"name":"out","mode":"pull"}`).want(t, 201, "")
	secret := "acme-shared-secret-123"
	tr := b.do("POST", "/v1/tasks/jobs/triggers", `{"queue":"jobs/out","hook":{"secret":"`+secret+`",
		"signature":{"header":"X-Acme-Signature","prefix":"v0=","timestampHeader":"x-acme-request-timestamp","signed":"v0:{timestamp}:{body}"}}}`).
		want(t, 201, "").obj("trigger")
	hook := tr["hook"].(map[string]any)
	if got, _ := json.Marshal(hook["signature"]); string(got) != `{"encoding":"hex","hash":"sha256","header":"X-Acme-Signature","prefix":"v0=","signed":"v0:{timestamp}:{body}","timestampHeader":"X-Acme-Request-Timestamp"}` {
		t.Fatalf("signature shown as %s", got)
	}
	path := hook["path"].(string)
	body := []byte(`{"order":42}`)
	mac := func(content string) string {
		m := hmac.New(sha256.New, []byte(secret))
		m.Write([]byte(content))
		return hex.EncodeToString(m.Sum(nil))
	}
	now := b.clock.Now()
	ts := strconv.FormatInt(now.Unix(), 10)
	b.hookCall(path, body, map[string]string{"X-Acme-Signature": "v0=" + mac("v0:"+ts+":"+string(body)), "X-Acme-Request-Timestamp": ts}).want(t, 202, "")
	ms := strconv.FormatInt(now.Add(-4*time.Minute).UnixMilli(), 10) // milliseconds, 4 minutes old
	b.hookCall(path, body, map[string]string{"X-Acme-Signature": "v0=" + mac("v0:"+ms+":"+string(body)), "X-Acme-Request-Timestamp": ms}).want(t, 202, "")
	stale := strconv.FormatInt(now.Add(-6*time.Minute).Unix(), 10)
	ahead := strconv.FormatInt(now.Add(6*time.Minute).Unix(), 10)
	for name, c := range map[string]struct {
		h    map[string]string
		want string
	}{
		"stale":            {map[string]string{"X-Acme-Signature": "v0=" + mac("v0:"+stale+":"+string(body)), "X-Acme-Request-Timestamp": stale}, "X-Acme-Request-Timestamp is more than 5 minutes from now"},
		"ahead":            {map[string]string{"X-Acme-Signature": "v0=" + mac("v0:"+ahead+":"+string(body)), "X-Acme-Request-Timestamp": ahead}, "more than 5 minutes from now"},
		"no time":          {map[string]string{"X-Acme-Signature": "v0=" + mac("v0::"+string(body))}, "covers the time in X-Acme-Request-Timestamp: send it"},
		"not a number":     {map[string]string{"X-Acme-Signature": "v0=" + mac("v0:x:"+string(body)), "X-Acme-Request-Timestamp": "x"}, "must be Unix seconds or milliseconds"},
		"the body alone":   {map[string]string{"X-Acme-Signature": "v0=" + mac(string(body)), "X-Acme-Request-Timestamp": ts}, "does not match"},
		"another time":     {map[string]string{"X-Acme-Signature": "v0=" + mac("v0:"+ts+":"+string(body)), "X-Acme-Request-Timestamp": strconv.FormatInt(now.Unix()-1, 10)}, "does not match"},
		"another template": {map[string]string{"X-Acme-Signature": "v0=" + mac(ts+"."+string(body)), "X-Acme-Request-Timestamp": ts}, "does not match"},
	} {
		r := b.hookCall(path, body, c.h).want(t, 401, "UNAUTHENTICATED")
		if !strings.Contains(r.message(), c.want) {
			t.Errorf("%s: %s; want %q", name, r.message(), c.want)
		}
	}
	// The default template with a timestamp header; an id in the signed
	// content, which also names the task.
	rule := "/v1/tasks/jobs/triggers/" + tr["id"].(string)
	got := b.do("PATCH", rule, `{"hook":{"signature":{"header":"X-Acme-Signature","timestampHeader":"X-Acme-Time"}}}`).want(t, 200, "").obj("trigger")["hook"].(map[string]any)
	if s := got["signature"].(map[string]any); s["signed"] != "{timestamp}.{body}" {
		t.Fatalf("the default template shown as %v", s)
	}
	b.hookCall(path, body, map[string]string{"X-Acme-Signature": mac(ts + "." + string(body)), "X-Acme-Time": ts}).want(t, 202, "")
	b.do("PATCH", rule, `{"hook":{"signature":{"header":"X-Acme-Signature","timestampHeader":"X-Acme-Time","idHeader":"X-Acme-Id","signed":"{id}.{timestamp}.{body}"}}}`).want(t, 200, "")
	h := map[string]string{"X-Acme-Signature": mac("m-1." + ts + "." + string(body)), "X-Acme-Time": ts, "X-Acme-Id": "m-1"}
	first := b.hookCall(path, body, h).want(t, 202, "")
	if again := b.hookCall(path, body, h).want(t, 202, ""); again.body["duplicate"] != true || again.body["id"] != first.body["id"] {
		t.Fatalf("a redelivery: %s", again.raw)
	}
	h["X-Acme-Id"] = "m-2" // another id, the signature of the first
	b.hookCall(path, body, h).want(t, 401, "UNAUTHENTICATED")
	// An id holding the separator after {id} is refused: else the form
	// a=1.5&b=2 with id "m-1" would sign as the form 5&b=2 with id
	// "m-1.a=1", its first characters moved from the body into the id.
	b.do("PATCH", rule, `{"hook":{"signature":{"header":"X-Acme-Signature","idHeader":"X-Acme-Id","signed":"{id}.{body}"}}}`).want(t, 200, "")
	form := "application/x-www-form-urlencoded"
	signedByTheSender := mac("m-1.a=1.5&b=2")
	b.hookCall(path, []byte("a=1.5&b=2"), map[string]string{"X-Acme-Signature": signedByTheSender, "X-Acme-Id": "m-1", "Content-Type": form}).want(t, 202, "")
	r := b.hookCall(path, []byte("5&b=2"), map[string]string{"X-Acme-Signature": signedByTheSender, "X-Acme-Id": "m-1.a=1", "Content-Type": form}).want(t, 401, "UNAUTHENTICATED")
	if !strings.Contains(r.message(), `X-Acme-Id holds ".", which follows the id in this hook's signed content`) {
		t.Fatalf("an id holding the separator: %s", r.message())
	}
	// Without a timestamp header a template may sign the id and the body;
	// "{body}" alone is the default, left out of answers.
	got = b.do("PATCH", rule, `{"hook":{"signature":{"header":"X-Acme-Signature","signed":"{body}"}}}`).want(t, 200, "").obj("trigger")["hook"].(map[string]any)
	if s := got["signature"].(map[string]any); s["signed"] != nil || s["timestampHeader"] != nil {
		t.Fatalf("a template of the body alone shown as %v", s)
	}
	for _, c := range []struct{ sig, msg string }{
		{`{"header":"X-A","signed":"{timestamp}.{body}"}`, "set hook.signature.timestampHeader"},
		{`{"header":"X-A","signed":"{id}.{body}"}`, "set hook.signature.idHeader"},
		{`{"header":"X-A","timestampHeader":"X-T","signed":"{body}.{timestamp}"}`, "must end with {body}"},
		{`{"header":"X-A","signed":"{body}{body}"}`, "must end with {body}, once"},
		{`{"header":"X-A","timestampHeader":"X-T","signed":"{timestamp}{timestamp}{body}"}`, "holds {timestamp} more than once"},
		{`{"header":"X-A","timestampHeader":"X-T","signed":"{timestamp},{body}"}`, "without spaces, commas or braces"},
		{`{"header":"X-A","timestampHeader":"X-T","signed":"{timestamp} {body}"}`, "without spaces, commas or braces"},
		{`{"header":"X-A","timestampHeader":"X-T","signed":"{timestamp}.{time}.{body}"}`, "without spaces, commas or braces"},
		{`{"header":"X-A","signed":"` + strings.Repeat("a", 33) + `{body}"}`, "at most 32 characters"},
		{`{"header":"X-A","idHeader":"X-I","signed":"{id}{body}"}`, "must have a separator character after {id}"},
		{`{"header":"X-A","timestampHeader":"X-T","signed":"{timestamp}{body}"}`, "must have a separator character after {timestamp}"},
		{`{"header":"X-A","timestampHeader":"X-T","signed":"{timestamp}0{body}"}`, "not a digit, a sign"},
		{`{"header":"X-A","timestampHeader":"X-T","signed":"{body}"}`, "must hold {timestamp} with a timestampHeader"},
		{`{"header":"X-A","idHeader":"X-I","timestampHeader":"X-T","signed":"{id}{timestamp}.{body}"}`, "must have a separator character after {id}"},
	} {
		b.do("PATCH", rule, `{"hook":{"signature":`+c.sig+`}}`).want(t, 400, "INVALID_ARGUMENT").names(t, "hook.signature.signed")
		if r := b.do("PATCH", rule, `{"hook":{"signature":`+c.sig+`}}`); !strings.Contains(r.message(), c.msg) {
			t.Errorf("%s: %s; want %q", c.sig, r.message(), c.msg)
		}
	}
	for _, sig := range []string{`{"header":"X-A","timestampHeader":"x-a"}`, `{"header":"X-A","idHeader":"X-I","timestampHeader":"X-I"}`, `{"header":"X-A","timestampHeader":"Authorization"}`, `{"header":"X-A","timestampHeader":"bad header"}`} {
		b.do("PATCH", rule, `{"hook":{"signature":`+sig+`}}`).want(t, 400, "INVALID_ARGUMENT").names(t, "hook.signature.timestampHeader")
	}
}
