package httpapi_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/errandhq/errand/internal/clock"
	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/httpapi"
	"github.com/errandhq/errand/internal/task"
	"github.com/errandhq/errand/internal/testkit/stores"
)

// guarded runs the dev API (no keys) over SQLite with the given Hosts.
func guarded(t *testing.T, hosts []string) *bundle {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	st := stores.Open(t, "sqlite")
	eng := engine.New(engine.Config{Store: st, Clock: clock.NewFake(T0), Logger: log, Dev: true, URLRules: task.URLRules{AllowHTTP: true}})
	srv := httptest.NewServer(httpapi.New(httpapi.Config{Engine: eng, Logger: log, Hosts: hosts}))
	client := &http.Client{}
	t.Cleanup(func() { srv.Close(); client.CloseIdleConnections(); eng.Stop(); _ = st.Close() })
	return &bundle{t: t, srv: srv, eng: eng, client: client}
}

// raw sends one request with the given headers (Host included) and
// returns the status.
func (b *bundle) raw(method, path, body string, headers map[string]string) int {
	b.t.Helper()
	req, _ := http.NewRequest(method, b.srv.URL+path, strings.NewReader(body))
	for k, v := range headers {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := b.client.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// Defect 7: a web page the developer visits cannot add, purge or read
// through errand on loopback: cross-site writes and foreign Host names
// are refused.
func TestCrossSiteAndRebindingRefused(t *testing.T) {
	t.Parallel()
	b := guarded(t, httpapi.LoopbackHosts("127.0.0.1"))
	b.do("POST", "/v1/tasks/jobs/queues", `{"name":"work","mode":"pull"}`).want(t, 201, "")
	b.do("POST", "/v1/tasks/jobs/queues/work/tasks", `{"payload":1}`).want(t, 201, "")
	self := b.srv.URL
	for _, c := range []struct {
		name, method, path, body string
		headers                  map[string]string
		want                     int
	}{
		{"text/plain add from a foreign page", "POST", "/v1/tasks/jobs/queues/work/tasks", `{"payload":2}`,
			map[string]string{"Content-Type": "text/plain", "Origin": "http://evil.example"}, 403},
		{"bodiless cross-site purge", "POST", "/v1/tasks/jobs/queues/work/purge?confirm=true", "",
			map[string]string{"Sec-Fetch-Site": "cross-site"}, 403},
		{"same-site page on another port", "POST", "/v1/tasks/jobs/queues/work/tasks", `{"payload":2}`,
			map[string]string{"Sec-Fetch-Site": "same-site"}, 403},
		{"rebinding name reads the webhook key", "GET", "/v1/tasks/jobs/settings/webhook-key", "",
			map[string]string{"Host": "attacker.example:9191"}, 403},
		{"rebinding name adds", "POST", "/v1/tasks/jobs/queues/work/tasks", `{"payload":2}`,
			map[string]string{"Host": "attacker.example"}, 403},
		{"own origin adds", "POST", "/v1/tasks/jobs/queues/work/tasks", `{"payload":3}`,
			map[string]string{"Origin": self, "Sec-Fetch-Site": "same-origin"}, 201},
		{"curl adds", "POST", "/v1/tasks/jobs/queues/work/tasks", `{"payload":4}`, nil, 201},
		{"localhost by name", "GET", "/v1/tasks/jobs/queues", "", map[string]string{"Host": "localhost:9191"}, 200},
		{"cross-site read", "GET", "/v1/tasks/jobs/queues", "", map[string]string{"Sec-Fetch-Site": "cross-site"}, 200},
		// An <img> on another site makes no instance in dev; a client
		// that is not a browser still creates one on first use.
		{"cross-site GET of a new instance", "GET", "/v1/tasks/fresh/queues", "", map[string]string{"Sec-Fetch-Site": "cross-site"}, 404},
		{"curl's GET of a new instance", "GET", "/v1/tasks/fresh/queues", "", nil, 200},
	} {
		if got := b.raw(c.method, c.path, c.body, c.headers); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
	if n := b.do("GET", "/v1/tasks/jobs/queues/work", nil).obj("queue")["counts"].(map[string]any)["scheduled"]; n != 3.0 {
		t.Fatalf("%v tasks; the refused calls changed the queue", n)
	}
	// Without Hosts (serve on a public address) any Host is answered, and
	// cross-site writes are still refused.
	open := guarded(t, nil)
	if got := open.raw("GET", "/v1/tasks/jobs/queues", "", map[string]string{"Host": "errand.example.com"}); got != 200 {
		t.Fatalf("public Host: %d", got)
	}
	if got := open.raw("POST", "/v1/tasks/jobs/queues/default/purge?confirm=true", "", map[string]string{"Origin": "http://evil.example"}); got != 403 {
		t.Fatalf("cross-site purge: %d", got)
	}
}
