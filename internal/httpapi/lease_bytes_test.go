package httpapi_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/errandhq/errand/internal/engine"
)

// TestLeaseBoundedInBytes: a lease answers fewer tasks than its count once
// their payloads and params reach engine.LeaseMaxBytes (32 MiB, as Cloud
// Tasks bounds LeaseTasks), and the next lease takes the rest. Before, a
// lease of 1,000 such tasks answered up to 128 MiB at once (a lease of
// 600 tasks of 60 KB raised errand dev's memory from 100 to 277 MB).
func TestLeaseBoundedInBytes(t *testing.T) {
	b := setup(t)
	b.do("POST", "/v1/tasks/jobs/queues", `{"name":"big","mode":"pull"}`).want(t, 201, "")
	payload := `"` + strings.Repeat("p", 59_998) + `"`      // 60,000 bytes
	params := `{"k":"` + strings.Repeat("q", 59_992) + `"}` // 60,000 bytes
	batch := "[" + strings.TrimSuffix(strings.Repeat(`{"payload":`+payload+`,"params":`+params+`},`, 100), ",") + "]"
	for range 3 {
		b.do("POST", "/v1/tasks/jobs/queues/big/tasks", batch).want(t, 201, "")
	}
	first := b.do("POST", "/v1/tasks/jobs/queues/big/lease", `{"count":1000}`).want(t, 200, "").list("tasks")
	want := engine.LeaseMaxBytes / 120_000 // 279
	if len(first) != want {
		t.Fatalf("the first lease answered %d tasks; want %d (32 MiB of 120,000 bytes each)", len(first), want)
	}
	size := 0
	for _, tk := range first {
		p, _ := json.Marshal(tk.(map[string]any)["payload"])
		q, _ := json.Marshal(tk.(map[string]any)["params"])
		size += len(p) + len(q)
	}
	if size > engine.LeaseMaxBytes {
		t.Fatalf("the first lease's payloads and params are %d bytes", size)
	}
	if rest := b.do("POST", "/v1/tasks/jobs/queues/big/lease", `{"count":1000}`).want(t, 200, "").list("tasks"); len(rest) != 300-want {
		t.Fatalf("the second lease answered %d tasks; want the %d left", len(rest), 300-want)
	}
}
