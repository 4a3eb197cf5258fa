package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/errandhq/errand/internal/auth"
	"github.com/errandhq/errand/internal/clock"
	"github.com/errandhq/errand/internal/deliver"
	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/httpapi"
	"github.com/errandhq/errand/internal/id"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/store/sqlite"
	"github.com/errandhq/errand/internal/task"
	"github.com/errandhq/errand/internal/testkit/stores"
)

// served is the API as `errand serve` runs it: API keys (auth.Keys over the
// real SQLite store), no instance made on first use; a fake clock and the
// engine's services not started.
type served struct {
	*bundle
	st *sqlite.Store
}

func setupServe(t testing.TB) *served {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "errand.db"), sqlite.Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	fc := clock.NewFake(T0)
	eng := engine.New(engine.Config{Store: st, Clock: fc, Logger: log, URLRules: task.URLRules{AllowHTTP: true}})
	workers := &deliver.Workers{}
	srv := httptest.NewServer(httpapi.New(httpapi.Config{Engine: eng, Auth: auth.Keys{Store: st}, Logger: log, Workers: workers}))
	client := checkedClient(t)
	t.Cleanup(func() {
		workers.CloseAll("the test ended")
		srv.Close()
		client.CloseIdleConnections()
		eng.Stop()
		_ = st.Close()
	})
	return &served{bundle: &bundle{t: t, srv: srv, eng: eng, clock: fc, client: client, outcomes: engine.WatchOutcomes(eng)}, st: st}
}

// key stores a new key of org with grants (ROLE:INSTANCE) and returns its
// secret.
func (s *served) key(org string, grants ...string) string {
	s.t.Helper()
	return stores.Key(s.t, s.st, org, s.clock.Now(), grants...)
}

// revokedKey stores a key with grants and revokes it.
func (s *served) revokedKey(org string, grants ...string) string {
	s.t.Helper()
	secret := s.key(org, grants...)
	s.revoke(secret)
	return secret
}

// revoke revokes the stored key whose secret is secret.
func (s *served) revoke(secret string) {
	s.t.Helper()
	k, err := s.st.KeyByDigest(context.Background(), auth.Digest(secret))
	if err != nil {
		s.t.Fatal(err)
	}
	if err := s.st.KeyRevoke(context.Background(), store.KeyRef{Org: k.Org, ID: k.ID}, s.clock.Now().UnixMilli()); err != nil {
		s.t.Fatal(err)
	}
}

// caller sends requests with one Authorization header ("" for none).
type caller struct {
	b     *bundle
	authz string
}

func (b *bundle) as(key string) caller { return caller{b: b, authz: "Bearer " + key} }

func (b *bundle) header(authz string) caller { return caller{b: b, authz: authz} }

func (c caller) do(method, path string, body any) res {
	c.b.t.Helper()
	r, _ := c.doH(method, path, body)
	return r
}

// doH answers the decoded response and its headers.
func (c caller) doH(method, path string, body any) (res, http.Header) {
	c.b.t.Helper()
	var rd io.Reader
	switch v := body.(type) {
	case nil:
	case string:
		if v != "" {
			rd = strings.NewReader(v)
		}
	default:
		buf, _ := json.Marshal(v)
		rd = bytes.NewReader(buf)
	}
	req, _ := http.NewRequest(method, c.b.srv.URL+path, rd)
	req.Header.Set("Content-Type", "application/json")
	if c.authz != "" {
		req.Header.Set("Authorization", c.authz)
	}
	resp, err := c.b.client.Do(req)
	if err != nil {
		c.b.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	r := res{status: resp.StatusCode, raw: raw}
	if len(raw) > 0 && raw[0] == '{' {
		if err := json.Unmarshal(raw, &r.body); err != nil {
			c.b.t.Fatalf("%s %s: bad JSON %q", method, path, raw)
		}
	}
	return r, resp.Header
}

// routeCall is a request that succeeds on each route of httpapi.Routes
// when the caller holds the route's grant, in a fixture's org: {instance}
// is jobs, {queue} the pull queue q, and {id} the fixture task named by id.
type routeCall struct {
	query string // added to the path
	id    string // t1 (scheduled), t2 (leased), t3 (failed), r1 (a hook rule)
	body  string // {lease} is t2's lease id
	want  int
}

var routeCalls = map[string]routeCall{
	"GET /v1/instances":                                     {want: 200},
	"POST /v1/instances":                                    {body: `{"name":"fresh"}`, want: 201},
	"DELETE /v1/instances/{instance}":                       {query: "?confirm=true", want: 200},
	"GET /v1/keys/self":                                     {want: 200},
	"GET /v1/tasks/{instance}/queues":                       {want: 200},
	"POST /v1/tasks/{instance}/queues":                      {body: `{"name":"q2","mode":"pull"}`, want: 201},
	"GET /v1/tasks/{instance}/queues/{queue}":               {want: 200},
	"GET /v1/tasks/{instance}/queues/{queue}/activity":      {want: 200},
	"PATCH /v1/tasks/{instance}/queues/{queue}":             {body: `{"maxAttempts":3}`, want: 200},
	"DELETE /v1/tasks/{instance}/queues/{queue}":            {query: "?confirm=true", want: 200},
	"POST /v1/tasks/{instance}/queues/{queue}/purge":        {query: "?confirm=true", want: 200},
	"POST /v1/tasks/{instance}/queues/{queue}/tasks":        {body: `{"payload":{"n":1}}`, want: 201},
	"GET /v1/tasks/{instance}/queues/{queue}/tasks":         {want: 200},
	"POST /v1/tasks/{instance}/queues/{queue}/lease":        {body: `{"count":1}`, want: 200},
	"POST /v1/tasks/{instance}/queues/{queue}/ack":          {body: `{"acks":[{"id":"{t2}","leaseId":"{lease}"}]}`, want: 200},
	"GET /v1/tasks/{instance}/tasks/{id}":                   {id: "t1", want: 200},
	"DELETE /v1/tasks/{instance}/tasks/{id}":                {id: "t3", want: 200},
	"PATCH /v1/tasks/{instance}/tasks/{id}":                 {id: "t1", body: `{"priority":3}`, want: 200},
	"POST /v1/tasks/{instance}/tasks/{id}/run":              {id: "t1", want: 200},
	"POST /v1/tasks/{instance}/tasks/{id}/cancel":           {id: "t1", want: 200},
	"POST /v1/tasks/{instance}/tasks/{id}/retry":            {id: "t3", want: 200},
	"POST /v1/tasks/{instance}/tasks/{id}/ack":              {id: "t2", body: `{"leaseId":"{lease}"}`, want: 200},
	"POST /v1/tasks/{instance}/tasks/{id}/extend":           {id: "t2", body: `{"leaseId":"{lease}","leaseSeconds":30}`, want: 200},
	"POST /v1/tasks/{instance}/tasks/{id}/release":          {id: "t2", body: `{"leaseId":"{lease}"}`, want: 200},
	"GET /v1/tasks/{instance}/settings":                     {want: 200},
	"PATCH /v1/tasks/{instance}/settings":                   {body: `{"retentionDays":3}`, want: 200},
	"GET /v1/tasks/{instance}/settings/webhook-key":         {want: 200},
	"POST /v1/tasks/{instance}/settings/webhook-key/rotate": {want: 200},
	"GET /v1/tasks/{instance}/triggers":                     {want: 200},
	"GET /v1/tasks/{instance}/usage":                        {want: 200},
	"GET /v1/tasks/{instance}/functions":                    {want: 200},
	"POST /v1/tasks/{instance}/triggers":                    {body: `{"queue":"jobs/q","schedule":{"cron":"@hourly"}}`, want: 201},
	"GET /v1/tasks/{instance}/triggers/{id}":                {id: "r1", want: 200},
	"PATCH /v1/tasks/{instance}/triggers/{id}":              {id: "r1", body: `{"enabled":false}`, want: 200},
	"DELETE /v1/tasks/{instance}/triggers/{id}":             {id: "r1", want: 200},
	// Without Upgrade: websocket the worker route refuses, after the grant
	// check (workers_test.go connects for real).
	"GET /v1/workers/{instance}": {want: 400},
	// A subscription streams until the subscriber goes: the call resumes
	// after an event id the channel never gave, refused after the grant
	// check (channels_test.go subscribes for real).
	"GET /v1/channels/{instance}/{channel}":        {query: "?since=99", want: 400},
	"POST /v1/channels/{instance}/{channel}/token": {want: 201},
}

// TestRouteCallsCoverTheRouter: every route of the router's table has its
// call in routeCalls and no call names a route that is gone, so the
// tables below cover every route.
func TestRouteCallsCoverTheRouter(t *testing.T) {
	t.Parallel()
	var routes []string
	for _, rt := range httpapi.Routes {
		routes = append(routes, rt.Method+" "+rt.Pattern)
	}
	sameRouteKeys(t, "routeCalls", routes, routeCalls)
}

// fill puts values into a route pattern.
func fill(pattern, instance, queue, taskID string) string {
	return strings.NewReplacer("{instance}", instance, "{queue}", queue, "{id}", taskID, "{channel}", "room-1").Replace(pattern)
}

// fixture is one org's instance jobs with a pull queue q (maxAttempts 1)
// holding a scheduled task t1, a leased task t2 and a failed task t3, plus
// an instance other.
type fixture struct {
	*served
	admin string
	tasks map[string]string // t1, t2, t3 → id
	lease string            // t2's lease id
	rule  string            // r1: a hook rule adding to q
}

func newFixture(t *testing.T, org string) *fixture {
	t.Helper()
	return addFixture(setupServe(t), org)
}

// addFixture builds the fixture of org in s.
func addFixture(s *served, org string) *fixture {
	t := s.t
	t.Helper()
	f := &fixture{served: s, admin: s.key(org, "full:*"), tasks: map[string]string{}}
	a := f.as(f.admin)
	a.do("POST", "/v1/instances", `{"name":"jobs"}`).want(t, 201, "")
	a.do("POST", "/v1/instances", `{"name":"other"}`).want(t, 201, "")
	a.do("POST", "/v1/tasks/jobs/queues", `{"name":"q","mode":"pull","maxAttempts":1}`).want(t, 201, "")
	lease := func() (string, string) {
		l := a.do("POST", "/v1/tasks/jobs/queues/q/lease", `{"count":1}`).want(t, 200, "").list("tasks")
		if len(l) != 1 {
			t.Fatalf("lease: %v", l)
		}
		m := l[0].(map[string]any)
		return m["id"].(string), m["leaseId"].(string)
	}
	a.do("POST", "/v1/tasks/jobs/queues/q/tasks", `{"payload":3}`).want(t, 201, "")
	t3, l3 := lease()
	if st := a.do("POST", "/v1/tasks/jobs/tasks/"+t3+"/release", fmt.Sprintf(`{"leaseId":%q,"error":"boom"}`, l3)).want(t, 200, "").obj("task")["state"]; st != "failed" {
		t.Fatalf("t3 is %v, want failed", st)
	}
	a.do("POST", "/v1/tasks/jobs/queues/q/tasks", `{"payload":2}`).want(t, 201, "")
	f.tasks["t2"], f.lease = lease()
	r := a.do("POST", "/v1/tasks/jobs/queues/q/tasks", `{"payload":1,"delay":60}`).want(t, 201, "")
	f.tasks["t1"] = r.list("tasks")[0].(map[string]any)["id"].(string)
	f.tasks["t3"] = t3
	f.rule = a.do("POST", "/v1/tasks/jobs/triggers", `{"queue":"jobs/q","hook":{}}`).want(t, 201, "").obj("trigger")["id"].(string)
	return f
}

// request returns the path and body of rt's call in f.
func (f *fixture) request(rt httpapi.Route, instance string) (string, string) {
	c := routeCalls[rt.Method+" "+rt.Pattern]
	id := f.tasks[c.id]
	if c.id == "r1" {
		id = f.rule
	}
	return fill(rt.Pattern, instance, "q", id) + c.query, strings.NewReplacer("{lease}", f.lease, "{t2}", f.tasks["t2"]).Replace(c.body)
}

// TestGrantsByRoute walks the router's table: for every route, no key, a
// revoked, unknown or malformed key is 401; a grant one below the route's
// role on the instance is 403; a grant only on another instance is 404
// exactly like a missing instance; the route's own role succeeds.
func TestGrantsByRoute(t *testing.T) {
	t.Parallel()
	for _, rt := range httpapi.Routes {
		name := rt.Method + " " + rt.Pattern
		c, ok := routeCalls[name]
		if !ok {
			t.Errorf("no call for %s", name)
			continue
		}
		t.Run(strings.ReplaceAll(name, "/", "_"), func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, "acme")
			path, body := f.request(rt, "jobs")
			unknown, _, _ := auth.NewKey("acme", []store.Grant{{Instance: "*", Role: "full"}}, T0)
			for what, authz := range map[string]string{
				"no key":            "",
				"revoked key":       "Bearer " + f.revokedKey("acme", "full:*"),
				"unknown key":       "Bearer " + unknown,
				"malformed key":     "Bearer not-a-key",
				"key with a suffix": "Bearer " + f.admin + "0",
				"scheme only":       "Bearer",
				"basic scheme":      "Basic " + f.admin,
				"no scheme":         f.admin,
			} {
				r, h := f.header(authz).doH(rt.Method, path, body)
				r.want(t, 401, "UNAUTHENTICATED")
				if !strings.HasPrefix(h.Get("WWW-Authenticate"), "Bearer") {
					t.Errorf("%s: 401 without WWW-Authenticate: Bearer", what)
				}
			}

			switch {
			case rt.Role == auth.RoleNone && rt.Method == "POST": // create: full on the new name
				f.as(f.key("acme", "write:*")).do(rt.Method, path, body).want(t, 403, "PERMISSION_DENIED")
				f.as(f.key("acme", "full:jobs")).do(rt.Method, path, body).want(t, 403, "PERMISSION_DENIED")
				f.as(f.key("acme", "full:fresh")).do(rt.Method, path, body).want(t, c.want, "")
				return
			case rt.Role == auth.RoleNone && rt.Pattern == "/v1/keys/self": // any key reads its own grants
				r := f.as(f.key("acme", "read:jobs")).do(rt.Method, path, body).want(t, c.want, "")
				if l := r.list("grants"); r.body["org"] != "acme" || len(l) != 1 || l[0].(map[string]any)["role"] != "read" {
					t.Fatalf("read:jobs reads itself as %s", r.raw)
				}
				return
			case rt.Role == auth.RoleNone: // list: only the instances the key has a grant on
				r := f.as(f.key("acme", "read:jobs")).do(rt.Method, path, body).want(t, c.want, "")
				if l := r.list("instances"); len(l) != 1 || l[0].(map[string]any)["name"] != "jobs" {
					t.Fatalf("read:jobs lists %s", r.raw)
				}
				return
			}

			// A grant one below, on the instance or on every instance: 403.
			if below := rt.Role - 1; below > auth.RoleNone {
				for _, g := range []string{below.String() + ":jobs", below.String() + ":*", below.String() + ":*,full:other"} {
					r := f.as(f.key("acme", strings.Split(g, ",")...)).do(rt.Method, path, body).want(t, 403, "PERMISSION_DENIED")
					if !strings.Contains(r.message(), rt.Role.String()) {
						t.Errorf("403 does not name the grant needed: %s", r.message())
					}
				}
			}
			// A grant only on another instance: exactly a missing instance.
			missingPath, _ := f.request(rt, "nope")
			missing := f.as(f.admin).do(rt.Method, missingPath, body).want(t, 404, "NOT_FOUND")
			foreign := f.as(f.key("acme", "full:other")).do(rt.Method, path, body).want(t, 404, "NOT_FOUND")
			// The same bytes but for the name the caller gave.
			if !bytes.Equal(bytes.ReplaceAll(foreign.raw, []byte(`\"jobs\"`), []byte(`\"nope\"`)), missing.raw) {
				t.Fatalf("no grant on the instance answers %s; a missing instance %s", foreign.raw, missing.raw)
			}
			// The route's own role on the instance: the call succeeds.
			f.as(f.key("acme", rt.Role.String()+":jobs")).do(rt.Method, path, body).want(t, c.want, "")
		})
	}
}

// TestForeignIDLooksMissing: for every route of the router's table that
// takes a task id, another organization's real task id (in each state, with
// its real lease id in the body) answers exactly like an id that does not
// exist: same status, same body bytes. And the foreign tasks are untouched.
func TestForeignIDLooksMissing(t *testing.T) {
	t.Parallel()
	s := setupServe(t)
	acme := addFixture(s, "acme")
	globex := addFixture(s, "globex")
	g := globex.as(globex.admin)
	before := map[string][]byte{}
	for _, tid := range globex.tasks {
		before[tid] = g.do("GET", "/v1/tasks/jobs/tasks/"+tid, nil).want(t, 200, "").raw
	}
	missingID := id.New(T0)
	n := 0
	for _, rt := range httpapi.Routes {
		if !strings.Contains(rt.Pattern, "{id}") {
			continue
		}
		n++
		c := routeCalls[rt.Method+" "+rt.Pattern]
		body := strings.ReplaceAll(c.body, "{lease}", globex.lease)
		a := acme.as(acme.admin)
		missing := a.do(rt.Method, fill(rt.Pattern, "jobs", "q", missingID)+c.query, body)
		if missing.status != 404 {
			t.Errorf("%s %s with a missing id: %d %s, want 404", rt.Method, rt.Pattern, missing.status, missing.raw)
		}
		ids := maps.Clone(globex.tasks)
		ids["r1"] = globex.rule
		for name, tid := range ids {
			foreign := a.do(rt.Method, fill(rt.Pattern, "jobs", "q", tid)+c.query, body)
			// The same bytes but for the id the caller gave.
			if foreign.status != missing.status || !bytes.Equal(bytes.ReplaceAll(foreign.raw, []byte(tid), []byte(missingID)), missing.raw) {
				t.Errorf("%s %s: another org's %s answers %d %s; a missing id %d %s",
					rt.Method, rt.Pattern, name, foreign.status, foreign.raw, missing.status, missing.raw)
			}
		}
	}
	if n < 7 {
		t.Fatalf("only %d routes take an id", n)
	}
	for tid, raw := range before {
		if after := g.do("GET", "/v1/tasks/jobs/tasks/"+tid, nil).want(t, 200, "").raw; !bytes.Equal(after, raw) {
			t.Errorf("globex's task changed:\n%s\n%s", raw, after)
		}
	}
	g.do("POST", "/v1/tasks/jobs/tasks/"+globex.tasks["t2"]+"/ack", fmt.Sprintf(`{"leaseId":%q}`, globex.lease)).want(t, 200, "")
}

// TestForeignNamesLookMissing: an instance or queue name that exists only
// in another organization answers exactly as before that organization made
// it, on every route that takes it.
func TestForeignNamesLookMissing(t *testing.T) {
	t.Parallel()
	s := setupServe(t)
	acme := addFixture(s, "acme")
	a := acme.as(acme.admin)
	missingID := id.New(T0)
	type probe struct {
		method, path, body string
	}
	var probes []probe
	for _, rt := range httpapi.Routes {
		if !strings.Contains(rt.Pattern, "{instance}") {
			continue
		}
		c := routeCalls[rt.Method+" "+rt.Pattern]
		body := strings.NewReplacer("{lease}", acme.lease, "{t2}", missingID).Replace(c.body)
		probes = append(probes, probe{rt.Method, fill(rt.Pattern, "secret", "q", missingID) + c.query, body})
		if strings.Contains(rt.Pattern, "{queue}") {
			probes = append(probes, probe{rt.Method, fill(rt.Pattern, "jobs", "sq", missingID) + c.query, body})
		}
	}
	answers := make([]res, len(probes))
	for i, p := range probes {
		answers[i] = a.do(p.method, p.path, p.body).want(t, 404, "NOT_FOUND")
	}
	// globex makes the instance secret and the queue sq in its jobs.
	gadmin := s.key("globex", "full:*")
	g := s.as(gadmin)
	g.do("POST", "/v1/instances", `{"name":"secret"}`).want(t, 201, "")
	g.do("POST", "/v1/instances", `{"name":"jobs"}`).want(t, 201, "")
	for _, inst := range []string{"secret", "jobs"} {
		q := map[string]string{"secret": "q", "jobs": "sq"}[inst]
		g.do("POST", "/v1/tasks/"+inst+"/queues", fmt.Sprintf(`{"name":%q,"mode":"pull"}`, q)).want(t, 201, "")
		g.do("POST", "/v1/tasks/"+inst+"/queues/"+q+"/tasks", `[{"payload":1},{"payload":2}]`).want(t, 201, "")
	}
	for i, p := range probes {
		if r := a.do(p.method, p.path, p.body); r.status != answers[i].status || !bytes.Equal(r.raw, answers[i].raw) {
			t.Errorf("%s %s: %d %s once another org has it; %d %s before", p.method, p.path, r.status, r.raw, answers[i].status, answers[i].raw)
		}
	}
}

// TestListsNeverShowForeignRows: two organizations both with jobs see only
// their own instances, queues, counts and tasks.
func TestListsNeverShowForeignRows(t *testing.T) {
	t.Parallel()
	s := setupServe(t)
	acme := addFixture(s, "acme")
	globex := addFixture(s, "globex")
	g := globex.as(globex.admin)
	g.do("POST", "/v1/instances", `{"name":"gonly"}`).want(t, 201, "")
	g.do("POST", "/v1/tasks/jobs/queues", `{"name":"gq","mode":"pull"}`).want(t, 201, "")
	g.do("POST", "/v1/tasks/jobs/queues/q/tasks", `[{"payload":1},{"payload":2},{"payload":3}]`).want(t, 201, "")
	a := acme.as(acme.admin)

	names := func(r res, key, field string) []string {
		var out []string
		for _, x := range r.list(key) {
			out = append(out, x.(map[string]any)[field].(string))
		}
		slices.Sort(out)
		return out
	}
	if got := names(a.do("GET", "/v1/instances", nil).want(t, 200, ""), "instances", "name"); !slices.Equal(got, []string{"jobs", "other"}) {
		t.Errorf("acme's instances: %v", got)
	}
	if got := names(g.do("GET", "/v1/instances", nil).want(t, 200, ""), "instances", "name"); !slices.Equal(got, []string{"gonly", "jobs", "other"}) {
		t.Errorf("globex's instances: %v", got)
	}
	qs := a.do("GET", "/v1/tasks/jobs/queues", nil).want(t, 200, "")
	if got := names(qs, "queues", "name"); !slices.Equal(got, []string{"default", "q"}) {
		t.Errorf("acme's queues: %v", got)
	}
	counts := a.do("GET", "/v1/tasks/jobs/queues/q", nil).want(t, 200, "").obj("queue")["counts"].(map[string]any)
	if counts["scheduled"] != 1.0 || counts["leased"] != 1.0 || counts["failed"] != 1.0 {
		t.Errorf("acme's counts include another org's tasks: %v", counts)
	}
	got := names(a.do("GET", "/v1/tasks/jobs/queues/q/tasks", nil).want(t, 200, ""), "tasks", "id")
	want := []string{acme.tasks["t1"], acme.tasks["t2"], acme.tasks["t3"]}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("acme's tasks %v, want %v", got, want)
	}
	// A key with a grant on jobs only lists jobs.
	if got := names(s.as(s.key("acme", "write:jobs")).do("GET", "/v1/instances", nil).want(t, 200, ""), "instances", "name"); !slices.Equal(got, []string{"jobs"}) {
		t.Errorf("write:jobs lists %v", got)
	}
}

// TestOwnerFieldsRefused: fields naming an owner or a state are refused
// with 400 naming the field, never applied.
func TestOwnerFieldsRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "acme")
	a := f.as(f.admin)
	for _, c := range []struct{ method, path, body, field string }{
		{"POST", "/v1/tasks/jobs/queues/q/tasks", `{"payload":1,"owner":"globex"}`, "owner"},
		{"POST", "/v1/tasks/jobs/queues/q/tasks", `{"payload":1,"org":"globex"}`, "org"},
		{"POST", "/v1/tasks/jobs/queues/q/tasks", `{"payload":1,"state":"succeeded"}`, "state"},
		{"POST", "/v1/tasks/jobs/queues/q/tasks", `[{"payload":1},{"owner":"globex"}]`, "tasks[1].owner"},
		{"POST", "/v1/tasks/jobs/queues/q/tasks", `{"tasks":[{"state":"failed"}]}`, "tasks[0].state"},
		{"POST", "/v1/tasks/jobs/queues", `{"name":"z","mode":"pull","owner":"globex"}`, "owner"},
		{"POST", "/v1/tasks/jobs/queues", `{"name":"z","mode":"pull","org":"globex"}`, "org"},
		{"POST", "/v1/tasks/jobs/queues", `{"name":"z","mode":"pull","state":"paused"}`, "state"},
		{"PATCH", "/v1/tasks/jobs/queues/q", `{"maxAttempts":5,"owner":"globex"}`, "owner"},
		{"PATCH", "/v1/tasks/jobs/queues/q", `{"maxAttempts":5,"org":"globex"}`, "org"},
		{"PATCH", "/v1/tasks/jobs/queues/q", `{"maxAttempts":5,"state":"paused"}`, "state"},
		{"PATCH", "/v1/tasks/jobs/settings", `{"retentionDays":2,"owner":"globex"}`, "owner"},
		{"PATCH", "/v1/tasks/jobs/settings", `{"retentionDays":2,"org":"globex"}`, "org"},
		{"POST", "/v1/instances", `{"name":"z","owner":"globex"}`, "owner"},
		{"POST", "/v1/instances", `{"name":"z","org":"globex"}`, "org"},
		{"POST", "/v1/tasks/jobs/tasks/" + f.tasks["t1"] + "/cancel", `{"state":"cancelled"}`, "state"},
		{"POST", "/v1/tasks/jobs/tasks/" + f.tasks["t2"] + "/ack", `{"leaseId":"x","owner":"globex"}`, "owner"},
	} {
		r := a.do(c.method, c.path, c.body).want(t, 400, "INVALID_ARGUMENT")
		if !strings.HasPrefix(r.message(), c.field+":") {
			t.Errorf("%s %s %s: %q does not name %s", c.method, c.path, c.body, r.message(), c.field)
		}
	}
	// Nothing was applied.
	counts := a.do("GET", "/v1/tasks/jobs/queues/q", nil).want(t, 200, "").obj("queue")
	if counts["maxAttempts"] != 1.0 || counts["counts"].(map[string]any)["scheduled"] != 1.0 {
		t.Errorf("a refused call changed the queue: %v", counts)
	}
	a.do("GET", "/v1/tasks/jobs/queues/z", nil).want(t, 404, "NOT_FOUND")
	a.do("GET", "/v1/tasks/z/settings", nil).want(t, 404, "NOT_FOUND")
	if s := a.do("GET", "/v1/tasks/jobs/settings", nil).obj("settings"); s["retentionDays"] != 7.0 {
		t.Errorf("a refused PATCH changed settings: %v", s)
	}
	if st := a.do("GET", "/v1/tasks/jobs/tasks/"+f.tasks["t1"], nil).obj("task")["state"]; st != "scheduled" {
		t.Errorf("a refused cancel changed the task: %v", st)
	}
}

// TestRateLimit drives an instance's rateLimit with the fake clock: the
// bucket holds one second of calls; past it 429 RATE_LIMITED with
// Retry-After in whole seconds, rounded up; the clock refills it.
func TestRateLimit(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "acme")
	a := f.as(f.admin)
	a.do("PATCH", "/v1/tasks/jobs/settings", `{"rateLimit":3}`).want(t, 200, "")
	get := func() (res, http.Header) { return a.doH("GET", "/v1/tasks/jobs/queues/q", nil) }
	for i := range 3 {
		if r, _ := get(); r.status != 200 {
			t.Fatalf("call %d: %d %s", i, r.status, r.raw)
		}
	}
	r, h := get()
	r.want(t, 429, "RATE_LIMITED")
	if h.Get("Retry-After") != "1" {
		t.Fatalf("Retry-After %q, want 1 (1/3 s rounded up)", h.Get("Retry-After"))
	}
	// Every route of the instance counts, whatever its grant, but reading
	// and changing the settings (the limit itself).
	for _, rt := range httpapi.Routes {
		if rt.Role == auth.RoleNone {
			continue
		}
		path, body := f.request(rt, "jobs")
		if rt.Pattern == "/v1/tasks/{instance}/settings" {
			if rt.Method == "GET" {
				a.do(rt.Method, path, body).want(t, 200, "")
			}
			continue
		}
		a.do(rt.Method, path, body).want(t, 429, "RATE_LIMITED")
	}
	// The limit is per instance and per organization.
	a.do("GET", "/v1/tasks/other/queues", nil).want(t, 200, "")
	g := addFixture(f.served, "globex")
	g.as(g.admin).do("GET", "/v1/tasks/jobs/queues/q", nil).want(t, 200, "")

	// A third of a second gives one call back, no more.
	f.clock.Advance(334 * time.Millisecond)
	if r, _ := get(); r.status != 200 {
		t.Fatalf("after 334 ms: %d %s", r.status, r.raw)
	}
	r, _ = get()
	r.want(t, 429, "RATE_LIMITED")
	// A whole second refills the bucket: three calls again.
	f.clock.Advance(time.Second)
	for i := range 3 {
		if r, _ := get(); r.status != 200 {
			t.Fatalf("after 1 s, call %d: %d", i, r.status)
		}
	}
	r, _ = get()
	r.want(t, 429, "RATE_LIMITED")

	// A slow limit rounds Retry-After up; the settings PATCH is never
	// limited, so a limit set too low can always be raised.
	a.do("PATCH", "/v1/tasks/jobs/settings", `{"rateLimit":0.4}`).want(t, 200, "")
	get()
	r, h = get()
	r.want(t, 429, "RATE_LIMITED")
	if h.Get("Retry-After") != "3" {
		t.Fatalf("Retry-After %q, want 3 (2.5 s rounded up)", h.Get("Retry-After"))
	}
	if !strings.Contains(r.message(), "0.4") {
		t.Errorf("message does not say the limit: %s", r.message())
	}
	// Reading the settings is never limited either for a full key (the
	// limit can be seen), but is for a reader.
	for range 3 {
		a.do("GET", "/v1/tasks/jobs/settings", nil).want(t, 200, "")
	}
	f.as(f.key("acme", "read:jobs")).do("GET", "/v1/tasks/jobs/settings", nil).want(t, 429, "RATE_LIMITED")
	a.do("PATCH", "/v1/tasks/jobs/settings", `{"rateLimit":null}`).want(t, 200, "")
	for range 20 {
		if r, _ := get(); r.status != 200 {
			t.Fatalf("unlimited: %d", r.status)
		}
	}

	// A change made by another node (straight into the store) applies once
	// the node's copy of the setting is a second old.
	if _, err := f.st.InstanceUpdate(t.Context(), store.InstanceRef{Org: "acme", Name: "jobs"}, func(i *task.Instance) error {
		i.Settings.RateLimit = 1
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		get()
	}
	f.clock.Advance(time.Second)
	get()
	r, _ = get()
	r.want(t, 429, "RATE_LIMITED")
}

// TestWebhookKeyNeedsFull: in serve mode only the full grant reveals or
// rotates the webhook key; a new instance has a random whsec_ key.
func TestWebhookKeyNeedsFull(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "acme")
	w := f.as(f.key("acme", "write:*"))
	w.do("GET", "/v1/tasks/jobs/settings/webhook-key", nil).want(t, 403, "PERMISSION_DENIED")
	w.do("POST", "/v1/tasks/jobs/settings/webhook-key/rotate", nil).want(t, 403, "PERMISSION_DENIED")
	a := f.as(f.admin)
	k1 := a.do("GET", "/v1/tasks/jobs/settings/webhook-key", nil).want(t, 200, "").body["webhookKey"].(string)
	k2 := a.do("GET", "/v1/tasks/other/settings/webhook-key", nil).want(t, 200, "").body["webhookKey"].(string)
	if !strings.HasPrefix(k1, "whsec_") || len(k1) != len("whsec_")+44 || k1 == k2 {
		t.Fatalf("webhook keys %q %q", k1, k2)
	}
}

// BenchmarkKeysAuthenticate is what a key costs each call: the header
// parsed, the digest looked up in SQLite (no cache), the principal built.
func BenchmarkKeysAuthenticate(b *testing.B) {
	s := setupServe(b)
	key := s.key("acme", "full:*", "read:jobs")
	a := auth.Keys{Store: s.st}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		r := httptest.NewRequest("GET", "/v1/instances", nil)
		r.Header.Set("Authorization", "Bearer "+key)
		for pb.Next() {
			if _, err := a.Authenticate(r); err != nil {
				b.Fatal(err)
			}
		}
	})
}
