package httpapi_test

import (
	"bytes"
	"testing"

	"github.com/errandhq/errand/internal/engine"
)

// TestOpsRefusesMissingSubjects: a job naming an instance, or a queue of
// it, that does not exist is refused when submitted (404 not_found naming
// it), on every route that submits one, and nothing is stored; the same
// job naming what exists is stored.
func TestOpsRefusesMissingSubjects(t *testing.T) {
	key := bytes.Repeat([]byte{7}, engine.BackupKeySize)
	b := setupWith(t, "sqlite", func(c *engine.Config) { c.Ops = engine.OpsConfig{BackupDir: t.TempDir(), BackupKey: key} })
	b.do("POST", "/v1/instances", `{"name":"jobs"}`).want(t, 201, "")
	b.do("POST", "/v1/tasks/jobs/queues", `{"name":"q","mode":"pull"}`).want(t, 201, "")
	for _, c := range []struct{ method, path, body, msg string }{
		{"POST", "/api/tasks", `{"kind":"dlq.replay","idempotency_key":"a","payload":{"instance":"ghost","queue":"q"}}`, `instance "ghost" not found`},
		{"POST", "/api/tasks", `{"kind":"dlq.purge","idempotency_key":"b","payload":{"instance":"ghost","ids":["x1"]}}`, `instance "ghost" not found`},
		{"POST", "/api/tasks", `{"kind":"dlq.replay","idempotency_key":"c","payload":{"instance":"jobs","queue":"nope"}}`, `queue "nope" not found in instance "jobs"`},
		{"POST", "/api/tasks", `{"kind":"dlq.replay","idempotency_key":"d","payload":{"instance":"jobs","dead_letter_queue":"dlq"}}`, `queue "dlq" not found in instance "jobs"`},
		{"DELETE", "/api/dlq", `{"payload":{"instance":"jobs","queue":"nope"}}`, `queue "nope" not found in instance "jobs"`},
		{"POST", "/api/instances/ghost/backup", ``, `instance "ghost" not found`},
		{"POST", "/api/tasks", `{"kind":"instance.backup","idempotency_key":"e","payload":{"instance":"ghost"}}`, `instance "ghost" not found`},
	} {
		if m := b.do(c.method, c.path, c.body).want(t, 404, "not_found").message(); m != c.msg {
			t.Errorf("%s %s %s: %q; want %q", c.method, c.path, c.body, m, c.msg)
		}
	}
	if l := b.do("GET", "/api/tasks", nil).want(t, 200, "").list("tasks"); len(l) != 0 {
		t.Fatalf("%d jobs stored by refused calls", len(l))
	}
	b.do("POST", "/api/tasks", `{"kind":"dlq.replay","idempotency_key":"a","payload":{"instance":"jobs","queue":"q"}}`).want(t, 201, "")
	b.do("POST", "/api/tasks", `{"kind":"dlq.purge","idempotency_key":"b","payload":{"instance":"jobs","ids":["x1"]}}`).want(t, 201, "")
	b.do("POST", "/api/instances/jobs/backup", ``).want(t, 201, "")
}
