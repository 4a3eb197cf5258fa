package embedded

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestWebhookHeaders: a webhook target's headers, a queue's and a task's
// own, reach a real receiver on loopback; a reserved one is refused.
func TestWebhookHeaders(t *testing.T) {
	t.Parallel()
	e, _ := open(t, "sqlite")
	ctx := context.Background()
	got := make(chan http.Header, 2)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		got <- r.Header.Clone()
	}))
	t.Cleanup(rcv.Close)
	if err := e.CreateQueue(ctx, "jobs", "gw", QueueOptions{Webhook: rcv.URL, Headers: map[string]string{"authorization": "Bearer q"}}); err != nil {
		t.Fatal(err)
	}
	ids := add(t, e, "gw", NewTask{Payload: json.RawMessage(`1`)})
	ids = append(ids, add(t, e, "gw", NewTask{Payload: json.RawMessage(`2`), Webhook: rcv.URL, Headers: map[string]string{"X-Own": "t"}})...)
	for _, id := range ids {
		waitState(t, e, id, "succeeded")
	}
	a, b := <-got, <-got
	if a.Get("X-Own") != "" {
		a, b = b, a
	}
	if a.Get("Authorization") != "Bearer q" || b.Get("X-Own") != "t" || b.Get("Authorization") != "" {
		t.Fatalf("delivered %v and %v", a, b)
	}
	if _, err := e.Add(ctx, "jobs", "gw", NewTask{Webhook: rcv.URL, Headers: map[string]string{"Host": "x"}}); err == nil {
		t.Fatal("a Host header was taken")
	}
}
