package httpapi_test

import (
	"testing"
	"time"
)

// TestLeaseDeliveryTokens: a lease gives each task its delivery token only
// when asked (deliveryTokens); an add sent with it is one deeper, with
// source lease; a lease without it answers none.
func TestLeaseDeliveryTokens(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.do("POST", "/v1/tasks/jobs/queues", `{"name":"q","mode":"pull"}`).want(t, 201, "")
	b.do("POST", "/v1/tasks/jobs/queues/q/tasks", `[{"payload":1},{"payload":2}]`).want(t, 201, "")
	plain := b.do("POST", "/v1/tasks/jobs/queues/q/lease", `{"count":1}`).want(t, 200, "").list("tasks")
	if len(plain) != 1 || plain[0].(map[string]any)["deliveryToken"] != nil {
		t.Fatalf("a lease without deliveryTokens: %v", plain)
	}
	leased := b.do("POST", "/v1/tasks/jobs/queues/q/lease", `{"count":1,"deliveryTokens":true}`).want(t, 200, "").list("tasks")
	tok, _ := leased[0].(map[string]any)["deliveryToken"].(string)
	if len(leased) != 1 || tok == "" {
		t.Fatalf("a lease with deliveryTokens: %v", leased)
	}
	req := b.request("POST", "/v1/tasks/jobs/queues/q/tasks", `{"payload":3}`)
	req.Header.Set("X-Errand-Delivery", tok)
	id := b.send(req).want(t, 201, "").list("tasks")[0].(map[string]any)["id"].(string)
	got := b.do("GET", "/v1/tasks/jobs/tasks/"+id, nil).want(t, 200, "").obj("task")
	if got["source"] != "lease" || got["depth"] != 1.0 {
		t.Fatalf("an add with the lease's token: source %v, depth %v", got["source"], got["depth"])
	}
	req = b.request("POST", "/v1/tasks/jobs/queues/q/tasks", `{"payload":4}`)
	req.Header.Set("X-Errand-Delivery", tampered(tok))
	b.send(req).want(t, 400, "INVALID_ARGUMENT").names(t, "X-Errand-Delivery")
}

// TestLeaseTokenHoldsWhileLeased: a lease's token holds by itself until a
// day past the lease's first expiry; past it, an add with it is still
// taken while the task's lease is held (extended), and refused, naming the
// header, once the task is no longer leased.
func TestLeaseTokenHoldsWhileLeased(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.do("POST", "/v1/tasks/jobs/queues", `{"name":"q","mode":"pull"}`).want(t, 201, "")
	b.do("POST", "/v1/tasks/jobs/queues/q/tasks", `{"payload":1}`).want(t, 201, "")
	leased := b.do("POST", "/v1/tasks/jobs/queues/q/lease", `{"count":1,"leaseSeconds":86400,"deliveryTokens":true}`).
		want(t, 200, "").list("tasks")[0].(map[string]any)
	id, lease, tok := leased["id"].(string), leased["leaseId"].(string), leased["deliveryToken"].(string)
	addWith := func() res {
		req := b.request("POST", "/v1/tasks/jobs/queues/q/tasks", `{"payload":2}`)
		req.Header.Set("X-Errand-Delivery", tok)
		return b.send(req)
	}
	// Extended twice, a day less an hour apart; then past the token's
	// own two days (the lease's first expiry and a day).
	for range 2 {
		b.clock.Advance(23 * time.Hour)
		b.do("POST", "/v1/tasks/jobs/tasks/"+id+"/extend", map[string]any{"leaseId": lease, "leaseSeconds": 86400}).want(t, 200, "")
	}
	b.clock.Advance(3 * time.Hour) // 49 h after the lease, its lease held until 70 h
	added := addWith().want(t, 201, "").list("tasks")[0].(map[string]any)
	got := b.do("GET", "/v1/tasks/jobs/tasks/"+added["id"].(string), nil).want(t, 200, "").obj("task")
	if got["source"] != "lease" || got["depth"] != 1.0 {
		t.Fatalf("an add with the lease's token past its day: source %v, depth %v", got["source"], got["depth"])
	}
	b.do("POST", "/v1/tasks/jobs/tasks/"+id+"/ack", map[string]any{"leaseId": lease}).want(t, 200, "")
	addWith().want(t, 400, "INVALID_ARGUMENT").names(t, "X-Errand-Delivery")
}

// tampered is a signed token with one character of its signature changed:
// the third from the end, whose six bits all count (a changed last
// character may only touch the unpadded base64's unused bits, and a fixed
// replacement may happen to be what was there).
func tampered(tok string) string {
	i := len(tok) - 3
	c := byte('A')
	if tok[i] == 'A' {
		c = 'B'
	}
	return tok[:i] + string(c) + tok[i+1:]
}
