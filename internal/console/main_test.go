package console_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/errandhq/errand/client"
	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/auth"
	"github.com/errandhq/errand/internal/clock"
	"github.com/errandhq/errand/internal/deliver"
	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/node"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
	"github.com/errandhq/errand/internal/testkit"
	"github.com/errandhq/errand/internal/testkit/stores"
)

// TestMain runs the tests, fails on a leaked goroutine, and says so when
// the browser test was skipped for want of a browser.
func TestMain(m *testing.M) {
	code := testkit.Run(m, "internal/console")
	if msg := browserSkipped.Load(); msg != nil {
		testkit.Note("note: internal/console: " + *msg + "\n")
	}
	os.Exit(code)
}

// env is a real errand node (a real SQLite file, the engine started) served
// over HTTP on loopback, in serve mode with API keys unless dev.
//
// The node runs on a fake clock that tests move (the live counts' stream
// paces itself on it), except under the browser test: a real browser
// lives in real time (a page that reloads itself, a stream it reads), so
// that node runs on the real clock. No test waits on a duration: each
// waits on what the page or the stream shows, on a sleeper of the fake
// clock, or on the engine's outcome signal.
type env struct {
	t   testing.TB
	srv *httptest.Server
	n   *node.Node
	st  store.Store
	dev bool
	// clock is the node's fake clock (nil with envOptions.realClock).
	clock *clock.Fake
	org   string
	full  string // a key with full:* of org
	api   *client.Client
	// outcomes reports each attempt outcome the engine stores.
	outcomes *engine.OutcomeWatch
	// flaky fails its first call and succeeds after: a task of queue
	// "flaky" fails at once (maxAttempts 1) and a replay succeeds.
	flakyCalls atomic.Int64
}

type envOptions struct {
	dev       bool
	tls       bool
	realClock bool
	// store, when set, is the node's store (the env closes it), and the
	// node is told other nodes share it: SQLite otherwise.
	store store.Store
}

// T0 is where the fake clock starts.
var T0 = time.UnixMilli(1_790_000_000_000)

func newEnv(t testing.TB, o envOptions) *env {
	t.Helper()
	e := &env{t: t, dev: o.dev, org: "acme"}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	e.st = o.store
	if e.st == nil {
		e.st = stores.Open(t, "sqlite")
	}
	fns := &deliver.Functions{}
	if err := fns.Handle("app/flaky", func(context.Context, *task.Task) (json.RawMessage, error) {
		if e.flakyCalls.Add(1) == 1 {
			return nil, errors.New("boom <b>not bold</b>")
		}
		return json.RawMessage(`{"ok":true}`), nil
	}); err != nil {
		t.Fatal(err)
	}
	var clk clock.Clock = clock.Real{}
	if !o.realClock {
		e.clock = clock.NewFake(T0)
		clk = e.clock
	}
	e.n = node.New(node.Config{Store: e.st, Logger: log, Dev: o.dev, Functions: fns, Clock: clk, Shared: o.store != nil})
	e.outcomes = engine.WatchOutcomes(e.n.Engine)
	if err := e.n.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	var a auth.Authenticator = auth.Keys{Store: e.st}
	if o.dev {
		a, e.org = auth.Dev{}, auth.DevOrg
	}
	h := e.n.Handler(node.HandlerConfig{Auth: a})
	if o.tls {
		e.srv = httptest.NewTLSServer(h)
	} else {
		e.srv = httptest.NewServer(h)
	}
	t.Cleanup(func() {
		e.n.CloseStreams()
		e.srv.Close()
		e.n.Close()
		_ = e.st.Close()
	})
	if !o.dev {
		e.full = e.key(e.org, "full:*")
	}
	var err error
	e.api, err = client.New(e.srv.URL, client.Options{APIKey: e.full, HTTPClient: e.srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// key makes an API key of org with grants (ROLE:INSTANCE).
func (e *env) key(org string, grants ...string) string {
	e.t.Helper()
	var gs []store.Grant
	for _, g := range grants {
		pg, err := auth.ParseGrant(g)
		if err != nil {
			e.t.Fatal(err)
		}
		gs = append(gs, pg)
	}
	secret, k, err := auth.NewKey(org, gs, time.Now())
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.st.KeyCreate(context.Background(), k); err != nil {
		e.t.Fatal(err)
	}
	return secret
}

// revoke revokes the key whose secret is given.
func (e *env) revoke(secret string) {
	e.t.Helper()
	k, err := e.st.KeyByDigest(context.Background(), auth.Digest(secret))
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.st.KeyRevoke(context.Background(), store.KeyRef{Org: k.Org, ID: k.ID}, time.Now().UnixMilli()); err != nil {
		e.t.Fatal(err)
	}
}

// fixture makes instance jobs with a pull queue "pull" and a push queue
// "flaky" (maxAttempts 1) whose target is app/flaky.
func (e *env) fixture() {
	e.t.Helper()
	ctx := context.Background()
	if _, err := e.api.CreateInstance(ctx, "jobs"); err != nil {
		e.t.Fatal(err)
	}
	pull := errandapi.ModePull
	if _, err := e.api.CreateQueue(ctx, "jobs", "pull", errandapi.QueueRequest{Mode: &pull}); err != nil {
		e.t.Fatal(err)
	}
	one := 1
	if _, err := e.api.CreateQueue(ctx, "jobs", "flaky", errandapi.QueueRequest{MaxAttempts: &one,
		Target: errandapi.Value(errandapi.Target{Function: "app/flaky"})}); err != nil {
		e.t.Fatal(err)
	}
}

// add adds a task to queue of jobs and returns its id.
func (e *env) add(queue string, nt errandapi.NewTask) string {
	e.t.Helper()
	r, err := e.api.AddTask(context.Background(), "jobs", queue, nt)
	if err != nil {
		e.t.Fatal(err)
	}
	return r.ID
}

// leased adds a task to the pull queue and leases it: it is running.
func (e *env) leased() string {
	e.t.Helper()
	id := e.add("pull", errandapi.NewTask{Payload: json.RawMessage(`{"n":1}`)})
	n := 1
	got, err := e.api.Lease(context.Background(), "jobs", "pull", errandapi.LeaseRequest{Count: &n})
	if err != nil || len(got) != 1 || got[0].ID != id {
		e.t.Fatalf("lease: %v %+v", err, got)
	}
	return id
}

// failed adds a task to queue flaky and waits until its one attempt
// failed.
func (e *env) failed() string {
	e.t.Helper()
	id := e.add("flaky", errandapi.NewTask{Payload: json.RawMessage(`{"kind":"receipt"}`)})
	e.waitState(id, errandapi.StateFailed)
	return id
}

// waitState reads task id through the API until it is in state, and
// reads it again only after the engine stores the next attempt outcome (a
// test signal): the node's services run on their own goroutines.
func (e *env) waitState(id string, want errandapi.State) *errandapi.Task {
	e.t.Helper()
	var got *errandapi.Task
	e.await(func() bool {
		var err error
		if got, err = e.api.GetTask(context.Background(), "jobs", id); err != nil {
			e.t.Fatal(err)
		}
		return got.State == want
	}, func() string { return fmt.Sprintf("task %s is %s, want %s", id, got.State, want) })
	return got
}

// await checks done until it holds, checking again after each attempt
// outcome the engine stores, for up to a minute; why says what is missing.
func (e *env) await(done func() bool, why func() string) {
	e.t.Helper()
	for {
		seen := e.outcomes.Count()
		if done() {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		_, err := e.outcomes.After(ctx, seen)
		cancel()
		if err != nil {
			e.t.Fatal(why())
		}
	}
}

// user is a browser without JavaScript: a cookie jar, redirects not
// followed (the tests look at them).
type user struct {
	e  *env
	hc *http.Client
}

func (e *env) user() *user {
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar, Transport: e.srv.Client().Transport,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return &user{e: e, hc: hc}
}

// eventNames opens a server-sent event stream at path and returns a
// function that reads the name of its next event (the stream is closed at
// the test's end).
func (u *user) eventNames(path string) func() string {
	t := u.e.t
	resp, err := u.hc.Get(u.e.srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	events := bufio.NewReader(resp.Body)
	return func() string {
		t.Helper()
		for {
			line, err := events.ReadString('\n')
			if err != nil {
				t.Fatalf("stream ended: %v", err)
			}
			if name, ok := strings.CutPrefix(strings.TrimRight(line, "\n"), "event: "); ok {
				return name
			}
		}
	}
}

// page is an answer of the console.
type page struct {
	status int
	header http.Header
	body   string
}

func (u *user) get(path string) page {
	u.e.t.Helper()
	resp, err := u.hc.Get(u.e.srv.URL + path)
	if err != nil {
		u.e.t.Fatal(err)
	}
	return read(u.e.t, resp)
}

func (u *user) post(path string, form url.Values) page {
	u.e.t.Helper()
	resp, err := u.hc.PostForm(u.e.srv.URL+path, form)
	if err != nil {
		u.e.t.Fatal(err)
	}
	return read(u.e.t, resp)
}

func read(t testing.TB, resp *http.Response) page {
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return page{status: resp.StatusCode, header: resp.Header, body: string(raw)}
}

// login logs u in with key and checks it lands on the instances.
func (u *user) login(key string) {
	u.e.t.Helper()
	p := u.post("/console/login", url.Values{"key": {key}})
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/console/" {
		u.e.t.Fatalf("login: %d %s", p.status, p.header.Get("Location"))
	}
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf is the token of the forms of the page at path.
func (u *user) csrf(path string) string {
	u.e.t.Helper()
	p := u.get(path)
	m := csrfRE.FindStringSubmatch(p.body)
	if m == nil {
		u.e.t.Fatalf("no CSRF token on %s (%d)", path, p.status)
	}
	return m[1]
}

func (p page) want(t testing.TB, status int, contains ...string) page {
	t.Helper()
	if p.status != status {
		t.Fatalf("status %d, want %d:\n%s", p.status, status, p.body)
	}
	for _, s := range contains {
		if !strings.Contains(p.body, s) {
			t.Fatalf("page lacks %q:\n%s", s, p.body)
		}
	}
	return p
}

func (p page) lacks(t testing.TB, absent ...string) page {
	t.Helper()
	for _, s := range absent {
		if strings.Contains(p.body, s) {
			t.Fatalf("page has %q:\n%s", s, p.body)
		}
	}
	return p
}
