package deliver

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/errandhq/errand/internal/task"
)

// countConns counts the connections srv accepts.
func countConns(srv *httptest.Server) *atomic.Int32 {
	var n atomic.Int32
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			n.Add(1)
		}
	}
	return &n
}

// TestWebhookReusesConnection: whatever a target answers — empty, a JSON
// result, text, chunked, a result too big to keep, an error with a body, a
// deferral, a redirect — the answer is read or drained so that every
// delivery, one after another, goes over the same kept-alive connection.
func TestWebhookReusesConnection(t *testing.T) {
	t.Parallel()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		switch r.URL.Query().Get("a") {
		case "json":
			io.WriteString(rw, `{"ok":true}`)
		case "text":
			io.WriteString(rw, "fine")
		case "chunked":
			rw.(http.Flusher).Flush() // headers out before the body: no content length
			io.WriteString(rw, `{"late":1}`)
		case "big":
			io.WriteString(rw, `"`+strings.Repeat("a", task.MaxPayloadBytes+100)+`"`)
		case "error":
			rw.WriteHeader(500)
			io.WriteString(rw, strings.Repeat("x", 6000))
		case "defer":
			rw.Header().Set("X-Task-Retry", "defer")
			rw.Header().Set("Retry-After", "30")
			rw.WriteHeader(503)
		case "redirect":
			http.Redirect(rw, r, "/elsewhere", http.StatusFound)
		}
	}))
	conns := countConns(srv)
	srv.Start()
	t.Cleanup(srv.Close)
	w := newWebhook(t, WebhookOptions{})
	for _, tc := range []struct {
		answer string
		status int
		result string
	}{
		{"", 200, ""}, {"json", 200, `{"ok":true}`}, {"text", 200, ""}, {"chunked", 200, `{"late":1}`},
		{"big", 200, ""}, {"error", 500, ""}, {"defer", 503, ""}, {"redirect", 302, ""}, {"json", 200, `{"ok":true}`},
	} {
		res := deliver(t, w, srv.URL+"/?a="+tc.answer)
		if res.Outcome.HTTPStatus != tc.status || string(res.Outcome.Result) != tc.result {
			t.Errorf("%q: %+v", tc.answer, res.Outcome)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections for nine deliveries one after another, want 1", n)
	}
}

// TestWebhookHTTP2: an https target that offers HTTP/2 gets its deliveries
// over HTTP/2, signed as over HTTP/1.1, many at once on one connection.
func TestWebhookHTTP2(t *testing.T) {
	t.Parallel()
	var protos atomic.Value
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := Verify(katKey, r.Header, body, testNow, 0); err != nil {
			rw.WriteHeader(401)
			return
		}
		if err := verifyStandard(katKey, r.Header, body, testNow); err != nil {
			rw.WriteHeader(401)
			return
		}
		protos.Store(r.Proto)
	}))
	srv.EnableHTTP2 = true
	conns := countConns(srv)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	w := newWebhook(t, WebhookOptions{TLSConfig: &tls.Config{RootCAs: roots}})

	// The first delivery opens the connection; the rest share it at once.
	if res := deliver(t, w, srv.URL); res.Outcome.Status != task.AttemptSucceeded {
		t.Fatalf("first: %+v", res.Outcome)
	}
	done := make(chan Result)
	for range 20 {
		go func() { done <- deliver(t, w, srv.URL) }()
	}
	for range 20 {
		if res := <-done; res.Outcome.Status != task.AttemptSucceeded {
			t.Errorf("%+v", res.Outcome)
		}
	}
	if p := protos.Load(); p != "HTTP/2.0" {
		t.Errorf("protocol %v, want HTTP/2.0", p)
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections, want 1 (multiplexed)", n)
	}
}

// TestWebhookSignsWithEachKey: deliveries signed with several keys in turn,
// each key's keyed hashes reused from its pool, carry exactly what Sign and
// SignStandard compute; a key not of the whsec_ base64 form gets errand's
// signature alone.
func TestWebhookSignsWithEachKey(t *testing.T) {
	t.Parallel()
	type got struct {
		h    http.Header
		body []byte
	}
	seen := make(chan got, 1)
	srv := receiver(t, func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		seen <- got{r.Header.Clone(), body}
	})
	w := newWebhook(t, WebhookOptions{})
	keys := []string{katKey, NewWebhookKey(), "plainkey", katKey, "whsec_not base64!"}
	for round := range 3 {
		for i, key := range keys {
			r := request(srv.URL)
			r.Key = key
			r.Now = testNow.Add(time.Duration(round*len(keys)+i) * time.Second)
			r.Task.ID = "t" + strconv.Itoa(i)
			if res := w.Deliver(t.Context(), r); res.Outcome.Status != task.AttemptSucceeded {
				t.Fatalf("%+v", res.Outcome)
			}
			g := <-seen
			ms, secs := r.Now.UnixMilli(), r.Now.Unix()
			if v := g.h.Get(HeaderSignature); v != Sign(key, ms, g.body) {
				t.Errorf("key %q round %d: %s %q", key, round, HeaderSignature, v)
			}
			if v := g.h.Get(HeaderTimestamp); v != strconv.FormatInt(ms, 10) {
				t.Errorf("%s %q", HeaderTimestamp, v)
			}
			want, ok := SignStandard(key, r.Task.ID, secs, g.body)
			if v := g.h.Get(HeaderWebhookSignature); v != want || (g.h.Get(HeaderWebhookTimestamp) != "") != ok {
				t.Errorf("key %q round %d: %s %q, want %q", key, round, HeaderWebhookSignature, v, want)
			}
			if ok && g.h.Get(HeaderWebhookTimestamp) != strconv.FormatInt(secs, 10) {
				t.Errorf("%s %q", HeaderWebhookTimestamp, g.h.Get(HeaderWebhookTimestamp))
			}
			if g.h.Get(HeaderWebhookID) != r.Task.ID || string(g.body) != string(Body(r.Task)) {
				t.Errorf("id %q body %s", g.h.Get(HeaderWebhookID), g.body)
			}
		}
	}
}
