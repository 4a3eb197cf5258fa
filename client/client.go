// Package client is errand's Go SDK: one Client for every route of the v1
// API, over HTTP, context-aware, with the request and answer types of
// github.com/errandhq/errand/errandapi (the same types the server encodes
// and decodes, so the two cannot drift).
//
//	c, err := client.New("http://127.0.0.1:9191", client.Options{APIKey: os.Getenv("ERRAND_API_KEY")})
//	...
//	res, err := c.AddTask(ctx, "jobs", "emails", errandapi.NewTask{
//		Name:    "welcome-42",
//		Payload: json.RawMessage(`{"user":42}`),
//	})
//	if errors.Is(err, client.ErrTaskExists) {
//		// already added: err.(*client.Error).ID is the existing task
//	}
//
// Every refusal is an *Error carrying the v1 code, the message, the HTTP
// status and, for TASK_EXISTS, the existing task's id; errors.Is matches it
// against the sentinels (ErrTaskExists, ErrLeaseLost, …) by code. The
// embedded engine (github.com/errandhq/errand/embedded) returns the same
// errors, so code written against one runs against the other.
//
// Calls that are safe to repeat are retried on connection errors and on
// 503 with capped, jittered exponential backoff; RATE_LIMITED waits for
// the server's Retry-After; docs/sdk.md lists which calls are which.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/errandhq/errand/errandapi"
)

// maxAnswer bounds the answer body the client reads (a task's payload and
// result are 64 KiB each; a page holds 200 tasks without them).
const maxAnswer = 32 << 20

// Options configure a Client; zero values take the defaults noted.
type Options struct {
	// APIKey is sent as `Authorization: Bearer <key>` (errand serve needs
	// one; errand dev none).
	APIKey string
	// HTTPClient sends the requests (default: a client of its own, without
	// a timeout: contexts bound each call, over a copy of
	// http.DefaultTransport that keeps up to 64 idle connections to the
	// server rather than 2, so that a program calling from many goroutines
	// at once reuses its connections instead of opening, and over TLS
	// shaking hands on, one for most calls).
	HTTPClient *http.Client
	// Retry is the retry policy (see RetryPolicy for its defaults).
	Retry RetryPolicy
	// UserAgent is sent as User-Agent (default "errand-go-client").
	UserAgent string
	// Source names the surface this client adds tasks for, sent as the
	// errandapi.SourceHeader: "" or "api" (the default), "console" or
	// "mcp"; the tasks it adds get it as their source.
	Source string
}

// Client calls one errand server. It is safe for concurrent use.
type Client struct {
	base   *url.URL
	key    string
	hc     *http.Client
	retry  RetryPolicy
	agent  string
	source string
	jitter func(n int64) int64
	// sleep waits d or until ctx is done (tests replace it).
	sleep func(ctx context.Context, d time.Duration) error
}

// maxIdlePerHost is how many idle connections to its server a Client
// keeps on its default transport (http.DefaultTransport keeps 2).
const maxIdlePerHost = 64

// defaultTransport is a copy of http.DefaultTransport, as it is set when
// the Client is made (proxy, TLS, timeouts), keeping maxIdlePerHost idle
// connections a server; a DefaultTransport that is not an *http.Transport
// is used as it is.
func defaultTransport() http.RoundTripper {
	t, ok := http.DefaultTransport.(*http.Transport)
	if !ok {
		return http.DefaultTransport
	}
	t = t.Clone()
	t.MaxIdleConnsPerHost = maxIdlePerHost
	return t
}

// CloseIdleConnections closes the client's idle connections (those kept
// for the next calls); the next call opens one again.
func (c *Client) CloseIdleConnections() { c.hc.CloseIdleConnections() }

// New returns a Client for the server at baseURL (http or https, e.g.
// http://127.0.0.1:9191). It makes no call.
func New(baseURL string, o Options) (*Client, error) {
	// "127.0.0.1:9191", without its scheme, does not parse at all: it gets
	// the same answer as any other URL that is not a base URL.
	u, err := url.Parse(strings.TrimRight(baseURL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("client: base URL %q: want http(s)://host[:port][/prefix]", baseURL)
	}
	if err := errandapi.CheckAPIKey(o.APIKey); err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	hc := o.HTTPClient
	if hc == nil {
		hc = &http.Client{Transport: defaultTransport()}
	}
	agent := o.UserAgent
	if agent == "" {
		agent = "errand-go-client"
	}
	return &Client{base: u, key: o.APIKey, hc: hc, retry: o.Retry.withDefaults(), agent: agent, source: o.Source,
		jitter: randInt63n, sleep: sleepCtx}, nil
}

// call is one API call: its route, body and answer, and whether it is
// safe to send again after it may have reached the server.
type call struct {
	method string
	path   []string // segments after the base URL, escaped one by one
	query  url.Values
	body   any // encoded as JSON; nil sends no body
	out    any // decoded from a 2xx answer
	// repeatable: the call may be sent again after it may have reached the
	// server (it is idempotent, or the server dedupes it).
	repeatable bool
	// conflictOut: a 409 answer carries per-item results to decode into
	// out (add, batch ack) beside its error.
	conflictOut bool
	// raw is a body sent as is (a hook call's), instead of body.
	raw []byte
	// header holds extra request headers; anonymous sends no API key.
	header    http.Header
	anonymous bool
	// stream receives a 2xx answer's body as it arrives, unbounded and
	// undecoded (a bundle download), instead of out.
	stream io.Writer
	// bareOK: a 2xx answer may have no body (a hook's bare 200 to a
	// Slack-signed form), which leaves out as it is.
	bareOK bool
	// decode, when set, decodes a 2xx answer instead of json.Unmarshal
	// into out, as it would (a lease's: LeaseResponse.UnmarshalJSON, which
	// json.Unmarshal would call after a pass of its own over the bytes).
	decode func(raw []byte) error
}

// do runs c with the client's retry policy.
func (c *Client) do(ctx context.Context, cl call) error {
	body := cl.raw
	if cl.body != nil {
		var err error
		if body, err = errandapi.Marshal(cl.body); err != nil {
			return fmt.Errorf("client: encoding the request: %w", err)
		}
	}
	if err := checkPath(cl.path); err != nil {
		return err
	}
	u := c.base.String() + "/" + escape(cl.path)
	if len(cl.query) > 0 {
		u += "?" + cl.query.Encode()
	}
	for try := 1; ; try++ {
		err := c.once(ctx, cl, u, body)
		if err == nil {
			return nil
		}
		wait, retry := c.retryAfter(cl, err, try)
		if !retry {
			return err
		}
		if ctx.Err() != nil {
			// Ended between the answer and the next try: the context's
			// error, as docs/sdk.md promises, not the answer's.
			return ctx.Err()
		}
		if serr := c.sleep(ctx, wait); serr != nil {
			return serr
		}
	}
}

// once sends the request one time and reads its answer.
func (c *Client) once(ctx context.Context, cl call, u string, body []byte) error {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, cl.method, u, rd)
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	for name, vs := range cl.header {
		for _, v := range vs {
			req.Header.Add(name, v)
		}
	}
	if body != nil && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json") // FireHook's caller may send a form
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.agent)
	if c.key != "" && !cl.anonymous {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	if c.source != "" {
		req.Header.Set(errandapi.SourceHeader, c.source)
	}
	if tok := DeliveryToken(ctx); tok != "" {
		req.Header.Set(errandapi.DeliveryHeader, tok)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return &transportError{method: cl.method, url: u, err: err}
	}
	defer resp.Body.Close()
	if cl.stream != nil && resp.StatusCode/100 == 2 {
		if _, err := io.Copy(cl.stream, resp.Body); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return &transportError{method: cl.method, url: u, err: err, sent: true}
		}
		return nil
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return &transportError{method: cl.method, url: u, err: err, sent: true}
	}
	if resp.StatusCode/100 == 2 {
		if cl.out == nil || cl.bareOK && len(raw) == 0 {
			return nil
		}
		if cl.decode != nil {
			err = cl.decode(raw)
		} else {
			err = json.Unmarshal(raw, cl.out)
		}
		if err != nil {
			return fmt.Errorf("client: decoding the answer to %s %s: %w", cl.method, u, err)
		}
		return nil
	}
	e := answerError(resp, raw)
	if resp.StatusCode == http.StatusConflict && cl.conflictOut && cl.out != nil {
		_ = json.Unmarshal(raw, cl.out)
	}
	return e
}

// answerError reads a refused call's answer: the v1 error body (or the
// operations API's, whose lowercase code is read in upper case), or for an
// answer without one (a proxy's) the code of its status.
func answerError(resp *http.Response, raw []byte) *errandapi.Error {
	e := &errandapi.Error{Status: resp.StatusCode}
	var body errandapi.ErrorResponse
	if json.Unmarshal(raw, &body) == nil && body.Error.Code != "" {
		// The operations API spells its codes in lowercase (not_found);
		// the v1 API's are upper snake case: one Code, one sentinel each.
		e.Code, e.Message = errandapi.Code(strings.ToUpper(string(body.Error.Code))), body.Error.Message
	} else {
		e.Code = errandapi.CodeOfStatus(resp.StatusCode)
		msg := strings.TrimSpace(string(raw))
		if len(msg) > 200 {
			msg = msg[:200] + "…"
		}
		e.Message = fmt.Sprintf("HTTP %d without an errand error body: %q", resp.StatusCode, msg)
	}
	if resp.StatusCode == http.StatusTooManyRequests {
		e.RetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"))
	}
	return e
}

// checkPath refuses a path with an empty segment (an instance, a queue or
// an id passed as ""), which would make a path with a hole in it that
// the server redirects or answers "no route": INVALID_ARGUMENT naming the
// part, before anything is sent.
func checkPath(segs []string) error {
	for i, s := range segs {
		if s != "" {
			continue
		}
		what := "a name or an id"
		switch {
		case i == 2 && segs[0] == "v1": // /v1/{tasks,channels,instances,…}/{instance}
			what = "the instance"
		case i > 0 && segs[i-1] == "queues":
			what = "the queue"
		case i > 0 && segs[i-1] == "tasks":
			what = "the task's id"
		case i > 0 && segs[i-1] == "triggers":
			what = "the rule's id"
		}
		return errandapi.NewError(errandapi.CodeInvalidArgument, fmt.Sprintf("%s is empty: /%s has an empty part", what, strings.Join(segs, "/")))
	}
	return nil
}

// escape joins the path's segments, each path-escaped (and "." and ".."
// too), so an id or a name never adds or removes a level.
func escape(segs []string) string {
	out := make([]string, len(segs))
	for i, s := range segs {
		out[i] = url.PathEscape(s)
		if s == "." || s == ".." {
			out[i] = strings.ReplaceAll(s, ".", "%2E")
		}
	}
	return strings.Join(out, "/")
}

// transportError is a call that got no answer: the connection could not
// be made (sent is false: the server never saw the request) or broke
// after the request may have been sent.
type transportError struct {
	method, url string
	err         error
	sent        bool
}

func (e *transportError) Error() string {
	return fmt.Sprintf("client: %s %s: %v", e.method, e.url, e.err)
}

func (e *transportError) Unwrap() error { return e.err }

// IsConnectionError reports whether err is a call that got no answer
// from the server (the connection was refused, reset or cut), as opposed
// to a refusal (*Error) or a cancelled context.
func IsConnectionError(err error) bool {
	var te *transportError
	return errors.As(err, &te)
}
