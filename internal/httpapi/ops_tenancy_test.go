package httpapi_test

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/errandhq/errand/internal/httpapi"
	"github.com/errandhq/errand/internal/id"
)

// opsRouteCall is a request that succeeds (or is at least reached) on a
// route of httpapi.OpsRoutes in an opsFixture's org; {id} is the fixture's
// PENDING dlq.replay job on jobs, or for /api/instances/{id}/backup the
// instance jobs. grant is the smallest grant that reaches the route.
type opsRouteCall struct {
	body  string
	grant string
	want  int
	code  string // the answer's code when want is a refusal
}

var opsRouteCalls = map[string]opsRouteCall{
	"POST /api/tasks": {body: `{"kind":"dlq.replay","idempotency_key":"k2","payload":{"instance":"jobs","queue":"q"}}`,
		grant: "full:jobs", want: 201},
	"GET /api/tasks":              {grant: "read:jobs", want: 200},
	"GET /api/tasks/{id}":         {grant: "full:jobs", want: 200},
	"POST /api/tasks/{id}/cancel": {grant: "full:jobs", want: 200},
	"POST /api/tasks/{id}/retry":  {grant: "full:jobs", want: 400, code: "not_retryable"},
	// The fixture's job is a dlq.replay: only a backup.export has a bundle.
	"GET /api/tasks/{id}/bundle": {grant: "full:jobs", want: 400, code: "invalid_argument"},
	"DELETE /api/dlq":            {body: `{"payload":{"instance":"jobs","queue":"q"}}`, grant: "full:jobs", want: 201},
	"POST /api/backup/export":    {grant: "full:*", want: 201},
	// The fixture's node has no backup directory: the call is reached and
	// refused by the engine.
	"POST /api/instances/{id}/backup": {grant: "full:jobs", want: 400, code: "invalid_argument"},
}

// TestOpsRouteCallsCoverTheRouter: every route of the operations table has
// its call in opsRouteCalls, and no call names a route that is gone.
func TestOpsRouteCallsCoverTheRouter(t *testing.T) {
	var routes []string
	for _, rt := range httpapi.OpsRoutes {
		routes = append(routes, rt.Method+" "+rt.Pattern)
	}
	sameRouteKeys(t, "opsRouteCalls", routes, opsRouteCalls)
}

// sameRouteKeys fails for each route ("METHOD /pattern") without its call
// in calls, and each call of calls that names no route.
func sameRouteKeys[C any](t *testing.T, name string, routes []string, calls map[string]C) {
	t.Helper()
	seen := map[string]bool{}
	for _, k := range routes {
		if _, ok := calls[k]; !ok {
			t.Errorf("route %s has no call in %s: add one", k, name)
		}
		seen[k] = true
	}
	for k := range calls {
		if !seen[k] {
			t.Errorf("%s has %s, which is not a route", name, k)
		}
	}
}

// opsFixture is a fixture (instances jobs and other, the pull queue q
// with a failed task) with a PENDING dlq.replay job on jobs, submitted by
// the org's admin; the engine's services do not run.
type opsFixture struct {
	*fixture
	job string
}

func addOpsFixture(s *served, org string) *opsFixture {
	f := addFixture(s, org)
	r := f.as(f.admin).do("POST", "/api/tasks", `{"kind":"dlq.replay","idempotency_key":"k1","payload":{"instance":"jobs","queue":"q"}}`).want(s.t, 201, "")
	return &opsFixture{fixture: f, job: r.body["id"].(string)}
}

// opsPath is rt's path in f with {id} filled.
func (f *opsFixture) opsPath(rt httpapi.OpsRoute, jobID string) string {
	if strings.HasPrefix(rt.Pattern, "/api/instances/") {
		return strings.Replace(rt.Pattern, "{id}", "jobs", 1)
	}
	return strings.Replace(rt.Pattern, "{id}", jobID, 1)
}

// TestOpsGrantsByRoute walks the operations table: no key, a revoked,
// unknown or malformed key is 401 with WWW-Authenticate; a key whose
// grants do not reach the job's instance is 403 for a submission and
// not_found, exactly as a missing id, for a job's own routes; the smallest
// grant that reaches the route gets the call's answer.
func TestOpsGrantsByRoute(t *testing.T) {
	for _, rt := range httpapi.OpsRoutes {
		name := rt.Method + " " + rt.Pattern
		c := opsRouteCalls[name]
		t.Run(strings.ReplaceAll(name, "/", "_"), func(t *testing.T) {
			t.Parallel()
			f := addOpsFixture(setupServe(t), "acme")
			path := f.opsPath(rt, f.job)
			for what, authz := range map[string]string{
				"no key":        "",
				"revoked key":   "Bearer " + f.revokedKey("acme", "full:*"),
				"malformed key": "Bearer not-a-key",
				"suffixed key":  "Bearer " + f.admin + "0",
				"no scheme":     f.admin,
			} {
				r, h := f.header(authz).doH(rt.Method, path, c.body)
				r.want(t, 401, "unauthenticated")
				if !strings.HasPrefix(h.Get("WWW-Authenticate"), "Bearer") {
					t.Errorf("%s: 401 without WWW-Authenticate: Bearer", what)
				}
			}
			switch {
			case rt.Method == "GET" && !strings.Contains(rt.Pattern, "{id}"): // the list: only jobs the key reaches
				if l := f.as(f.key("acme", "full:other")).do(rt.Method, path, nil).want(t, 200, "").list("tasks"); len(l) != 0 {
					t.Fatalf("full:other lists %v", l)
				}
				if l := f.as(f.key("acme", "full:jobs")).do(rt.Method, path, nil).want(t, 200, "").list("tasks"); len(l) != 1 {
					t.Fatalf("full:jobs lists %v", l)
				}
			case strings.HasPrefix(rt.Pattern, "/api/tasks/{id}"): // a job's own routes
				missing := f.as(f.admin).do(rt.Method, f.opsPath(rt, id.New(T0)), c.body).want(t, 404, "not_found")
				for _, g := range []string{"read:jobs", "write:jobs", "full:other", "write:*"} {
					r := f.as(f.key("acme", g)).do(rt.Method, path, c.body)
					if r.status != 404 || !bytes.Equal(r.raw, missing.raw) {
						t.Errorf("%s: %d %s; a missing job %s", g, r.status, r.raw, missing.raw)
					}
				}
			default: // a submission
				below := []string{"read:*", "write:*", "full:other"}
				if c.grant == "full:*" {
					below = append(below, "full:jobs", "full:jobs,full:other")
				}
				for _, g := range below {
					f.as(f.key("acme", strings.Split(g, ",")...)).do(rt.Method, path, c.body).want(t, 403, "permission_denied")
				}
			}
			f.as(f.key("acme", c.grant)).do(rt.Method, path, c.body).want(t, c.want, c.code)
		})
	}
}

// TestOpsListPagesTheKeysOwnJobs: a key that reaches only some instances
// pages through the jobs it may see as if they were the only ones: the
// offset and limit count its jobs, not the organization's newer ones it
// may not see.
func TestOpsListPagesTheKeysOwnJobs(t *testing.T) {
	f := addOpsFixture(setupServe(t), "acme") // its job J1 replays jobs/q
	admin := f.as(f.admin)
	for i := range 3 { // newer, for full:* keys only
		f.clock.Advance(time.Millisecond)
		admin.do("POST", "/api/backup/export", fmt.Sprintf(`{"idempotency_key":"e%d"}`, i)).want(t, 201, "")
	}
	f.clock.Advance(time.Millisecond)
	j2 := admin.do("POST", "/api/tasks", `{"kind":"dlq.replay","idempotency_key":"k2","payload":{"instance":"jobs","queue":"q"}}`).want(t, 201, "").body["id"].(string)
	k := f.as(f.key("acme", "full:jobs"))
	for _, c := range []struct {
		query string
		want  []string
	}{
		{"limit=1&offset=0", []string{j2}},
		{"limit=1&offset=1", []string{f.job}},
		{"limit=1&offset=2", nil},
		{"limit=200", []string{j2, f.job}},
	} {
		var got []string
		for _, l := range k.do("GET", "/api/tasks?"+c.query, nil).want(t, 200, "").list("tasks") {
			got = append(got, l.(map[string]any)["id"].(string))
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("full:jobs lists %v with %s, want %v", got, c.query, c.want)
		}
	}
	if l := admin.do("GET", "/api/tasks?limit=200", nil).want(t, 200, "").list("tasks"); len(l) != 5 {
		t.Fatalf("full:* lists %d jobs, want 5", len(l))
	}
}

// TestOpsForeignJobLooksMissing: another organization's job id, on every
// route that takes one, answers exactly like an id that does not exist
// (same status, same bytes), even to a key with every grant; the foreign
// jobs are left as they were and never listed.
func TestOpsForeignJobLooksMissing(t *testing.T) {
	s := setupServe(t)
	acme := addOpsFixture(s, "acme")
	globex := addOpsFixture(s, "globex")
	g := globex.as(globex.admin)
	export := g.do("POST", "/api/backup/export", `{"idempotency_key":"k1"}`).want(t, 201, "").body["id"].(string)
	jobs := []string{globex.job, export}
	before := map[string][]byte{}
	for _, j := range jobs {
		before[j] = g.do("GET", "/api/tasks/"+j, nil).want(t, 200, "").raw
	}
	a := acme.as(acme.admin)
	missingID := id.New(T0)
	n := 0
	for _, rt := range httpapi.OpsRoutes {
		if !strings.HasPrefix(rt.Pattern, "/api/tasks/{id}") {
			continue
		}
		n++
		body := opsRouteCalls[rt.Method+" "+rt.Pattern].body
		missing := a.do(rt.Method, acme.opsPath(rt, missingID), body).want(t, 404, "not_found")
		for _, j := range jobs {
			if r := a.do(rt.Method, acme.opsPath(rt, j), body); r.status != 404 || !bytes.Equal(r.raw, missing.raw) {
				t.Errorf("%s %s: globex's job answers %d %s; a missing id %s", rt.Method, rt.Pattern, r.status, r.raw, missing.raw)
			}
		}
	}
	if n != 4 {
		t.Fatalf("%d routes take a job id, want 4", n)
	}
	for j, raw := range before {
		if after := g.do("GET", "/api/tasks/"+j, nil).want(t, 200, "").raw; !bytes.Equal(after, raw) {
			t.Errorf("globex's job changed:\n%s\n%s", raw, after)
		}
	}
	for _, l := range a.do("GET", "/api/tasks?limit=200", nil).want(t, 200, "").list("tasks") {
		if m := l.(map[string]any); m["owner"] != "acme" || m["id"] == globex.job || m["id"] == export {
			t.Errorf("acme lists %v", m)
		}
	}
	// The same idempotency key in each organization is two jobs.
	if acme.job == globex.job {
		t.Fatal("two organizations share a job")
	}
}

// TestOpsForeignInstanceIsNeverTouched: a dead-letter job naming an
// instance that only another organization has is refused exactly as one
// naming a missing instance, and the other organization's tasks stay as
// they were.
func TestOpsForeignInstanceIsNeverTouched(t *testing.T) {
	s := setupServe(t)
	acme := addFixture(s, "acme")
	globex := addFixture(s, "globex")
	g := globex.as(globex.admin)
	g.do("POST", "/v1/instances", `{"name":"secret"}`).want(t, 201, "")
	g.do("POST", "/v1/tasks/secret/queues", `{"name":"q","mode":"pull","maxAttempts":1}`).want(t, 201, "")
	g.do("POST", "/v1/tasks/secret/queues/q/tasks", `{"payload":1}`).want(t, 201, "")
	l := g.do("POST", "/v1/tasks/secret/queues/q/lease", `{"count":1}`).want(t, 200, "").list("tasks")[0].(map[string]any)
	g.do("POST", fmt.Sprintf("/v1/tasks/secret/tasks/%s/release", l["id"]), fmt.Sprintf(`{"leaseId":%q,"error":"boom"}`, l["leaseId"])).want(t, 200, "")
	before := g.do("GET", "/v1/tasks/secret/queues/q/tasks", nil).want(t, 200, "").raw
	if !strings.Contains(string(before), `"failed"`) {
		t.Fatalf("globex's dead letter: %s", before)
	}

	a := acme.as(acme.admin)
	s.start()
	for _, kind := range []string{"dlq.purge", "dlq.replay"} {
		errs := map[string]string{}
		for _, inst := range []string{"secret", "nope"} {
			r := a.do("POST", "/api/tasks", fmt.Sprintf(`{"kind":%q,"idempotency_key":%q,"max_attempts":1,"payload":{"instance":%q,"queue":"q"}}`, kind, inst, inst)).want(t, 404, "not_found")
			errs[inst] = strings.ReplaceAll(r.message(), inst, "NAME")
		}
		if errs["secret"] != errs["nope"] || errs["secret"] == "" {
			t.Errorf("%s: another org's instance is refused with %q, a missing one with %q", kind, errs["secret"], errs["nope"])
		}
	}
	if after := g.do("GET", "/v1/tasks/secret/queues/q/tasks", nil).want(t, 200, "").raw; !bytes.Equal(after, before) {
		t.Fatalf("globex's dead letters changed:\n%s\n%s", before, after)
	}
}

// TestOpsRateLimit: a job that names an instance (dlq.replay, dlq.purge,
// instance.backup) takes a call from that instance's rateLimit bucket,
// the same bucket as the v1 calls, after the grant is checked; the
// installation-wide export, the list and a job's own routes do not.
func TestOpsRateLimit(t *testing.T) {
	f := addOpsFixture(setupServe(t), "acme")
	a := f.as(f.admin)
	a.do("POST", "/v1/tasks/other/queues", `{"name":"q","mode":"pull"}`).want(t, 201, "")
	a.do("PATCH", "/v1/tasks/jobs/settings", `{"rateLimit":1}`).want(t, 200, "")
	a.do("GET", "/v1/tasks/jobs/queues", nil).want(t, 200, "") // the bucket's one call

	for _, c := range []struct{ method, path, body string }{
		{"POST", "/api/tasks", `{"kind":"dlq.replay","idempotency_key":"r","payload":{"instance":"jobs","queue":"q"}}`},
		{"DELETE", "/api/dlq", `{"payload":{"instance":"jobs","queue":"q"}}`},
		{"POST", "/api/instances/jobs/backup", ``},
	} {
		r, h := a.doH(c.method, c.path, c.body)
		r.want(t, 429, "rate_limited")
		if h.Get("Retry-After") != "1" || !strings.Contains(r.message(), `"jobs"`) {
			t.Errorf("%s %s: Retry-After %q, %s", c.method, c.path, h.Get("Retry-After"), r.message())
		}
	}
	// A refusal for the grant is answered before the limit, and takes nothing.
	f.as(f.key("acme", "write:jobs")).do("DELETE", "/api/dlq", `{"payload":{"instance":"jobs","queue":"q"}}`).want(t, 403, "permission_denied")
	// Not limited by jobs: another instance, the export, the list, a job.
	a.do("DELETE", "/api/dlq", `{"payload":{"instance":"other","queue":"q"}}`).want(t, 201, "")
	a.do("POST", "/api/backup/export", ``).want(t, 201, "")
	a.do("GET", "/api/tasks", nil).want(t, 200, "")
	a.do("GET", "/api/tasks/"+f.job, nil).want(t, 200, "")
	a.do("GET", "/v1/tasks/jobs/queues", nil).want(t, 429, "RATE_LIMITED")

	// A second refills the bucket: one call, an operations one, then the
	// v1 API is limited again (one bucket).
	f.clock.Advance(time.Second)
	a.do("DELETE", "/api/dlq", `{"payload":{"instance":"jobs","queue":"q"}}`).want(t, 201, "")
	a.do("GET", "/v1/tasks/jobs/queues", nil).want(t, 429, "RATE_LIMITED")
	f.clock.Advance(time.Second)
	a.do("POST", "/api/instances/jobs/backup", ``).want(t, 400, "invalid_argument") // reached: no backup directory here
}

// TestOpsSteerRefusesABody: cancel and retry take no body: one that is
// malformed or has a field is refused with the field named, and the job is
// left as it was (as the v1 cancel and retry do).
func TestOpsSteerRefusesABody(t *testing.T) {
	f := addOpsFixture(setupServe(t), "acme")
	a := f.as(f.admin)
	for _, op := range []string{"cancel", "retry"} {
		for body, field := range map[string]string{`{`: "body", `{"state":"CANCELLED"}`: "state", `[]`: "body"} {
			r := a.do("POST", "/api/tasks/"+f.job+"/"+op, body).want(t, 400, "invalid_argument")
			if !strings.HasPrefix(r.message(), field+":") {
				t.Errorf("%s %s: %q does not name %s", op, body, r.message(), field)
			}
		}
	}
	if st := a.do("GET", "/api/tasks/"+f.job, nil).want(t, 200, "").obj("task")["status"]; st != "PENDING" {
		t.Fatalf("the job is %v after refused calls", st)
	}
	a.do("POST", "/api/tasks/"+f.job+"/cancel", ``).want(t, 200, "")
}
