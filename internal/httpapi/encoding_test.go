package httpapi_test

import (
	"bytes"
	"compress/gzip"
	"strings"
	"testing"
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
