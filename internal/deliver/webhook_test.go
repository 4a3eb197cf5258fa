package deliver

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/errandhq/errand/internal/task"
)

// receiver starts a loopback HTTP server that is closed when the test ends.
func receiver(t testing.TB, h http.HandlerFunc) *httptest.Server {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// newWebhook returns a deliverer whose idle connections are closed when the
// test ends (after the servers, so nothing is left running).
func newWebhook(t testing.TB, opts WebhookOptions) *Webhook {
	w := NewWebhook(opts)
	t.Cleanup(w.Close)
	return w
}

// hanging starts a target that never answers: it reads the request, then
// waits until the caller hangs up or the test ends.
func hanging(t testing.TB) *httptest.Server {
	release := make(chan struct{})
	srv := receiver(t, func(rw http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) // the server notices a hang-up only after the body
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	t.Cleanup(func() { close(release) }) // runs before srv.Close
	return srv
}

var quietLog = log.New(io.Discard, "", 0)

var testNow = time.UnixMilli(1793042520123)

func request(url string) *Request {
	return &Request{Task: katTask(), Target: task.Target{Webhook: url}, Key: katKey, Now: testNow}
}

func deliver(t testing.TB, w *Webhook, url string) Result {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return w.Deliver(ctx, request(url))
}

// TestWebhookSignedPost checks what a receiver gets, verifying both
// signatures the way a user would: from the raw body, independently.
func TestWebhookSignedPost(t *testing.T) {
	t.Parallel()
	type got struct {
		method, path string
		header       http.Header
		body         []byte
	}
	seen := make(chan got, 1)
	srv := receiver(t, func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		seen <- got{r.Method, r.URL.RequestURI(), r.Header.Clone(), body}
		rw.Header().Set("Content-Type", "application/json")
		io.WriteString(rw, `{"sent":true}`)
	})
	w := newWebhook(t, WebhookOptions{})
	res := deliver(t, w, srv.URL+"/hooks/receipt?x=1")
	if res.Outcome.Status != task.AttemptSucceeded || res.Outcome.HTTPStatus != 200 || res.Outcome.Error != "" {
		t.Fatalf("outcome %+v", res.Outcome)
	}
	if string(res.Outcome.Result) != `{"sent":true}` {
		t.Errorf("result %q", res.Outcome.Result)
	}
	if res.Duration <= 0 {
		t.Errorf("duration %v", res.Duration)
	}
	g := <-seen
	if g.method != "POST" || g.path != "/hooks/receipt?x=1" {
		t.Errorf("%s %s", g.method, g.path)
	}
	if string(g.body) != katBody {
		t.Errorf("body\n%s\nwant\n%s", g.body, katBody)
	}
	for k, want := range map[string]string{
		"content-type":       "application/json",
		"user-agent":         "errand/1",
		"x-errand-timestamp": "1793042520123",
		"webhook-id":         katID,
		"webhook-timestamp":  "1793042520",
	} {
		if v := g.header.Get(k); v != want {
			t.Errorf("%s: %q, want %q", k, v, want)
		}
	}
	// errand's signature, recomputed as in the docs.
	ts := g.header.Get("x-errand-timestamp")
	m := hmac.New(sha256.New, []byte(katKey))
	m.Write([]byte(ts + "." + string(g.body)))
	if want := "v1=" + hex.EncodeToString(m.Sum(nil)); g.header.Get("x-errand-signature") != want {
		t.Errorf("x-errand-signature %q, want %q", g.header.Get("x-errand-signature"), want)
	}
	if err := Verify(katKey, g.header, g.body, testNow.Add(time.Second), 0); err != nil {
		t.Errorf("Verify: %v", err)
	}
	if err := verifyStandard(katKey, g.header, g.body, testNow); err != nil {
		t.Errorf("Standard Webhooks: %v", err)
	}
	// The attempt's delivery token, as a function's but of kind webhook.
	kt := katTask()
	tok, err := VerifyToken(g.header.Get("X-Errand-Delivery"), kt.InstanceID, katKey, testNow.UnixMilli(), "X-Errand-Delivery")
	if err != nil || *tok != (Token{Instance: kt.InstanceID, Task: katID, Depth: kt.Depth, Expires: kt.DeadlineAt + tokenLate, Kind: TokenWebhook}) {
		t.Errorf("delivery token %+v: %v", tok, err)
	}
	if got, fn := g.header.Get("X-Errand-Delivery"), SignToken(kt, katKey); got == fn || !strings.Contains(got, ".") {
		t.Errorf("a webhook's token %q should differ from a function's %q only by its kind", got, fn)
	}
}

func TestWebhookOutcomes(t *testing.T) {
	t.Parallel()
	httpDate := testNow.Add(90 * time.Second).UTC().Format(http.TimeFormat)
	pastDate := testNow.Add(-time.Hour).UTC().Format(http.TimeFormat)
	long := strings.Repeat("x", 300)
	cases := []struct {
		name    string
		status  int
		header  map[string]string
		body    string
		want    string // Outcome.Status
		err     string
		result  string
		defer_  bool
		delay   time.Duration
		control task.Outcome // OutcomeFor(true) status, delay
	}{
		{name: "200 json", status: 200, body: `{"ok":1}`, want: task.AttemptSucceeded, result: `{"ok":1}`},
		{name: "200 text", status: 200, body: "sent", want: task.AttemptSucceeded},
		{name: "200 json, not UTF-8", status: 200, body: "{\"a\":\"\xff\"}", want: task.AttemptSucceeded},
		{name: "204", status: 204, want: task.AttemptSucceeded},
		{name: "202 null", status: 202, body: "null", want: task.AttemptSucceeded},
		{name: "400", status: 400, body: "bad order\nid", want: task.AttemptFailed, err: "HTTP 400: bad order id"},
		{name: "404 empty", status: 404, want: task.AttemptFailed, err: "HTTP 404"},
		{name: "500 long", status: 500, body: long, want: task.AttemptFailed, err: "HTTP 500: " + long[:200]},
		{name: "302", status: 302, header: map[string]string{"Location": "http://169.254.169.254/"}, want: task.AttemptFailed,
			err: "HTTP 302: redirects are not followed (location http://169.254.169.254/)"},
		{name: "503 plain", status: 503, body: "down", want: task.AttemptFailed, err: "HTTP 503: down"},
		{name: "503 defer seconds", status: 503, header: map[string]string{"X-Task-Retry": "defer", "Retry-After": "60"}, body: "waiting",
			want: task.AttemptFailed, err: "HTTP 503: waiting", defer_: true, delay: time.Minute},
		{name: "503 defer date", status: 503, header: map[string]string{"X-Task-Retry": "Defer", "Retry-After": httpDate},
			want: task.AttemptFailed, err: "HTTP 503", defer_: true, delay: 89877 * time.Millisecond},
		{name: "503 defer past date", status: 503, header: map[string]string{"X-Task-Retry": "defer", "Retry-After": pastDate},
			want: task.AttemptFailed, err: "HTTP 503", defer_: true, delay: 0},
		{name: "503 defer no retry-after", status: 503, header: map[string]string{"X-Task-Retry": "defer"},
			want: task.AttemptFailed, err: "HTTP 503 (x-task-retry: defer ignored: retry-after is missing, or neither whole seconds nor an HTTP date)"},
		{name: "503 defer bad retry-after", status: 503, header: map[string]string{"X-Task-Retry": "defer", "Retry-After": "1.5"},
			want: task.AttemptFailed, err: "HTTP 503 (x-task-retry: defer ignored: retry-after is missing, or neither whole seconds nor an HTTP date)"},
		{name: "429 defer", status: 429, header: map[string]string{"X-Task-Retry": "defer", "Retry-After": "5"},
			want: task.AttemptFailed, err: "HTTP 429"},
	}
	srv := receiver(t, func(rw http.ResponseWriter, r *http.Request) {
		c := cases[atoiOr(r.URL.Query().Get("case"), 0)]
		for k, v := range c.header {
			rw.Header().Set(k, v)
		}
		rw.WriteHeader(c.status)
		io.WriteString(rw, c.body)
	})
	w := newWebhook(t, WebhookOptions{})
	for i, c := range cases {
		res := deliver(t, w, srv.URL+"/?case="+strconv.Itoa(i))
		o := res.Outcome
		if o.Status != c.want || o.Error != c.err || o.HTTPStatus != c.status || string(o.Result) != c.result {
			t.Errorf("%s: got %+v (result %q)", c.name, o, o.Result)
		}
		if res.Defer != c.defer_ || res.DeferDelay != c.delay {
			t.Errorf("%s: defer %v %v, want %v %v", c.name, res.Defer, res.DeferDelay, c.defer_, c.delay)
		}
		if off := res.OutcomeFor(false); off.Status != o.Status || off.Delay != 0 ||
			c.defer_ && off.Error != o.Error+" (the deferral was ignored: the queue's targetControl is off)" {
			t.Errorf("%s: targetControl off gives %+v", c.name, off)
		}
		on := res.OutcomeFor(true)
		said := "deferred by the target for " + c.delay.Round(time.Millisecond).String()
		if c.delay < task.MinDeferDelay {
			said += "; tried again after 1s, the shortest deferral"
		}
		if c.defer_ && (on.Status != task.AttemptDeferred || on.Delay != c.delay || on.HTTPStatus != 503 || on.Error != said) {
			t.Errorf("%s: targetControl on gives %+v", c.name, on)
		}
		if !c.defer_ && on.Status != o.Status {
			t.Errorf("%s: targetControl on changed %+v", c.name, on)
		}
	}
}

func atoiOr(s string, d int) int {
	if n, err := strconv.Atoi(s); err == nil {
		return n
	}
	return d
}

// TestWebhookDeadline: a target slower than the context's deadline fails
// the attempt with "deadline exceeded", promptly.
func TestWebhookDeadline(t *testing.T) {
	t.Parallel()
	srv := hanging(t)
	w := newWebhook(t, WebhookOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	res := w.Deliver(ctx, request(srv.URL))
	if res.Outcome.Status != task.AttemptFailed || res.Outcome.Error != "deadline exceeded" || res.Outcome.HTTPStatus != 0 {
		t.Fatalf("outcome %+v", res.Outcome)
	}
	if res.Duration < 100*time.Millisecond || res.Duration > 2*time.Second {
		t.Fatalf("duration %v", res.Duration)
	}
}

// TestWebhookResponseHeaderTimeout: the transport's backstop names itself.
func TestWebhookResponseHeaderTimeout(t *testing.T) {
	t.Parallel()
	srv := hanging(t)
	w := newWebhook(t, WebhookOptions{ResponseHeaderTimeout: 50 * time.Millisecond})
	res := deliver(t, w, srv.URL)
	if !strings.HasPrefix(res.Outcome.Error, "timeout") {
		t.Fatalf("outcome %+v", res.Outcome)
	}
}

func closedPort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func TestWebhookConnectionErrors(t *testing.T) {
	t.Parallel()
	w := newWebhook(t, WebhookOptions{})
	res := deliver(t, w, "http://"+closedPort(t)+"/")
	if res.Outcome.Status != task.AttemptFailed || res.Outcome.Error != "connect: connection refused" {
		t.Errorf("closed port: %+v", res.Outcome)
	}
	// A target that hangs up without answering.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		if req, err := http.ReadRequest(bufio.NewReader(c)); err == nil {
			io.Copy(io.Discard, req.Body) // the whole request, then hang up
		}
	}()
	res = deliver(t, w, "http://"+ln.Addr().String()+"/")
	ln.Close()
	wg.Wait()
	if res.Outcome.Status != task.AttemptFailed || res.Outcome.Error != "connection closed by the target before it answered" {
		t.Errorf("hang-up: %+v", res.Outcome)
	}
	for url, want := range map[string]string{
		"":                 "no webhook URL",
		"ftp://x/":         "invalid webhook URL",
		"http://%zz/":      "invalid webhook URL",
		"https://":         "invalid webhook URL",
		"http://bad host/": "invalid webhook URL",
	} {
		if res := deliver(t, w, url); res.Outcome.Error != want {
			t.Errorf("%q: %+v", url, res.Outcome)
		}
	}
}

func TestWebhookTLS(t *testing.T) {
	t.Parallel()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
	}))
	srv.Config.ErrorLog = quietLog // the refused handshakes are expected
	srv.StartTLS()
	t.Cleanup(srv.Close)
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())

	w := newWebhook(t, WebhookOptions{TLSConfig: &tls.Config{RootCAs: roots}})
	if res := deliver(t, w, srv.URL); res.Outcome.Status != task.AttemptSucceeded {
		t.Errorf("trusted: %+v", res.Outcome)
	}
	untrusting := newWebhook(t, WebhookOptions{})
	if res := deliver(t, untrusting, srv.URL); res.Outcome.Error != "tls: certificate signed by unknown authority" {
		t.Errorf("untrusted: %+v", res.Outcome)
	}
	// https to a plain HTTP server.
	plain := receiver(t, func(http.ResponseWriter, *http.Request) {})
	if res := deliver(t, w, strings.Replace(plain.URL, "http:", "https:", 1)); res.Outcome.Error != "tls: the target did not answer with TLS" {
		t.Errorf("plain server: %+v", res.Outcome)
	}
}

// TestWebhookClientCertificate: a target that requires a client
// certificate gets the one passed in the options.
func TestWebhookClientCertificate(t *testing.T) {
	t.Parallel()
	var sawCert atomic.Bool
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		sawCert.Store(r.TLS != nil && len(r.TLS.PeerCertificates) > 0)
	}))
	srv.TLS = &tls.Config{ClientAuth: tls.RequireAnyClientCert}
	srv.Config.ErrorLog = quietLog
	srv.StartTLS()
	t.Cleanup(srv.Close)
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())

	w := newWebhook(t, WebhookOptions{TLSConfig: &tls.Config{RootCAs: roots, Certificates: srv.TLS.Certificates}})
	if res := deliver(t, w, srv.URL); res.Outcome.Status != task.AttemptSucceeded || !sawCert.Load() {
		t.Errorf("with a certificate: %+v, seen %v", res.Outcome, sawCert.Load())
	}
	without := newWebhook(t, WebhookOptions{TLSConfig: &tls.Config{RootCAs: roots}})
	if res := deliver(t, without, srv.URL); res.Outcome.Error != "tls: the target sent an alert: certificate required" {
		t.Errorf("without a certificate: %+v", res.Outcome)
	}
}

// TestWebhookGuard dials a real loopback target through the guard: refused
// by default, delivered when 127.0.0.0/8 is allowed, http included.
func TestWebhookGuard(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	srv := receiver(t, func(http.ResponseWriter, *http.Request) { hits.Add(1) })

	guarded := newWebhook(t, WebhookOptions{Guard: NewGuard(nil)})
	res := deliver(t, guarded, srv.URL)
	want := "refused: 127.0.0.1 is a loopback address; list its range with --webhook-allow to permit it"
	if res.Outcome.Status != task.AttemptFailed || res.Outcome.Error != want {
		t.Errorf("guarded: %+v", res.Outcome)
	}
	if hits.Load() != 0 {
		t.Fatal("the guarded request reached the target")
	}

	allowed := newWebhook(t, WebhookOptions{Guard: NewGuard([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")})})
	if res := deliver(t, allowed, srv.URL); res.Outcome.Status != task.AttemptSucceeded {
		t.Errorf("allowed: %+v", res.Outcome)
	}
	if hits.Load() != 1 {
		t.Fatalf("hits %d", hits.Load())
	}
}

// TestWebhookBodyCap: a huge error body is read only up to the cap, and a
// modest one is drained so the connection is reused.
func TestWebhookBodyCap(t *testing.T) {
	t.Parallel()
	var conns atomic.Int32
	var written atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		size := atoiOr(r.URL.Query().Get("size"), 0)
		rw.WriteHeader(500)
		chunk := []byte(strings.Repeat("é", 512)) // 1 KiB, two bytes a character
		for n := 0; n < size; n += len(chunk) {
			m, err := rw.Write(chunk)
			written.Add(int64(m))
			if err != nil {
				return
			}
		}
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	w := newWebhook(t, WebhookOptions{})

	for range 3 {
		res := deliver(t, w, srv.URL+"/?size=10240")
		if want := "HTTP 500: " + strings.Repeat("é", 100); res.Outcome.Error != want {
			t.Fatalf("error %q", res.Outcome.Error)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections for three answers of 10 KiB, want 1 (reused)", n)
	}

	written.Store(0)
	res := deliver(t, w, srv.URL+"/?size=67108864") // 64 MiB offered
	if res.Outcome.HTTPStatus != 500 || len(res.Outcome.Error) != len("HTTP 500: ")+200 {
		t.Fatalf("outcome %+v", res.Outcome)
	}
	// The server may have buffered ahead into socket buffers, but far less
	// than it offered.
	if n := written.Load(); n > 16<<20 {
		t.Errorf("the server wrote %d bytes; the client read too much", n)
	}
}

func TestWebhookSuccessBodyTooLargeForResult(t *testing.T) {
	t.Parallel()
	big := `"` + strings.Repeat("a", task.MaxPayloadBytes) + `"`
	srv := receiver(t, func(rw http.ResponseWriter, r *http.Request) { io.WriteString(rw, big) })
	res := deliver(t, newWebhook(t, WebhookOptions{}), srv.URL)
	if res.Outcome.Status != task.AttemptSucceeded || res.Outcome.Result != nil {
		t.Fatalf("outcome %+v (result %d bytes)", res.Outcome.Status, len(res.Outcome.Result))
	}
}

func TestMux(t *testing.T) {
	t.Parallel()
	srv := receiver(t, func(http.ResponseWriter, *http.Request) {})
	m := &Mux{Webhook: newWebhook(t, WebhookOptions{})}
	ctx := context.Background()
	if res := m.Deliver(ctx, request(srv.URL)); res.Outcome.Status != task.AttemptSucceeded {
		t.Errorf("webhook: %+v", res.Outcome)
	}
	r := request("")
	r.Target = task.Target{Function: "app/send"}
	if res := m.Deliver(ctx, r); res.Outcome.Error != "function targets are not served here" {
		t.Errorf("function: %+v", res.Outcome)
	}
	r.Target = task.Target{}
	if res := m.Deliver(ctx, r); res.Outcome.Error != "no target" {
		t.Errorf("none: %+v", res.Outcome)
	}
}

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Duration{
		"0":                              0,
		" 120 ":                          2 * time.Minute,
		"99999999999999999999999":        MaxDeferDelay,
		"31536001":                       MaxDeferDelay,
		"Fri, 01 May 2026 12:01:30 GMT":  90 * time.Second,
		"Friday, 01-May-26 12:00:10 GMT": 10 * time.Second,
		"Fri May  1 12:00:05 2026":       5 * time.Second,
		"Thu, 30 Apr 2026 12:00:00 GMT":  0,
		"Sat, 01 May 2100 12:00:00 GMT":  MaxDeferDelay,
	} {
		got, ok := parseRetryAfter(in, now)
		if !ok || got != want {
			t.Errorf("%q: %v %v, want %v", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "-5", "1.5", "soon", "60s"} {
		if _, ok := parseRetryAfter(in, now); ok {
			t.Errorf("%q accepted", in)
		}
	}
}

func TestSnippet(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"  a\tb\r\nc  ", 50, "a b  c"},
		{"héllo", 2, "h"}, // never half a character
		{"héllo", 3, "hé"},
		{"\xff\xfeok", 10, "�ok"},
		{"", 10, ""},
	} {
		if got := snippet([]byte(c.in), c.n); got != c.want {
			t.Errorf("snippet(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
}

func TestShortError(t *testing.T) {
	t.Parallel()
	bg := context.Background()
	canceled, cancel := context.WithCancel(bg)
	cancel()
	dial := func(err error) error { return &net.OpError{Op: "dial", Net: "tcp", Err: err} }
	for _, c := range []struct {
		ctx  context.Context
		err  error
		want string
	}{
		{bg, dial(&net.DNSError{Err: "no such host", Name: "x.example", IsNotFound: true}), "dns: no such host"},
		{bg, dial(&net.DNSError{Err: "i/o timeout", Name: "x.example", IsTimeout: true}), "dns: timeout"},
		{bg, dial(&net.DNSError{Err: "server misbehaving", Name: "x.example"}), "dns: server misbehaving"},
		{bg, dial(os.ErrDeadlineExceeded), "connect: timeout"},
		{bg, dial(&RefusedError{Addr: netip.MustParseAddr("10.0.0.1"), Reason: "is a private address"}), "refused: 10.0.0.1 is a private address"},
		{bg, dial(ErrPlainHTTP), "refused: " + ErrPlainHTTP.Error()},
		{canceled, context.Canceled, "canceled"},
		{bg, errors.New("net/http: something odd\nhappened"), "something odd happened"},
	} {
		if got := shortError(c.ctx, c.err); got != c.want {
			t.Errorf("shortError(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}

func TestWebhookCanceled(t *testing.T) {
	t.Parallel()
	srv := receiver(t, func(http.ResponseWriter, *http.Request) {})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if res := newWebhook(t, WebhookOptions{}).Deliver(ctx, request(srv.URL)); res.Outcome.Error != "canceled" {
		t.Fatalf("outcome %+v", res.Outcome)
	}
}
