package mcp_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/errandhq/errand/internal/auth"
	"github.com/errandhq/errand/internal/clock"
	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/httpapi"
	errandmcp "github.com/errandhq/errand/internal/mcp"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
	"github.com/errandhq/errand/internal/testkit"
	"github.com/errandhq/errand/internal/testkit/stores"
)

func TestMain(m *testing.M) {
	code := testkit.Run(m, "internal/mcp")
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

var (
	buildOnce sync.Once
	binDir    string
	bin       string
	buildErr  error
)

// errandBinary builds cmd/errand once per run.
func errandBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		if binDir, buildErr = os.MkdirTemp("", "errand-mcp-test"); buildErr != nil {
			return
		}
		bin = filepath.Join(binDir, "errand")
		cmd := exec.Command("go", "build", "-o", bin, "../../cmd/errand")
		cmd.Stderr = os.Stderr
		buildErr = cmd.Run()
	})
	if buildErr != nil {
		t.Fatalf("build: %v", buildErr)
	}
	return bin
}

var (
	t0    = time.UnixMilli(1_790_000_000_000)
	quiet = slog.New(slog.NewTextHandler(io.Discard, nil))
)

// node is an errand node built as cmd/errand builds one: the engine over
// a real store, the v1 API with /mcp mounted on the same mux, the MCP
// handler calling that API in process; served on loopback. The clock is
// fake and the engine's services are not started (the tools drive all).
type node struct {
	t    *testing.T
	st   store.Store
	srv  *httptest.Server
	mcp  *errandmcp.HTTPHandler
	hc   *http.Client
	dev  bool
	fake *clock.Fake
}

func startNode(t *testing.T, dev bool) *node {
	t.Helper()
	n := &node{t: t, st: stores.Open(t, "sqlite"), dev: dev, fake: clock.NewFake(t0)}
	var a auth.Authenticator = auth.Dev{}
	if !dev {
		a = auth.Keys{Store: n.st}
	}
	eng := engine.New(engine.Config{Store: n.st, Clock: n.fake, Logger: quiet, Dev: dev, URLRules: task.URLRules{AllowHTTP: true}})
	var api *httpapi.Server
	n.mcp = errandmcp.NewHTTPHandler(errandmcp.HTTPConfig{Dev: dev, Logger: quiet,
		API: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { api.ServeHTTP(w, r) })})
	// On loopback, as cmd/errand: only loopback Host names are answered.
	api = httpapi.New(httpapi.Config{Engine: eng, Auth: a, Logger: quiet, Hosts: httpapi.LoopbackHosts(""),
		Extra: map[string]http.Handler{"/mcp": n.mcp}})
	n.srv = httptest.NewServer(api)
	n.hc = &http.Client{Transport: &http.Transport{}}
	t.Cleanup(func() {
		n.mcp.Close()
		n.srv.Close()
		n.hc.CloseIdleConnections()
		eng.Stop()
		_ = n.st.Close()
	})
	return n
}

// key stores a key of org acme with grants (ROLE:INSTANCE).
func (n *node) key(grants ...string) string {
	n.t.Helper()
	return stores.Key(n.t, n.st, "acme", t0, grants...)
}

// bearer adds a key to every request.
type bearer struct {
	key  string
	next http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.key != "" {
		r.Header.Set("Authorization", "Bearer "+b.key)
	}
	return b.next.RoundTrip(r)
}

// connect opens an MCP session over streamable HTTP with key ("" none),
// with the SDK's own client.
func (n *node) connect(key string) (*mcp.ClientSession, error) {
	n.t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil)
	return c.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint: n.srv.URL + "/mcp", HTTPClient: &http.Client{Transport: bearer{key: key, next: n.hc.Transport}},
	}, nil)
}

func (n *node) session(key string) *session {
	n.t.Helper()
	cs, err := n.connect(key)
	if err != nil {
		n.t.Fatalf("connect: %v", err)
	}
	n.t.Cleanup(func() { _ = cs.Close() })
	return &session{t: n.t, cs: cs}
}

// session is an MCP client session under test.
type session struct {
	t  *testing.T
	cs *mcp.ClientSession
	// called records the tools called, to check every tool was.
	called map[string]bool
}

// tools lists the session's tool names, sorted.
func (s *session) tools() []string {
	s.t.Helper()
	res, err := s.cs.ListTools(context.Background(), nil)
	if err != nil {
		s.t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	return names
}

// call calls a tool; it fails the test on a protocol error.
func (s *session) call(name string, args any) *mcp.CallToolResult {
	s.t.Helper()
	if s.called == nil {
		s.called = map[string]bool{}
	}
	s.called[name] = true
	res, err := s.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		s.t.Fatalf("%s: protocol error %v", name, err)
	}
	return res
}

// ok calls a tool that must succeed and decodes its structured output
// into out (when not nil); it returns the summary.
func (s *session) ok(name string, args any, out any) string {
	s.t.Helper()
	res := s.call(name, args)
	if res.IsError {
		s.t.Fatalf("%s(%v): tool error %s", name, args, text(res))
	}
	if out != nil {
		raw, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(raw, out); err != nil {
			s.t.Fatalf("%s: structured output %s: %v", name, raw, err)
		}
	}
	if len(res.Content) != 2 {
		s.t.Fatalf("%s: want a summary and the JSON, got %d contents", name, len(res.Content))
	}
	var j any
	if err := json.Unmarshal([]byte(res.Content[1].(*mcp.TextContent).Text), &j); err != nil || !reflect.DeepEqual(j, res.StructuredContent) {
		s.t.Fatalf("%s: the JSON content %v differs from the structured output %v (%v)", name, j, res.StructuredContent, err)
	}
	return res.Content[0].(*mcp.TextContent).Text
}

// refused calls a tool that must fail with code and returns the error's
// data (code, message, status, id).
func (s *session) refused(name string, args any, code string) map[string]any {
	s.t.Helper()
	res := s.call(name, args)
	if !res.IsError {
		s.t.Fatalf("%s(%v): want %s, it succeeded: %s", name, args, code, text(res))
	}
	data, _ := res.Meta[errandmcp.ErrorMetaKey].(map[string]any)
	if data == nil || data["code"] != code {
		s.t.Fatalf("%s(%v): want %s, got %v: %s", name, args, code, data, text(res))
	}
	if txt := text(res); len(txt) < len(code) || txt[:len(code)] != code || !strings.Contains(txt, "\nNext: ") {
		s.t.Fatalf("%s: the error text does not start with the code and say what to do next: %q", name, txt)
	}
	return data
}

func text(res *mcp.CallToolResult) string {
	if len(res.Content) == 0 {
		return ""
	}
	t, _ := res.Content[0].(*mcp.TextContent)
	if t == nil {
		return ""
	}
	return t.Text
}
