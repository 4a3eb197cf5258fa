package httpapi_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	pathpkg "path"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/errandhq/errand/internal/httpapi"
)

// spec is the OpenAPI document loaded once, with its router.
var spec = sync.OnceValues(func() (*apiSpec, error) {
	return loadSpec(httpapi.OpenAPI)
})

// apiSpec is a loaded OpenAPI document: kin-openapi's model of it (to
// validate the document, find the operation of a request, and check
// parameters and statuses) and the document as a JSON Schema 2020-12
// resource (to validate bodies: kin-openapi v0.153 validates a schema that
// reaches another through $ref with its OpenAPI 3.0 validator, under which
// {} refuses null, as 3.1 does not).
type apiSpec struct {
	doc     *openapi3.T
	router  routers.Router
	raw     map[string]any
	schemas *jsonschema.Compiler
	mu      sync.Mutex
	cache   map[string]*jsonschema.Schema
}

// specURL names the document as a JSON Schema resource.
const specURL = "urn:errand:openapi.json"

// loadSpec loads and validates an OpenAPI 3.1 document.
func loadSpec(raw []byte) (*apiSpec, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(raw)
	if err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	if !doc.IsOpenAPI31OrLater() {
		return nil, fmt.Errorf("openapi %q: want 3.1", doc.OpenAPI)
	}
	if err := doc.Validate(loader.Context); err != nil {
		return nil, fmt.Errorf("validate: %w", err)
	}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("router: %w", err)
	}
	asJSON, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource(specURL, asJSON); err != nil {
		return nil, err
	}
	s := &apiSpec{doc: doc, router: router, raw: asJSON.(map[string]any), schemas: c, cache: map[string]*jsonschema.Schema{}}
	// Every schema of the document compiles.
	for name := range doc.Components.Schemas {
		if _, err := s.schema("/components/schemas/" + name); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// schema compiles the schema at pointer of the document (cached).
func (s *apiSpec) schema(pointer string) (*jsonschema.Schema, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sch := s.cache[pointer]; sch != nil {
		return sch, nil
	}
	sch, err := s.schemas.Compile(specURL + "#" + pointer)
	if err != nil {
		return nil, fmt.Errorf("schema %s: %w", pointer, err)
	}
	s.cache[pointer] = sch
	return sch, nil
}

// at walks the raw document along pointer tokens, following a $ref of
// the document at each step, and returns the value and its pointer.
func (s *apiSpec) at(tokens ...string) (any, string) {
	var cur any = s.raw
	ptr := ""
	for _, tok := range tokens {
		if m, ok := cur.(map[string]any); ok {
			if ref, ok := m["$ref"].(string); ok && strings.HasPrefix(ref, "#/") {
				ptr = ref[1:]
				cur = s.lookup(ptr)
			}
		}
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, ""
		}
		cur = m[tok]
		ptr += "/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(tok)
		if cur == nil {
			return nil, ""
		}
	}
	return cur, ptr
}

// lookup returns the value at a JSON pointer of the document.
func (s *apiSpec) lookup(ptr string) any {
	var cur any = s.raw
	for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		m, _ := cur.(map[string]any)
		cur = m[strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)]
	}
	return cur
}

// checkBody validates a JSON body against the schema of content (a
// content map of the document at tokens), or fails if the body is not JSON
// while the document says it is.
func (s *apiSpec) checkBody(what string, contentType string, body []byte, tokens ...string) error {
	content, ptr := s.at(tokens...)
	if content == nil {
		if len(body) > 0 && what == "answer" {
			return fmt.Errorf("the document describes no %s body, the server sent one", what)
		}
		return nil
	}
	if _, ok := content.(map[string]any)["application/json"]; !ok {
		return nil // any content (a hook's body)
	}
	mt, _, _ := strings.Cut(contentType, ";")
	if other, ok := content.(map[string]any)[strings.TrimSpace(mt)].(map[string]any); ok && strings.TrimSpace(mt) != "application/json" {
		// Another media type the document names (a hook's bare text/plain
		// 200): its schema is a string's.
		if n, ok := other["schema"].(map[string]any)["maxLength"].(float64); ok && len(body) > int(n) {
			return fmt.Errorf("%s body of %d bytes, the document allows %d", what, len(body), int(n))
		}
		return nil
	}
	if len(body) > 0 && strings.TrimSpace(mt) != "application/json" {
		return fmt.Errorf("%s Content-Type %q, want application/json", what, contentType)
	}
	if len(body) == 0 {
		if what == "request" {
			return nil // an empty body where one is optional
		}
		return fmt.Errorf("empty %s body", what)
	}
	sch, err := s.schema(ptr + "/application~1json/schema")
	if err != nil {
		return err
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%s body is not JSON: %w", what, err)
	}
	if err := sch.Validate(v); err != nil {
		return fmt.Errorf("%s body: %w", what, err)
	}
	return nil
}

// specCheck is a RoundTripper that checks every exchange of a test against
// the OpenAPI document: the answer's status must be documented for the
// operation and its body must match the schema of that status; a request
// the server accepted (2xx) must match the operation's parameters and
// request body too. Requests to paths the document does not describe (a
// test of 404 or 405 answers) are not checked. Every mismatch fails tb.
type specCheck struct {
	tb   testing.TB
	next http.RoundTripper
	spec *apiSpec
}

func (c *specCheck) RoundTrip(req *http.Request) (*http.Response, error) {
	var reqBody []byte
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		reqBody = b
		req.Body = io.NopCloser(bytes.NewReader(b))
	}
	resp, err := c.next.RoundTrip(req)
	if err != nil || resp.StatusCode == http.StatusSwitchingProtocols {
		return resp, err
	}
	if resp.StatusCode == http.StatusOK && strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		// A subscription streams until the test ends: its status and type
		// are the document's, its events are docs/channels.md's.
		c.spec.exercise(req)
		return resp, nil
	}
	respBody, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(respBody))
	if err != nil {
		return resp, nil // the test reading the body sees the short read
	}
	if err := c.spec.check(req, reqBody, resp, respBody); err != nil {
		c.tb.Errorf("OpenAPI: %s %s → %d: %v\nrequest: %.300s\nanswer: %.500s", req.Method, req.URL.RequestURI(), resp.StatusCode, err, reqBody, respBody)
	}
	return resp, nil
}

// decoded is a request body without its content coding: the document
// describes the body a gzip request carries once decompressed.
func decoded(req *http.Request, body []byte) []byte {
	if !strings.EqualFold(req.Header.Get("Content-Encoding"), "gzip") {
		return body
	}
	zr, err := gzip.NewReader(bytes.NewReader(body))
	if err != nil {
		return body
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		return body
	}
	return out
}

// check holds one exchange to the document (nil when its path is not in
// the document).
func (s *apiSpec) check(req *http.Request, reqBody []byte, resp *http.Response, respBody []byte) error {
	if resp.StatusCode == http.StatusRequestHeaderFieldsTooLarge || req.URL.Path != pathpkg.Clean(req.URL.Path) {
		return nil // Go's HTTP server refused it, or its mux redirected it, before any handler ran
	}
	probe := req.Clone(context.Background())
	probe.Body = io.NopCloser(bytes.NewReader(reqBody))
	route, params, err := s.router.FindRoute(probe)
	if err != nil {
		return nil // a path or method the document does not describe
	}
	path := s.pathOf(route)
	method := strings.ToLower(req.Method)
	exercised.Store(req.Method+" "+path, true)
	opts := &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, IncludeResponseStatus: true,
		MultiError: true, ExcludeRequestBody: true, ExcludeResponseBody: true}
	in := &openapi3filter.RequestValidationInput{Request: probe, PathParams: params, Route: route, Options: opts}
	if resp.StatusCode/100 == 2 {
		if err := unboundedIntegers(openapi3filter.ValidateRequest(context.Background(), in)); err != nil {
			return fmt.Errorf("the server accepted a request the document refuses: %w", err)
		}
		if err := s.checkBody("request", req.Header.Get("Content-Type"), decoded(req, reqBody), "paths", path, method, "requestBody", "content"); err != nil {
			return fmt.Errorf("the server accepted a request the document refuses: %w", err)
		}
	}
	if err := openapi3filter.ValidateResponse(context.Background(), &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in, Status: resp.StatusCode, Header: resp.Header,
		Body: io.NopCloser(bytes.NewReader(respBody)), Options: opts,
	}); err != nil {
		return err
	}
	return s.checkBody("answer", resp.Header.Get("Content-Type"), respBody, "paths", path, method, "responses", strconv.Itoa(resp.StatusCode), "content")
}

// unboundedIntegers is err without the errors of integer query parameters
// too large for an int64: JSON Schema's integer has no bound, and the
// server clamps any integer of GET /api/tasks's limit and offset however
// long, but kin-openapi parses an integer parameter into an int64 and
// refuses one that overflows it. Any other error is kept.
func unboundedIntegers(err error) error {
	me, ok := err.(openapi3.MultiError)
	if !ok {
		if err != nil && overflow(err) {
			return nil
		}
		return err
	}
	var kept openapi3.MultiError
	for _, e := range me {
		if !overflow(e) {
			kept = append(kept, e)
		}
	}
	if len(kept) == 0 {
		return nil
	}
	return kept
}

// overflow reports whether err is a query parameter's integer that does
// not fit an int64.
func overflow(err error) bool {
	var re *openapi3filter.RequestError
	if !errors.As(err, &re) || re.Parameter == nil || re.Parameter.In != openapi3.ParameterInQuery {
		return false
	}
	s := re.Parameter.Schema
	return s != nil && s.Value != nil && s.Value.Type.Is(openapi3.TypeInteger) && errors.Is(err, strconv.ErrRange)
}

// exercise records req's operation as exercised without checking it (a
// stream, whose body never ends).
func (s *apiSpec) exercise(req *http.Request) {
	if route, _, err := s.router.FindRoute(req.Clone(context.Background())); err == nil {
		exercised.Store(req.Method+" "+s.pathOf(route), true)
	}
}

// pathOf is the document's path template of route.
func (s *apiSpec) pathOf(route *routers.Route) string { return route.Path }

// mustSpec returns the repository's document or fails tb.
func mustSpec(tb testing.TB) *apiSpec {
	tb.Helper()
	s, err := spec()
	if err != nil {
		tb.Fatalf("internal/httpapi/openapi.json: %v", err)
	}
	return s
}

// checkedClient is the tests' HTTP client: every exchange it makes is held
// to the OpenAPI document (specCheck). A benchmark's client is a plain one:
// the check (a schema validation of every request and answer) cost more
// than the server's own work on an add, and a benchmark measures the server.
func checkedClient(tb testing.TB) *http.Client {
	next := &http.Transport{MaxIdleConnsPerHost: 64}
	if _, bench := tb.(*testing.B); bench {
		return &http.Client{Transport: next}
	}
	return &http.Client{Transport: &specCheck{tb: tb, next: next, spec: mustSpec(tb)}}
}

// CloseIdleConnections closes the idle connections of the transport below.
func (c *specCheck) CloseIdleConnections() {
	if ci, ok := c.next.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}

// exercised records the operations of the document that some test's
// exchange was checked against ("METHOD /path").
var exercised sync.Map

// unexercised returns the operations of the document no checked exchange
// reached.
func unexercised() []string {
	s, err := spec()
	if err != nil {
		return nil
	}
	var out []string
	for _, op := range documented(s) {
		if _, ok := exercised.Load(op); !ok {
			out = append(out, op)
		}
	}
	return out
}
