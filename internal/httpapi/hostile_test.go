package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/errandhq/errand/internal/httpapi"
)

// hostileSegments replace one path segment ({instance}, {queue} or {id})
// at a time: NUL bytes, invalid and overlong UTF-8, a surrogate, an
// encoded slash, dot segments, and a very long value.
var hostileSegments = []string{
	"a%00b", "%00", "a%FFb", "%C0%80", "%ED%A0%80", "a%2Fb", "..", "%2e%2e",
	"a%20b", "a%0Ab", strings.Repeat("x", 5000), "%F0%9F%98%80",
}

// hostileQueries are added to every route's path.
var hostileQueries = []string{
	"?name=a%00b", "?name=%FF", "?cursor=%00", "?cursor=YTEyMzphAGI", "?cursor=" + strings.Repeat("A", 10000),
	"?state=%00", "?state=leased%FF", "?limit=%00", "?limit=99999999999999999999", "?limit=-1",
	"?confirm=%00", "?confirm=true%00", "?name=" + strings.Repeat("n", 600),
	"?offset=%00", "?offset=-99999999999999999999", "?offset=1e3", "?limit=1.5", "?limit=0x10",
}

// hostileBodies are sent to every route that takes a body.
var hostileBodies = []string{
	`{`, `{"payload":`, `[`, `[{"payload":1},`, `"x"`, `1`, `true`, `null`, `[]`, `[null]`, `{}`,
	`{"name":5}`, `{"leaseId":5}`, `{"count":"x"}`, `{"acks":{}}`, `{"acks":[null]}`, `{"acks":[{"id":5}]}`,
	`{"leaseSeconds":1e400}`, `{"delaySeconds":-1e308}`, `{"maxAgeSeconds":1e300}`, `{"rateLimit":"1"}`,
	"{\"name\":\"a\u0000b\"}", "{\"name\":\"\xff\"}", "{\"payload\":\"\xff\"}", "{\"leaseId\":\"\x00\"}",
	"{\"error\":\"\xff\x00\"}", `{"target":{"webhook":"http://a\u0000b/"}}`, "{\"target\":{\"webhook\":\"http://\xff/\"}}",
	`{"target":{"function":"a/b\u0000"}}`, `{"payload":1}{"payload":2}`, "\xef\xbb\xbf{}",
	strings.Repeat("[", 100000) + strings.Repeat("]", 100000),
	`{"payload":` + strings.Repeat(`{"a":`, 20000) + "1" + strings.Repeat("}", 20000) + `}`,
	`{"tasks":[` + strings.TrimSuffix(strings.Repeat(`{"payload":1},`, 101), ",") + `]}`,
	// The operations API's fields.
	`{"kind":5}`, `{"kind":"dlq.replay"}`, `{"kind":"dlq.nope","idempotency_key":"k"}`, "{\"kind\":\"dlq.replay\u0000\",\"idempotency_key\":\"k\"}",
	"{\"kind\":\"backup.export\",\"idempotency_key\":\"\xff\"}", `{"kind":"backup.export","idempotency_key":"a\u0000b"}`,
	`{"kind":"backup.export","idempotency_key":"` + strings.Repeat("k", 201) + `"}`, `{"idempotency_key":"` + strings.Repeat("k", 201) + `"}`,
	`{"kind":"backup.export","idempotency_key":"k","max_attempts":1e400}`, `{"max_attempts":-99999999999999999999}`,
	`{"kind":"backup.export","idempotency_key":"k","max_attempts":"3"}`, `{"kind":"backup.export","idempotency_key":"k","payload":{"x":1}}`,
	`{"kind":"dlq.replay","idempotency_key":"k","payload":{"instance":"a\u0000b","queue":"work"}}`,
	"{\"kind\":\"dlq.purge\",\"idempotency_key\":\"k\",\"payload\":{\"instance\":\"\xff\",\"queue\":\"work\"}}",
	`{"payload":{"instance":"jobs","ids":[5]}}`, `{"payload":{"instance":"jobs","ids":["a\u0000b"]}}`, `{"payload":{"instance":"jobs"}}`,
	`{"payload":{"instance":"jobs","queue":"work","dead_letter_queue":"d"}}`, `{"payload":{"instance":"jobs","queue":"` + strings.Repeat("q", 5000) + `"}}`,
	`{"payload":{"instance":"jobs","ids":[` + strings.TrimSuffix(strings.Repeat(`"x",`, 20000), ",") + `]}}`,
	`{"payload":[1]}`, `{"payload":"x"}`, `{"payload":{"instance":"jobs","queue":"work"},"kind":"dlq.purge"}`,
}

// snapshot is what a refused call must leave as it was: every queue of
// jobs with its settings and counts, the instances, the settings and the
// operations jobs.
func (b *bundle) snapshot() string {
	b.t.Helper()
	var s strings.Builder
	for _, p := range []string{"/v1/instances", "/v1/tasks/jobs/queues", "/v1/tasks/jobs/settings", "/v1/tasks/jobs/settings/webhook-key", "/api/tasks?limit=200"} {
		r := b.do("GET", p, nil)
		s.Write(r.raw)
	}
	return s.String()
}

// TestHostileInputOnEveryRoute sends malformed, truncated, wrong-typed,
// oversized and deeply nested bodies, and NUL bytes and invalid UTF-8 in
// every path segment and query parameter, to every route over real HTTP,
// on both backends: never a 5xx, never a store's or driver's words, and a
// refused call changes nothing.
func TestHostileInputOnEveryRoute(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("thousands of requests")
	}
	onBoth(t, func(t *testing.T, b *bundle) {
		b.do("POST", "/v1/tasks/jobs/queues", `{"name":"work","mode":"pull"}`).want(t, 201, "")
		b.do("POST", "/v1/tasks/jobs/queues", `{"name":"push","target":{"webhook":"http://127.0.0.1:1/x"}}`).want(t, 201, "")
		b.do("POST", "/v1/tasks/jobs/queues/work/tasks", `[{"payload":1},{"payload":2}]`).want(t, 201, "")
		id, lease := b.leaseOne("work", 600)
		job := b.job("dlq.replay", "hostile", map[string]any{"instance": "jobs", "queue": "work"}).want(t, 201, "").body["id"].(string)
		check := func(method, path, body string, headers map[string]string) {
			t.Helper()
			before := b.snapshot()
			req, err := http.NewRequest(method, b.srv.URL+path, strings.NewReader(body))
			if err != nil {
				return // a URL Go's client refuses to send is not a server's concern
			}
			for k, v := range headers {
				req.Header.Set(k, v)
			}
			resp, err := b.client.Do(req)
			if err != nil {
				t.Fatalf("%s %.80s: %v", method, path, err)
			}
			raw := readAll(resp)
			r := res{status: resp.StatusCode, raw: raw}
			if r.status >= 500 {
				t.Fatalf("%s %.100s body %.60q: %d %s", method, path, body, r.status, raw)
			}
			noDriverText(t, r)
			if r.status >= 400 {
				if after := b.snapshot(); after != before {
					t.Fatalf("%s %.100s body %.60q: refused with %d %s, yet changed the instance", method, path, body, r.status, raw)
				}
			}
		}
		n := 0
		for _, rt := range hostileRoutes(id, job) {
			base := rt.base
			for seg := range base {
				if !strings.Contains(rt.Pattern, seg) {
					continue
				}
				for _, bad := range hostileSegments {
					vals := map[string]string{}
					for k, v := range base {
						vals[k] = v
					}
					vals[seg] = bad
					path := strings.NewReplacer("{instance}", vals["{instance}"], "{queue}", vals["{queue}"], "{id}", vals["{id}"]).Replace(rt.Pattern)
					check(rt.Method, path, strings.ReplaceAll(rt.segBody, "{lease}", lease), nil)
					n++
				}
			}
			path := strings.NewReplacer("{instance}", base["{instance}"], "{queue}", base["{queue}"], "{id}", base["{id}"]).Replace(rt.Pattern)
			for _, q := range hostileQueries {
				if rt.Method == "GET" {
					check(rt.Method, path+q, "", nil)
					n++
				}
			}
			if rt.Method == "GET" {
				continue
			}
			// A refused body must change nothing; a destructive route with
			// a body it accepts (purge, delete, rotate ignore bodies) is
			// not probed with bodies here.
			switch rt.Pattern {
			case "/v1/tasks/{instance}/queues/{queue}/purge", "/v1/tasks/{instance}/queues/{queue}",
				"/v1/instances/{instance}", "/v1/tasks/{instance}/settings/webhook-key/rotate":
				if rt.Method != "PATCH" {
					check(rt.Method, path+"?confirm=true%00", "", nil)
					continue
				}
			}
			for _, body := range hostileBodies {
				check(rt.Method, path, body, map[string]string{"Content-Type": "application/json"})
				n++
			}
			check(rt.Method, path, strings.Repeat("x", 17<<20), nil)
			check(rt.Method, path, `{}`, map[string]string{"X-Huge": strings.Repeat("h", 2<<20)})
			n += 2
		}
		t.Logf("%d hostile requests", n)
	})
}

// hostileRoute is a route of either table with the values its pattern's
// segments take when they are not the one being replaced, and the body
// sent while a segment is.
type hostileRoute struct {
	Method, Pattern string
	base            map[string]string
	segBody         string
}

// hostileRoutes are the routes of the v1 table and of the operations
// table: {id} is the task id, the job id, or (POST
// /api/instances/{id}/backup) the instance.
func hostileRoutes(taskID, jobID string) []hostileRoute {
	var out []hostileRoute
	for _, rt := range httpapi.Routes {
		out = append(out, hostileRoute{rt.Method, rt.Pattern,
			map[string]string{"{instance}": "jobs", "{queue}": "work", "{id}": taskID}, `{"leaseId":"{lease}"}`})
	}
	for _, rt := range httpapi.OpsRoutes {
		idv := jobID
		if strings.HasPrefix(rt.Pattern, "/api/instances/") {
			idv = "jobs"
		}
		out = append(out, hostileRoute{rt.Method, rt.Pattern, map[string]string{"{id}": idv}, `{}`})
	}
	return out
}

func readAll(resp *http.Response) []byte {
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			return []byte(b.String())
		}
	}
}
