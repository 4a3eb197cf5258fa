package httpapi_test

import (
	"strings"
	"testing"
)

// TestQueryParametersChecked: a query parameter a route does not read, one
// given twice, and a query that does not parse are refused, INVALID_ARGUMENT
// naming the parameter, before the call does anything, as an unknown or
// repeated body field is: a misspelt ?stat=failed used to be dropped and
// every task listed. The parameters a route reads still work, and a hook's
// URL may carry any.
func TestQueryParametersChecked(t *testing.T) {
	b := setup(t)
	b.do("POST", "/v1/tasks/jobs/queues", `{"name":"work","mode":"pull"}`).want(t, 201, "")
	r := b.do("POST", "/v1/tasks/jobs/queues/work/tasks", `{"payload":1}`).want(t, 201, "")
	id := r.body["tasks"].([]any)[0].(map[string]any)["id"].(string)

	for _, c := range []struct{ method, path, field, says string }{
		{"GET", "/v1/tasks/jobs/queues/work/tasks?stat=failed", "stat", "unknown query parameter (this route takes state, name, limit, cursor)"},
		{"GET", "/v1/tasks/jobs/queues/work/tasks?state=scheduled&state=failed", "state", "is given twice"},
		{"GET", "/v1/tasks/jobs/tasks/" + id + "?verbose=1", "verbose", "unknown query parameter (this route takes waitSeconds)"},
		{"POST", "/v1/tasks/jobs/queues/work/tasks?delay=10", "delay", "unknown query parameter (this route takes none)"},
		{"POST", "/v1/tasks/jobs/queues/work/purge?confirm=true&force=1", "force", "unknown query parameter (this route takes confirm)"},
		{"GET", "/v1/tasks/jobs/queues?a%zz=1", "query", "does not parse"},
		{"GET", "/v1/instances?%00=1", `"\x00"`, "unknown query parameter"},
	} {
		body := ""
		if c.method == "POST" {
			body = `{"payload":2}`
		}
		got := b.do(c.method, c.path, body).want(t, 400, "INVALID_ARGUMENT").names(t, c.field)
		if !strings.Contains(got.message(), c.says) {
			t.Errorf("%s %s: %q; want it to say %q", c.method, c.path, got.message(), c.says)
		}
	}
	// Nothing of a refused call was done: the add above with ?delay= and
	// the purge with ?force= left the one task.
	if page := b.do("GET", "/v1/tasks/jobs/queues/work/tasks?state=scheduled&limit=10", nil).want(t, 200, ""); len(page.body["tasks"].([]any)) != 1 {
		t.Fatalf("after the refused calls: %s", page.raw)
	}
	b.do("POST", "/v1/tasks/jobs/queues/work/purge?confirm=true", nil).want(t, 200, "")
	// The operations API words it in its own codes.
	b.do("GET", "/api/tasks?limit=5&page=2", nil).want(t, 400, "invalid_argument").names(t, "page")
	b.do("GET", "/api/tasks?limit=5&offset=0", nil).want(t, 200, "")
}
