package httpapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/errandhq/errand/internal/clock"
	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/httpapi"
	"github.com/errandhq/errand/internal/task"
	"github.com/errandhq/errand/internal/testkit/stores"
)

// documented returns the document's operations as "METHOD /path".
func documented(s *apiSpec) []string {
	var out []string
	for path, item := range s.doc.Paths.Map() {
		for method := range item.Operations() {
			out = append(out, method+" "+path)
		}
	}
	slices.Sort(out)
	return out
}

// routed returns the router's own routes as "METHOD /path".
func routed(t *testing.T) []string {
	st := stores.Open(t, "sqlite")
	t.Cleanup(func() { _ = st.Close() })
	eng := engine.New(engine.Config{Store: st, Clock: clock.NewFake(T0), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	out := httpapi.New(httpapi.Config{Engine: eng}).RoutePatterns()
	slices.Sort(out)
	return out
}

// TestOpenAPICoversTheRouter: every route the server registers on its mux
// is an operation of the document, and every operation of the document is
// a route of the server.
func TestOpenAPICoversTheRouter(t *testing.T) {
	t.Parallel()
	doc, routes := documented(mustSpec(t)), routed(t)
	if len(routes) < 40 {
		t.Fatalf("only %d routes: %v", len(routes), routes)
	}
	for _, r := range routes {
		if !slices.Contains(doc, r) {
			t.Errorf("route %s is not in internal/httpapi/openapi.json", r)
		}
	}
	for _, d := range doc {
		if !slices.Contains(routes, d) {
			t.Errorf("operation %s of internal/httpapi/openapi.json is not routed", d)
		}
	}
}

// TestOpenAPIDocsNameEveryRoute: docs/api.md, the reference in prose,
// names every route (its path, with any instance, queue or id).
func TestOpenAPIDocsNameEveryRoute(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	for _, r := range routed(t) {
		method, path, _ := strings.Cut(r, " ")
		heading := regexp.MustCompile("(?m)^#+ `" + method + " " + regexp.QuoteMeta(path) + "`")
		if !heading.MatchString(text) {
			t.Errorf("docs/api.md has no heading `%s %s`", method, path)
		}
	}
}

// TestOpenAPIServed: GET /v1/openapi.json answers the document, an OpenAPI
// 3.1 description, without a key; /healthz answers by it too.
func TestOpenAPIServed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.do("GET", httpapi.OpenAPIPath, nil).want(t, 200, "")
	if !bytes.Equal(r.raw, httpapi.OpenAPI) || r.body["openapi"] != "3.1.0" {
		t.Fatalf("served %.100s", r.raw)
	}
	if ok := b.do("GET", "/livez", nil).want(t, 200, "").body["ok"]; ok != true {
		t.Fatalf("livez ok %v", ok)
	}
	if ok := b.do("GET", "/healthz", nil).want(t, 200, "").body["ok"]; ok != true {
		t.Fatalf("healthz ok %v", ok)
	}
}

// TestOpenAPICheckCatchesDrift: the checker that every test's client goes
// through refuses real answers that differ from the document: here the
// document is changed (a status, a field's type, a required field, a
// request field) and real exchanges are held to it.
func TestOpenAPICheckCatchesDrift(t *testing.T) {
	t.Parallel()
	b := setup(t)
	drifts := []struct {
		name   string
		change func(doc map[string]any)
		call   func() (method, path, body string)
		want   string
	}{
		{"an undocumented status", func(doc map[string]any) {
			delete(op(doc, "/v1/tasks/{instance}/queues", "post")["responses"].(map[string]any), "201")
		}, func() (string, string, string) { return "POST", "/v1/tasks/jobs/queues", `{"name":"d1"}` }, "status is not supported"},
		{"a field of another type", func(doc map[string]any) {
			props(doc, "Queue")["maxAttempts"] = map[string]any{"type": "string"}
		}, func() (string, string, string) { return "GET", "/v1/tasks/jobs/queues/default", "" }, "maxAttempts"},
		{"a field the server does not send", func(doc map[string]any) {
			s := schemaOf(doc, "Settings")
			props(doc, "Settings")["retries"] = map[string]any{"type": "integer"}
			s["required"] = append(s["required"].([]any), "retries")
		}, func() (string, string, string) { return "GET", "/v1/tasks/jobs/settings", "" }, "retries"},
		{"a field the server sends that the document lacks", func(doc map[string]any) {
			delete(props(doc, "Usage"), "averageBytesKept")
			s := schemaOf(doc, "Usage")
			s["required"] = slices.DeleteFunc(s["required"].([]any), func(v any) bool { return v == "averageBytesKept" })
		}, func() (string, string, string) { return "GET", "/v1/tasks/jobs/usage", "" }, "averageBytesKept"},
		{"a request field the server takes that the document lacks", func(doc map[string]any) {
			delete(props(doc, "SettingsRequest"), "maxInFlight")
		}, func() (string, string, string) { return "PATCH", "/v1/tasks/jobs/settings", `{"maxInFlight":7}` }, "maxInFlight"},
	}
	for _, d := range drifts {
		var doc map[string]any
		if err := json.Unmarshal(httpapi.OpenAPI, &doc); err != nil {
			t.Fatal(err)
		}
		d.change(doc)
		raw, _ := json.Marshal(doc)
		drifted, err := loadSpec(raw)
		if err != nil {
			t.Fatalf("%s: %v", d.name, err)
		}
		method, path, body := d.call()
		req, _ := http.NewRequest(method, b.srv.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := &recordingTB{TB: t}
		c := &http.Client{Transport: &specCheck{tb: rec, next: http.DefaultTransport, spec: drifted}}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := strings.Join(rec.errors, "\n"); !strings.Contains(got, d.want) {
			t.Errorf("%s: %s %s → %d: the checker said %q; want an error naming %q", d.name, method, path, resp.StatusCode, got, d.want)
		}
		// The same exchange passes the repository's document.
		rec = &recordingTB{TB: t}
		req, _ = http.NewRequest(method, b.srv.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		c.Transport = &specCheck{tb: rec, next: http.DefaultTransport, spec: mustSpec(t)}
		if resp, err := c.Do(req); err == nil {
			resp.Body.Close()
		}
		if len(rec.errors) > 0 {
			t.Errorf("%s: the repository's document refuses %s %s: %v", d.name, method, path, rec.errors)
		}
	}
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
}

// recordingTB collects the checker's errors instead of failing the test.
type recordingTB struct {
	testing.TB
	errors []string
}

func (r *recordingTB) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func op(doc map[string]any, path, method string) map[string]any {
	return doc["paths"].(map[string]any)[path].(map[string]any)[method].(map[string]any)
}

func schemaOf(doc map[string]any, name string) map[string]any {
	return doc["components"].(map[string]any)["schemas"].(map[string]any)[name].(map[string]any)
}

func props(doc map[string]any, name string) map[string]any {
	return schemaOf(doc, name)["properties"].(map[string]any)
}

// TestOpenAPIHookHeaderLimits: the document gives a hook's headers the
// limits the domain enforces, on a rule's create and PATCH and in a
// bundle: at most task.MaxHookHeaders names, each an HTTP token of at most
// 100 characters, none twice.
func TestOpenAPIHookHeaderLimits(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties struct {
					Hook struct {
						Properties struct {
							Headers struct {
								MaxItems    int  `json:"maxItems"`
								UniqueItems bool `json:"uniqueItems"`
								Items       struct {
									MaxLength int    `json:"maxLength"`
									Pattern   string `json:"pattern"`
								} `json:"items"`
							} `json:"headers"`
						} `json:"properties"`
					} `json:"hook"`
				} `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(httpapi.OpenAPI, &doc); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"TriggerRequest", "BundleTrigger"} {
		h := doc.Components.Schemas[name].Properties.Hook.Properties.Headers
		if h.MaxItems != task.MaxHookHeaders || !h.UniqueItems || h.Items.MaxLength != 100 {
			t.Errorf("%s hook.headers: %+v, want maxItems %d, uniqueItems, items of at most 100", name, h, task.MaxHookHeaders)
		}
		re := regexp.MustCompile(h.Items.Pattern)
		for _, c := range []struct {
			name string
			ok   bool
		}{{"X-Event", true}, {"x_a.b~c|d`e^f'g*h+i#j$k%l&m!", true}, {"X Event", false}, {"X:Event", false}, {"X-Ével", false}, {"", false}} {
			if re.MatchString(c.name) != c.ok {
				t.Errorf("%s hook.headers pattern %q on %q: %v, want %v", name, h.Items.Pattern, c.name, !c.ok, c.ok)
			}
		}
	}
}
