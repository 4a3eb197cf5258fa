package httpapi_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// TestHookDiscord: a hook whose secret is a Discord application's public
// key takes Discord's Ed25519 signatures (X-Signature-Ed25519 over
// X-Signature-Timestamp and the body) and answers each call as Discord
// wants: an interaction's PING with a PONG and an autocomplete with no
// choices (nothing added); a command or a modal's submit added and
// answered with a deferred message, a component's use with a deferred
// update, each named by the interaction's id; a webhook event's PING and
// event with 204 (the event added). Another key, a changed body, a stale
// timestamp, or a secret that is no public key is 401 and adds nothing.
func TestHookDiscord(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.do("POST", "/v1/tasks/jobs/queues", `{"name":"out","mode":"pull"}`).want(t, 201, "")
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	_, other, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	path := b.hookRule(t, hex.EncodeToString(pub))
	now := b.clock.Now().Unix()
	call := func(k ed25519.PrivateKey, ts int64, body string) res {
		t.Helper()
		stamp := strconv.FormatInt(ts, 10)
		sig := ed25519.Sign(k, []byte(stamp+body))
		return b.hookCall(path, []byte(body), map[string]string{"Content-Type": "application/json",
			"X-Signature-Ed25519": hex.EncodeToString(sig), "X-Signature-Timestamp": stamp})
	}
	tasks := func() int {
		t.Helper()
		return len(b.do("GET", "/v1/tasks/jobs/queues/out/tasks", nil).want(t, 200, "").list("tasks"))
	}
	answer := func(r res, want string) {
		t.Helper()
		if got := strings.TrimSpace(string(r.raw)); got != want {
			t.Fatalf("answered %s, want %s", got, want)
		}
	}

	// Discord's check of the URL: a PING, answered with a PONG, adds
	// nothing; unsigned or signed by another key it is refused.
	ping := `{"id":"1","application_id":"2","type":1,"token":"tok","version":1}`
	answer(call(priv, now, ping).want(t, 200, ""), `{"type":1}`)
	call(other, now, ping).want(t, 401, "UNAUTHENTICATED")
	b.hookCall(path, []byte(ping), nil).want(t, 401, "UNAUTHENTICATED")
	if n := tasks(); n != 0 {
		t.Fatalf("%d tasks after the PING, want 0", n)
	}

	// A slash command: added, answered with a deferred message; Discord's
	// interaction id names the task, so the same call again adds nothing.
	cmd := `{"id":"1184","application_id":"2","type":2,"token":"itok","version":1,"data":{"name":"deploy"}}`
	answer(call(priv, now, cmd).want(t, 200, ""), `{"type":5}`)
	answer(call(priv, now+1, cmd).want(t, 200, ""), `{"type":5}`)
	if n := tasks(); n != 1 {
		t.Fatalf("%d tasks after a command sent twice, want 1", n)
	}
	list := b.do("GET", "/v1/tasks/jobs/queues/out/tasks", nil).want(t, 200, "").list("tasks")
	task := b.do("GET", "/v1/tasks/jobs/tasks/"+list[0].(map[string]any)["id"].(string), nil).want(t, 200, "").obj("task")
	var sent any
	if err := json.Unmarshal([]byte(cmd), &sent); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(task["payload"], sent) || !strings.HasSuffix(task["name"].(string), "-1184") {
		t.Fatalf("the command's task: name %v, payload %v", task["name"], task["payload"])
	}
	answer(call(priv, now, `{"id":"1185","type":5,"token":"itok","data":{"custom_id":"m"}}`).want(t, 200, ""), `{"type":5}`)
	answer(call(priv, now, `{"id":"1186","type":3,"token":"itok","data":{"custom_id":"b"}}`).want(t, 200, ""), `{"type":6}`)
	// An autocomplete's choices must be the answer itself: none, nothing added.
	answer(call(priv, now, `{"id":"1187","type":4,"token":"itok"}`).want(t, 200, ""), `{"type":8,"data":{"choices":[]}}`)
	if n := tasks(); n != 3 {
		t.Fatalf("%d tasks after a modal's submit, a component's use and an autocomplete, want 3", n)
	}

	// A webhook events URL: its PING adds nothing, an event is added; both 204.
	if r := call(priv, now, `{"version":1,"application_id":"2","type":0}`).want(t, 204, ""); len(r.raw) != 0 {
		t.Fatalf("the events PING answered %q", r.raw)
	}
	call(priv, now, `{"version":1,"application_id":"2","type":1,"event":{"type":"APPLICATION_AUTHORIZED","timestamp":"2026-12-07T12:00:00.000000+00:00","data":{}}}`).want(t, 204, "")
	if n := tasks(); n != 4 {
		t.Fatalf("%d tasks after the events PING and an event, want 4", n)
	}

	// Refused: a changed body, a stale timestamp, a malformed signature.
	stamp := strconv.FormatInt(now, 10)
	sig := hex.EncodeToString(ed25519.Sign(priv, []byte(stamp+cmd)))
	b.hookCall(path, []byte(strings.Replace(cmd, "deploy", "destroy", 1)), map[string]string{"X-Signature-Ed25519": sig, "X-Signature-Timestamp": stamp}).
		want(t, 401, "UNAUTHENTICATED")
	call(priv, now-6*60, `{"id":"1190","type":2,"token":"itok"}`).want(t, 401, "UNAUTHENTICATED")
	b.hookCall(path, []byte(cmd), map[string]string{"X-Signature-Ed25519": "zz", "X-Signature-Timestamp": stamp}).want(t, 401, "UNAUTHENTICATED")

	// A hook whose secret is no public key refuses Discord's calls, saying so.
	b.do("POST", "/v1/tasks/jobs/queues", `{"name":"other","mode":"pull"}`).want(t, 201, "")
	plain := b.do("POST", "/v1/tasks/jobs/triggers", `{"queue":"jobs/other","hook":{"secret":"a-secret-that-is-no-key"}}`).
		want(t, 201, "").obj("trigger")["hook"].(map[string]any)["path"].(string)
	path = plain
	if msg := call(priv, now, ping).want(t, 401, "UNAUTHENTICATED").message(); !strings.Contains(msg, "not a Discord public key") {
		t.Fatalf("a Discord call to a hook without a public key: %s", msg)
	}
	if n := tasks(); n != 4 {
		t.Fatalf("%d tasks after the refusals, want 4", n)
	}
}
