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

// TestHooksAndAllowedHosts: a hook's URL holds its capability, so any Host
// (a tunnel's, a proxy's) and a form of another site may call it, while
// the rest of a loopback server still refuses them; --allow-host's names
// (".domain" for the domain and every name under it) are answered like
// the loopback names. Before, a hook behind ngrok or cloudflared (which
// pass their own Host on) was refused by errand dev, and so was every call
// of errand serve on 127.0.0.1 behind a proxy that passes Host on.
func TestHooksAndAllowedHosts(t *testing.T) {
	t.Parallel()
	b := guarded(t, append(httpapi.LoopbackHosts("127.0.0.1"), "hooks.example.com", ".trycloudflare.com"))
	b.do("POST", "/v1/tasks/jobs/queues", `{"name":"in","mode":"pull"}`).want(t, 201, "")
	hook := b.do("POST", "/v1/tasks/jobs/triggers", `{"queue":"jobs/in","hook":{}}`).want(t, 201, "").obj("trigger")["hook"].(map[string]any)["path"].(string)
	for _, c := range []struct {
		name, method, path, body string
		headers                  map[string]string
		want                     int
	}{
		{"a hook through a tunnel's Host", "POST", hook, `{"n":1}`, map[string]string{"Host": "abc123.ngrok-free.app"}, 202},
		{"a hook from a form of another site", "POST", hook, `n=2`, map[string]string{"Content-Type": "application/x-www-form-urlencoded",
			"Origin": "https://shop.example", "Sec-Fetch-Site": "cross-site"}, 202},
		{"an unknown hook through a tunnel", "POST", "/v1/hooks/jobs/hk_00000000000000000000000000000000", `{}`, map[string]string{"Host": "abc123.ngrok-free.app"}, 404},
		{"the API through a tunnel's Host", "GET", "/v1/tasks/jobs/queues", "", map[string]string{"Host": "abc123.ngrok-free.app"}, 403},
		{"the API from another site", "POST", "/v1/tasks/jobs/queues/in/tasks", `{"payload":1}`, map[string]string{"Sec-Fetch-Site": "cross-site"}, 403},
		{"an allowed name", "GET", "/v1/tasks/jobs/queues", "", map[string]string{"Host": "hooks.example.com:443"}, 200},
		{"an allowed domain's name", "GET", "/v1/tasks/jobs/queues", "", map[string]string{"Host": "fluffy-cat.trycloudflare.com"}, 200},
		{"the allowed domain itself", "GET", "/v1/tasks/jobs/queues", "", map[string]string{"Host": "trycloudflare.com"}, 200},
		{"a name ending alike", "GET", "/v1/tasks/jobs/queues", "", map[string]string{"Host": "eviltrycloudflare.com"}, 403},
		{"a name under an exact one", "GET", "/v1/tasks/jobs/queues", "", map[string]string{"Host": "x.hooks.example.com"}, 403},
	} {
		if got := b.raw(c.method, c.path, c.body, c.headers); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
	if n := len(b.do("GET", "/v1/tasks/jobs/queues/in/tasks", nil).want(t, 200, "").list("tasks")); n != 2 {
		t.Fatalf("%d tasks, want the 2 hook calls", n)
	}
	for in, want := range map[string]string{"Hooks.Example.com": "hooks.example.com", ".trycloudflare.com": ".trycloudflare.com", "10.0.0.7": "10.0.0.7", "[::1]": "::1",
		"http://x.example": "", "x.example:443": "", "x.example/path": "", "": "", ".": "", "a..b": "", "*": ""} {
		got, err := httpapi.ParseAllowedHost(in)
		if want == "" && err == nil || want != "" && (err != nil || got != want) {
			t.Errorf("ParseAllowedHost(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

// TestHookCORS: a page of another site may call a hook with fetch: the
// preflight is answered allowing POST and the headers asked for, and the
// call's answer (and a refusal's) carries Access-Control-Allow-Origin: *;
// the rest of the API answers no CORS at all.
func TestHookCORS(t *testing.T) {
	t.Parallel()
	b := guarded(t, httpapi.LoopbackHosts("127.0.0.1"))
	b.do("POST", "/v1/tasks/jobs/queues", `{"name":"in","mode":"pull"}`).want(t, 201, "")
	hook := b.do("POST", "/v1/tasks/jobs/triggers", `{"queue":"jobs/in","hook":{}}`).want(t, 201, "").obj("trigger")["hook"].(map[string]any)["path"].(string)
	call := func(method, path, body string, headers map[string]string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(method, b.srv.URL+path, strings.NewReader(body))
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		resp, err := b.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	page := map[string]string{"Origin": "https://shop.example", "Sec-Fetch-Site": "cross-site"}
	pre := call("OPTIONS", hook, "", map[string]string{"Origin": "https://shop.example", "Access-Control-Request-Method": "POST",
		"Access-Control-Request-Headers": "content-type,idempotency-key"})
	if pre.StatusCode != 204 || pre.Header.Get("Access-Control-Allow-Origin") != "*" || pre.Header.Get("Access-Control-Allow-Methods") != "POST" ||
		pre.Header.Get("Access-Control-Allow-Headers") != "content-type,idempotency-key" || pre.Header.Get("Access-Control-Max-Age") == "" {
		t.Fatalf("preflight: %d %v", pre.StatusCode, pre.Header)
	}
	if r := call("POST", hook, `{"n":1}`, page); r.StatusCode != 202 || r.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Fatalf("a page's call: %d %v", r.StatusCode, r.Header)
	}
	if r := call("POST", hook, `not json`, page); r.StatusCode != 400 || r.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Fatalf("a page's refused call: %d %v", r.StatusCode, r.Header)
	}
	if r := call("OPTIONS", hook, "", nil); r.StatusCode != 405 {
		t.Fatalf("OPTIONS without a preflight's headers: %d", r.StatusCode)
	}
	if r := call("OPTIONS", "/v1/tasks/jobs/queues", "", map[string]string{"Origin": "https://shop.example", "Access-Control-Request-Method": "GET"}); r.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("the API answered a preflight with CORS: %d %v", r.StatusCode, r.Header)
	}
	if r := call("GET", "/v1/tasks/jobs/queues", "", page); r.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("the API answered CORS: %v", r.Header)
	}
}
