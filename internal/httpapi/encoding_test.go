package httpapi_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"strings"
	"testing"

	"github.com/errandhq/errand/internal/deliver"
)

// gzipped compresses b.
func gzipped(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestGzipBody: a body sent with Content-Encoding gzip is read
// decompressed (an add and a PATCH alike); one that is not gzip, another
// encoding, and one past 16 MiB once decompressed (a small bomb) are
// refused naming what is wrong, and add nothing. Before, each was read as
// JSON and refused as "send a task object", whatever was sent.
func TestGzipBody(t *testing.T) {
	b := setup(t)
	b.do("POST", "/v1/tasks/jobs/queues", `{"name":"work","mode":"pull"}`).want(t, 201, "")
	send := func(enc string, body []byte, path string) res {
		t.Helper()
		method := "POST"
		if strings.HasSuffix(path, "/work") {
			method = "PATCH"
		}
		req := b.request(method, path, string(body))
		req.Header.Set("Content-Encoding", enc)
		return b.send(req)
	}
	tasks := "/v1/tasks/jobs/queues/work/tasks"
	send("gzip", gzipped(t, []byte(`[{"payload":{"n":1}},{"payload":{"n":2}}]`)), tasks).want(t, 201, "")
	r := send("GZIP", gzipped(t, []byte(`{"maxAttempts":3}`)), "/v1/tasks/jobs/queues/work").want(t, 200, "")
	if r.body["queue"].(map[string]any)["maxAttempts"] != 3.0 {
		t.Fatalf("PATCH with a gzip body: %s", r.raw)
	}
	send("gzip", []byte(`{"payload":3}`), tasks).want(t, 400, "INVALID_ARGUMENT").names(t, "Content-Encoding")
	send("br", []byte(`{"payload":3}`), tasks).want(t, 400, "INVALID_ARGUMENT").names(t, "Content-Encoding")
	send("gzip", gzipped(t, bytes.Repeat([]byte(" "), 17<<20)), tasks).want(t, 400, "PAYLOAD_TOO_LARGE")
	page := b.do("GET", "/v1/tasks/jobs/queues/work/tasks", nil).want(t, 200, "")
	if n := len(page.body["tasks"].([]any)); n != 2 {
		t.Fatalf("%d tasks after the refusals; want the 2 of the gzip add", n)
	}
}

// TestGzipHookBody: a hook call's gzip body is read decompressed, as an
// API call's is: the payload is the JSON sent, a signature is checked over
// it, and over 64 KiB decompressed is PAYLOAD_TOO_LARGE naming body; one
// that is not gzip, or another encoding, is refused naming
// Content-Encoding. Before, each was read as bytes that are not JSON.
func TestGzipHookBody(t *testing.T) {
	b := setup(t)
	b.do("POST", "/v1/tasks/jobs/queues", `{"name":"out","mode":"pull"}`).want(t, 201, "")
	open := b.do("POST", "/v1/tasks/jobs/triggers", `{"queue":"jobs/out","hook":{}}`).want(t, 201, "").obj("trigger")["hook"].(map[string]any)["path"].(string)
	secret := "a-github-secret-of-24-chars"
	signed := b.do("POST", "/v1/tasks/jobs/triggers", `{"queue":"jobs/out","hook":{"secret":"`+secret+`"}}`).want(t, 201, "").obj("trigger")["hook"].(map[string]any)["path"].(string)
	body := []byte(`{"ref":"refs/heads/main"}`)
	r := b.hookCall(open, gzipped(t, body), map[string]string{"Content-Encoding": "gzip"}).want(t, 202, "")
	if p, _ := json.Marshal(b.do("GET", "/v1/tasks/jobs/tasks/"+r.body["id"].(string), nil).want(t, 200, "").obj("task")["payload"]); string(p) != string(body) {
		t.Fatalf("a gzip hook body became the payload %s", p)
	}
	b.hookCall(signed, gzipped(t, body), map[string]string{"Content-Encoding": "gzip", "X-Hub-Signature-256": deliver.SignGitHub(secret, body)}).want(t, 202, "")
	b.hookCall(signed, gzipped(t, body), map[string]string{"Content-Encoding": "gzip", "X-Hub-Signature-256": deliver.SignGitHub(secret, gzipped(t, body))}).want(t, 401, "UNAUTHENTICATED")
	b.hookCall(open, body, map[string]string{"Content-Encoding": "gzip"}).want(t, 400, "INVALID_ARGUMENT").names(t, "Content-Encoding")
	b.hookCall(open, body, map[string]string{"Content-Encoding": "br"}).want(t, 400, "INVALID_ARGUMENT").names(t, "Content-Encoding")
	b.hookCall(open, gzipped(t, bytes.Repeat([]byte(" "), 65<<10)), map[string]string{"Content-Encoding": "gzip"}).want(t, 400, "PAYLOAD_TOO_LARGE").names(t, "body")
	if n := len(b.do("GET", "/v1/tasks/jobs/queues/out/tasks", nil).want(t, 200, "").list("tasks")); n != 2 {
		t.Fatalf("%d tasks, want 2", n)
	}
}
