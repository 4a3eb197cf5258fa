package httpapi_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestBodylessRoutesRefuseAField: the routes that take no body take an
// empty one or {}, and refuse a field (naming it) or malformed JSON
// (naming body) with nothing applied — as every route refuses an unknown
// field.
func TestBodylessRoutesRefuseAField(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.do("POST", "/v1/tasks/jobs/queues", `{"name":"q","mode":"pull","maxAttempts":1}`).want(t, 201, "")
	id := b.do("POST", "/v1/tasks/jobs/queues/q/tasks", `{"delay":60}`).want(t, 201, "").list("tasks")[0].(map[string]any)["id"].(string)
	rule := b.do("POST", "/v1/tasks/jobs/triggers", `{"queue":"jobs/q","hook":{}}`).want(t, 201, "").obj("trigger")["id"].(string)
	key := b.do("GET", "/v1/tasks/jobs/settings/webhook-key", nil).want(t, 200, "").body["webhookKey"]
	routes := []struct{ method, path string }{
		{"POST", "/v1/tasks/jobs/tasks/" + id + "/run"},
		{"POST", "/v1/tasks/jobs/tasks/" + id + "/cancel"},
		{"POST", "/v1/tasks/jobs/tasks/" + id + "/retry"},
		{"POST", "/v1/tasks/jobs/queues/q/purge?confirm=true"},
		{"DELETE", "/v1/tasks/jobs/queues/q?confirm=true"},
		{"POST", "/v1/tasks/jobs/settings/webhook-key/rotate"},
		{"DELETE", "/v1/tasks/jobs/triggers/" + rule},
		{"POST", "/v1/channels/jobs/room/token"},
		{"DELETE", "/v1/instances/jobs?confirm=true"},
	}
	for _, rt := range routes {
		if msg := b.do(rt.method, rt.path, `{"owner":"someone-else"}`).want(t, 400, "INVALID_ARGUMENT").message(); !strings.HasPrefix(msg, "owner:") {
			t.Errorf("%s %s with a field: %q, want it named", rt.method, rt.path, msg)
		}
		if msg := b.do(rt.method, rt.path, `{`).want(t, 400, "INVALID_ARGUMENT").message(); !strings.HasPrefix(msg, "body:") {
			t.Errorf("%s %s with malformed JSON: %q, want body named", rt.method, rt.path, msg)
		}
	}
	// Nothing was applied: the task waits as it was, the key is the same.
	tk := b.do("GET", "/v1/tasks/jobs/tasks/"+id, nil).want(t, 200, "").obj("task")
	if tk["state"] != "scheduled" || tk["runAt"] != float64(T0.UnixMilli()+60_000) {
		t.Fatalf("a refused call changed the task: %v", tk)
	}
	if got := b.do("GET", "/v1/tasks/jobs/settings/webhook-key", nil).body["webhookKey"]; got != key {
		t.Fatal("a refused rotate changed the webhook key")
	}
	b.do("GET", "/v1/tasks/jobs/triggers/"+rule, nil).want(t, 200, "")
	// {}, null and no body are what they take.
	b.do("POST", "/v1/tasks/jobs/tasks/"+id+"/run", `{}`).want(t, 200, "")
	b.do("POST", "/v1/channels/jobs/room/token", `null`).want(t, 201, "")
	b.do("POST", "/v1/tasks/jobs/queues/q/purge?confirm=true", ` {} `).want(t, 200, "")
	b.do("DELETE", "/v1/tasks/jobs/queues/q?confirm=true", nil).want(t, 200, "")
}

// TestRefusalSituations sends the refusals of the contract that were only
// tested below HTTP, checking status, code and the field named.
func TestRefusalSituations(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.do("POST", "/v1/tasks/jobs/queues", `{"name":"q","mode":"pull","maxAttempts":1}`).want(t, 201, "")
	big := `"` + strings.Repeat("x", 64<<10) + `"`
	named := func(r interface{ message() string }, field string) {
		t.Helper()
		if msg := r.message(); !strings.HasPrefix(msg, field+":") {
			t.Errorf("%q: want %s named", msg, field)
		}
	}

	// Params over 64 KiB, on a task and on a rule; a rule's payload too.
	named(b.do("POST", "/v1/tasks/jobs/queues/q/tasks", `{"params":`+big+`}`).want(t, 400, "PAYLOAD_TOO_LARGE"), "params")
	named(b.do("POST", "/v1/tasks/jobs/triggers", `{"queue":"jobs/q","hook":{},"payload":`+big+`}`).want(t, 400, "PAYLOAD_TOO_LARGE"), "payload")
	named(b.do("POST", "/v1/tasks/jobs/triggers", `{"queue":"jobs/q","hook":{},"params":{"k":`+big+`}}`).want(t, 400, "PAYLOAD_TOO_LARGE"), "params")
	rule := b.do("POST", "/v1/tasks/jobs/triggers", `{"queue":"jobs/q","hook":{}}`).want(t, 201, "").obj("trigger")["id"].(string)
	named(b.do("PATCH", "/v1/tasks/jobs/triggers/"+rule, `{"payload":`+big+`}`).want(t, 400, "PAYLOAD_TOO_LARGE"), "payload")
	named(b.do("PATCH", "/v1/tasks/jobs/triggers/"+rule, `{"params":{"k":`+big+`}}`).want(t, 400, "PAYLOAD_TOO_LARGE"), "params")

	// A batch ack's result over 64 KiB, named by its index; nothing acked.
	b.do("POST", "/v1/tasks/jobs/queues/q/tasks", `{}`).want(t, 201, "")
	id, lease := b.leaseOne("q", 60)
	named(b.do("POST", "/v1/tasks/jobs/queues/q/ack", fmt.Sprintf(`{"acks":[{"id":%q,"leaseId":%q,"result":%s}]}`, id, lease, big)).
		want(t, 400, "PAYLOAD_TOO_LARGE"), "acks[0].result")

	// A leased task cannot be retried; once its lease has run out (before
	// any rescuer came), extend and release are LEASE_LOST, as ack is.
	b.do("POST", "/v1/tasks/jobs/tasks/"+id+"/retry", nil).want(t, 400, "NOT_RETRYABLE")
	b.clock.Advance(61 * time.Second)
	b.do("POST", "/v1/tasks/jobs/tasks/"+id+"/extend", fmt.Sprintf(`{"leaseId":%q,"leaseSeconds":30}`, lease)).want(t, 409, "LEASE_LOST")
	b.do("POST", "/v1/tasks/jobs/tasks/"+id+"/release", fmt.Sprintf(`{"leaseId":%q}`, lease)).want(t, 409, "LEASE_LOST")

	// A succeeded task can be neither cancelled nor retried; a cancelled
	// one cannot be retried.
	b.do("POST", "/v1/tasks/jobs/queues/q/tasks", `{}`).want(t, 201, "")
	b.do("POST", "/v1/tasks/jobs/queues/q/tasks", `{"delay":3600}`).want(t, 201, "")
	done, l2 := b.leaseOne("q", 60)
	b.do("POST", "/v1/tasks/jobs/tasks/"+done+"/ack", fmt.Sprintf(`{"leaseId":%q}`, l2)).want(t, 200, "")
	b.do("POST", "/v1/tasks/jobs/tasks/"+done+"/cancel", nil).want(t, 400, "NOT_CANCELLABLE")
	b.do("POST", "/v1/tasks/jobs/tasks/"+done+"/retry", nil).want(t, 400, "NOT_RETRYABLE")

	// A delivery token that is not one: INVALID_ARGUMENT naming the header,
	// and nothing added.
	// A batch of one names the header too, not "tasks[0].X-Errand-Delivery":
	// the token is the call's, not a task's.
	for _, body := range []string{`{}`, `[{}]`, `{"tasks":[{}]}`} {
		for _, tok := range []string{"garbage", "v1.AAAA.BBBB"} {
			req := b.request("POST", "/v1/tasks/jobs/queues/q/tasks", body)
			req.Header.Set("X-Errand-Delivery", tok)
			named(b.send(req).want(t, 400, "INVALID_ARGUMENT"), "X-Errand-Delivery")
		}
	}
}

// TestWorkerFromAnotherOriginRefused: a worker's WebSocket with another
// site's Origin is refused in errand's shape, before any upgrade.
func TestWorkerFromAnotherOriginRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	req := b.request("GET", "/v1/workers/jobs", nil)
	asUpgrade(req, "https://evil.example")
	if msg := b.send(req).want(t, 403, "PERMISSION_DENIED").message(); !strings.Contains(msg, `origin "https://evil.example" is refused`) {
		t.Fatalf("refusal: %s", msg)
	}
}

// asUpgrade makes req a WebSocket upgrade from origin, as a browser's.
func asUpgrade(req *http.Request, origin string) {
	for k, v := range map[string]string{"Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Version": "13",
		"Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==", "Origin": origin} {
		req.Header.Set(k, v)
	}
}
