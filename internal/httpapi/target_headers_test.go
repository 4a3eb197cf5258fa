package httpapi_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/deliver"
	"github.com/errandhq/errand/internal/engine"
)

// TestTargetHeaders: a webhook target's headers go with every delivery
// (a queue's and a task's own), answers show each value masked, a PATCH
// that sends the mask keeps the value toward the same origin and is
// refused toward another, and bad headers are refused naming the header.
func TestTargetHeaders(t *testing.T) {
	wh := deliver.NewWebhook(deliver.WebhookOptions{})
	t.Cleanup(wh.Close)
	b := setupWith(t, "sqlite", func(c *engine.Config) { c.Deliverer = &deliver.Mux{Webhook: wh} })
	got := make(chan *http.Request, 10)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		got <- r
	}))
	t.Cleanup(rcv.Close)
	next := func() *http.Request {
		t.Helper()
		select {
		case r := <-got:
			return r
		case <-time.After(10 * time.Second):
			t.Fatal("no delivery")
		}
		return nil
	}
	b.start()

	q := b.do("POST", "/v1/tasks/jobs/queues", map[string]any{"name": "out", "mode": "push",
		"target": map[string]any{"webhook": rcv.URL + "/in", "headers": map[string]string{"authorization": "Bearer s3cret", "X-Api-Key": "k1-s3cret"}}}).want(t, 201, "")
	hidden := map[string]any{"Authorization": errandapi.HiddenHeaderValue, "X-Api-Key": errandapi.HiddenHeaderValue}
	if h := q.obj("queue")["target"].(map[string]any)["headers"]; !reflect.DeepEqual(h, hidden) || strings.Contains(string(q.raw), "s3cret") {
		t.Fatalf("create answered %s", q.raw)
	}
	if g := b.do("GET", "/v1/tasks/jobs/queues/out", nil).want(t, 200, ""); strings.Contains(string(g.raw), "s3cret") || strings.Contains(string(g.raw), "k1-s3cret") {
		t.Fatalf("GET shows a value: %s", g.raw)
	}
	b.do("POST", "/v1/tasks/jobs/queues/out/tasks", map[string]any{"payload": 1}).want(t, 201, "")
	if r := next(); r.Header.Get("Authorization") != "Bearer s3cret" || r.Header.Get("X-Api-Key") != "k1-s3cret" || r.URL.Path != "/in" {
		t.Fatalf("delivered %s with %v", r.URL.Path, r.Header)
	}

	// The mask keeps a value toward the same origin; a header left out is gone.
	b.do("PATCH", "/v1/tasks/jobs/queues/out", map[string]any{
		"target": map[string]any{"webhook": rcv.URL + "/moved", "headers": map[string]string{"Authorization": errandapi.HiddenHeaderValue}}}).want(t, 200, "")
	b.do("POST", "/v1/tasks/jobs/queues/out/tasks", map[string]any{"payload": 2}).want(t, 201, "")
	if r := next(); r.Header.Get("Authorization") != "Bearer s3cret" || r.Header.Get("X-Api-Key") != "" || r.URL.Path != "/moved" {
		t.Fatalf("after the PATCH: delivered %s with %v", r.URL.Path, r.Header)
	}
	// Toward another origin the mask keeps nothing: refused, nothing changed.
	b.do("PATCH", "/v1/tasks/jobs/queues/out", map[string]any{
		"target": map[string]any{"webhook": "http://127.0.0.2:9/steal", "headers": map[string]string{"Authorization": errandapi.HiddenHeaderValue}}}).
		want(t, 400, "INVALID_ARGUMENT").names(t, "target.headers.Authorization")
	if g := b.do("GET", "/v1/tasks/jobs/queues/out", nil); g.obj("queue")["target"].(map[string]any)["webhook"] != rcv.URL+"/moved" {
		t.Fatalf("a refused PATCH changed the queue: %s", g.raw)
	}

	// A task's own target sends its own headers; they are masked too.
	add := b.do("POST", "/v1/tasks/jobs/queues/out/tasks", map[string]any{"payload": 3,
		"target": map[string]any{"webhook": rcv.URL + "/own", "headers": map[string]string{"x-tenant": "t-9"}}}).want(t, 201, "")
	if r := next(); r.Header.Get("X-Tenant") != "t-9" || r.Header.Get("Authorization") != "" || r.URL.Path != "/own" {
		t.Fatalf("a task's own target: delivered %s with %v", r.URL.Path, r.Header)
	}
	id := add.list("tasks")[0].(map[string]any)["id"].(string)
	if g := b.do("GET", "/v1/tasks/jobs/tasks/"+id, nil).want(t, 200, ""); strings.Contains(string(g.raw), "t-9") || !strings.Contains(string(g.raw), `"X-Tenant":"(hidden)"`) {
		t.Fatalf("GET task: %s", g.raw)
	}

	for _, c := range []struct {
		target map[string]any
		field  string
	}{
		{map[string]any{"function": "app/f", "headers": map[string]string{"X-A": "1"}}, "target.headers"},
		{map[string]any{"webhook": rcv.URL, "headers": map[string]string{"user-agent": "me"}}, "target.headers.User-Agent"},
		{map[string]any{"webhook": rcv.URL, "headers": map[string]string{"X-Errand-Signature": "v1=0"}}, "target.headers.X-Errand-Signature"},
		{map[string]any{"webhook": rcv.URL, "headers": map[string]string{"X-A": "a\r\nX-B: b"}}, "target.headers.X-A"},
		{map[string]any{"webhook": rcv.URL, "headers": map[string]string{"X-A": errandapi.HiddenHeaderValue}}, "target.headers.X-A"},
	} {
		b.do("POST", "/v1/tasks/jobs/queues/out/tasks", map[string]any{"payload": 4, "target": c.target}).want(t, 400, "INVALID_ARGUMENT").names(t, c.field)
	}
	if n := len(b.do("GET", "/v1/tasks/jobs/queues/out/tasks?state=succeeded", nil).list("tasks")); n > 3 {
		t.Fatalf("%d tasks: a refused add added one", n)
	}
}
