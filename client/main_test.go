package client_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/errandhq/errand/client"
	"github.com/errandhq/errand/internal/auth"
	"github.com/errandhq/errand/internal/clock"
	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/httpapi"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
	"github.com/errandhq/errand/internal/testkit"
	"github.com/errandhq/errand/internal/testkit/stores"
)

func TestMain(m *testing.M) { testkit.Main(m, "client") }

// t0 is where the fake clock starts.
var t0 = time.UnixMilli(1_790_000_000_000)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// env is the real server (httpapi over the engine over a real store) on
// loopback, with a fake clock and the engine's services not started, and a
// client of it whose waits between tries advance the fake clock.
type env struct {
	t     *testing.T
	st    store.Store
	eng   *engine.Engine
	clock *clock.Fake
	srv   *httptest.Server
	hc    *http.Client
	c     *client.Client

	mu     sync.Mutex
	routes map[string]int // "METHOD /pattern" → calls served
	waits  []time.Duration
}

// options of start.
type options struct {
	kind  string // a stores.Kinds
	serve bool   // API keys (auth.Keys) instead of errand dev's implicit caller
	// wrap puts a handler in front of the API (a server that fails first).
	wrap func(api http.Handler) http.Handler
	key  string
	// st is an open store to serve instead of a fresh one of kind.
	st store.Store
	// ops configures the operations API's jobs (backups).
	ops engine.OpsConfig
}

func start(t *testing.T, o options) *env {
	t.Helper()
	if o.kind == "" {
		o.kind = "sqlite"
	}
	e := &env{t: t, st: o.st, clock: clock.NewFake(t0), routes: map[string]int{}}
	if e.st == nil {
		e.st = stores.Open(t, o.kind)
	}
	var a auth.Authenticator = auth.Dev{}
	if o.serve {
		a = auth.Keys{Store: e.st}
	}
	e.eng = engine.New(engine.Config{Store: e.st, Clock: e.clock, Logger: quiet, Dev: !o.serve, URLRules: task.URLRules{AllowHTTP: true}, Ops: o.ops})
	var api http.Handler = httpapi.New(httpapi.Config{Engine: e.eng, Auth: a, Logger: quiet})
	inner := api
	api = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inner.ServeHTTP(w, r)
		e.mu.Lock()
		e.routes[r.Pattern]++
		e.mu.Unlock()
	})
	if o.wrap != nil {
		api = o.wrap(api)
	}
	e.srv = httptest.NewServer(api)
	e.hc = &http.Client{Transport: &http.Transport{}}
	t.Cleanup(func() {
		e.srv.Close()
		e.hc.CloseIdleConnections()
		e.eng.Stop()
		_ = e.st.Close()
	})
	e.c = e.client(o.key, client.RetryPolicy{})
	return e
}

// client is a client of e's server with key and policy whose waits
// advance the fake clock (and are recorded) instead of sleeping.
func (e *env) client(key string, p client.RetryPolicy) *client.Client {
	e.t.Helper()
	c, err := client.New(e.srv.URL, client.Options{APIKey: key, HTTPClient: e.hc, Retry: p})
	if err != nil {
		e.t.Fatal(err)
	}
	client.SetSleep(c, func(ctx context.Context, d time.Duration) error {
		e.mu.Lock()
		e.waits = append(e.waits, d)
		e.mu.Unlock()
		e.clock.Advance(d)
		return ctx.Err()
	})
	return c
}

// key stores a new API key of org with grants (ROLE:INSTANCE) and returns
// its secret.
func (e *env) key(org string, grants ...string) string {
	e.t.Helper()
	return stores.Key(e.t, e.st, org, e.clock.Now(), grants...)
}

// recordedWaits returns the waits between tries so far.
func (e *env) recordedWaits() []time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]time.Duration(nil), e.waits...)
}

// eachStore runs fn on every store kind this machine has.
func eachStore(t *testing.T, fn func(t *testing.T, kind string)) {
	for _, kind := range stores.Kinds {
		t.Run(kind, func(t *testing.T) { fn(t, kind) })
	}
}

// must holds a call's answer until of checks its error:
// must(c.GetTask(…)).of(t).
func must[T any](v T, err error) answer[T] { return answer[T]{v, err} }

type answer[T any] struct {
	v   T
	err error
}

// of fails the test on the call's error and returns its value.
func (a answer[T]) of(t *testing.T) T {
	t.Helper()
	if a.err != nil {
		t.Fatal(a.err)
	}
	return a.v
}
