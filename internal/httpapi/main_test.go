package httpapi_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/errandhq/errand/internal/clock"
	"github.com/errandhq/errand/internal/deliver"
	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/httpapi"
	"github.com/errandhq/errand/internal/task"
	"github.com/errandhq/errand/internal/testkit"
	"github.com/errandhq/errand/internal/testkit/stores"
)

func TestMain(m *testing.M) {
	code := testkit.Run(m, "internal/httpapi")
	// A whole run (no -run, no -short) checks every operation of the
	// OpenAPI document against at least one real exchange.
	if f := flag.Lookup("test.run"); code == 0 && f != nil && f.Value.String() == "" && !testing.Short() {
		if missing := unexercised(); len(missing) > 0 {
			fmt.Fprintf(os.Stderr, "OpenAPI: no test's exchange was checked against %v\n", missing)
			code = 1
		}
	}
	os.Exit(code)
}

// T0 is the fake clock's start.
var T0 = time.UnixMilli(1_790_000_000_000)

type bundle struct {
	t     testing.TB
	srv   *httptest.Server
	eng   *engine.Engine
	clock *clock.Fake
	// client talks to srv; its idle connections close with the bundle.
	client *http.Client
	// outcomes reports each attempt outcome the engine stores.
	outcomes *engine.OutcomeWatch
}

// setup runs the real API over a real SQLite file on loopback, with a fake
// clock and the engine's services not started (tests drive them).
func setup(t testing.TB) *bundle { return setupOn(t, "sqlite") }

// setupOn is setup on a store of kind (see stores.Kinds).
func setupOn(t testing.TB, kind string) *bundle { return setupWith(t, kind, nil) }

// setupWith is setupOn with the engine's configuration changed by fn.
func setupWith(t testing.TB, kind string, fn func(*engine.Config)) *bundle {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	st := stores.Open(t, kind)
	fc := clock.NewFake(T0)
	cfg := engine.Config{Store: st, Clock: fc, Logger: log, Dev: true, URLRules: task.URLRules{AllowHTTP: true}}
	if fn != nil {
		fn(&cfg)
	}
	eng := engine.New(cfg)
	workers := &deliver.Workers{}
	srv := httptest.NewServer(httpapi.New(httpapi.Config{Engine: eng, Logger: log, Workers: workers}))
	client := checkedClient(t)
	t.Cleanup(func() {
		workers.CloseAll("the test ended")
		srv.Close()
		client.CloseIdleConnections()
		eng.Stop()
		_ = st.Close()
	})
	return &bundle{t: t, srv: srv, eng: eng, clock: fc, client: client, outcomes: engine.WatchOutcomes(eng)}
}

// res is a decoded answer.
type res struct {
	status int
	body   map[string]any
	raw    []byte
	header http.Header
}

func (b *bundle) do(method, path string, body any) res {
	b.t.Helper()
	return b.send(b.request(method, path, body))
}

// request builds do's request, for a test that adds headers before it
// sends it.
func (b *bundle) request(method, path string, body any) *http.Request {
	var rd io.Reader
	switch v := body.(type) {
	case nil:
	case string:
		rd = bytes.NewBufferString(v)
	default:
		buf, _ := json.Marshal(v)
		rd = bytes.NewReader(buf)
	}
	req, _ := http.NewRequest(method, b.srv.URL+path, rd)
	req.Header.Set("Content-Type", "application/json")
	return req
}

// send sends req and decodes the answer.
func (b *bundle) send(req *http.Request) res {
	b.t.Helper()
	resp, err := b.client.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	r := res{status: resp.StatusCode, raw: raw, header: resp.Header}
	if len(raw) > 0 && raw[0] == '{' {
		if err := json.Unmarshal(raw, &r.body); err != nil {
			b.t.Fatalf("%s %s: bad JSON %q", req.Method, req.URL.Path, raw)
		}
	}
	return r
}

// want checks status and, for errors, the code.
func (r res) want(t testing.TB, status int, code string) res {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r.raw)
	}
	if code != "" {
		e, _ := r.body["error"].(map[string]any)
		if e == nil || e["code"] != code {
			t.Fatalf("code %v, want %s: %s", e, code, r.raw)
		}
	}
	return r
}

// names checks that the error message names field first, as every
// refusal does ("field: …"; the field's full path).
func (r res) names(t testing.TB, field string) res {
	t.Helper()
	if msg := r.message(); !strings.HasPrefix(msg, field+": ") {
		t.Errorf("message %q does not name %s first", msg, field)
	}
	return r
}

// message returns the error message.
func (r res) message() string {
	e, _ := r.body["error"].(map[string]any)
	s, _ := e["message"].(string)
	return s
}

func (r res) obj(key string) map[string]any {
	m, _ := r.body[key].(map[string]any)
	return m
}

func (r res) list(key string) []any {
	l, _ := r.body[key].([]any)
	return l
}
