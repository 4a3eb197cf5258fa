package deliver

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/errandhq/errand/internal/task"
)

// rawTarget is a loopback listener the test answers by hand, one accepted
// connection at a time, to send what net/http's server would not.
type rawTarget struct {
	ln    net.Listener
	conns chan net.Conn
}

func newRawTarget(t *testing.T) *rawTarget {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rt := &rawTarget{ln: ln, conns: make(chan net.Conn, 8)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			rt.conns <- c
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		close(rt.conns)
		for c := range rt.conns {
			c.Close()
		}
	})
	return rt
}

func (rt *rawTarget) url() string { return "http://" + rt.ln.Addr().String() + "/hook" }

// accept returns the next connection the deliverer opened.
func (rt *rawTarget) accept(t *testing.T) (net.Conn, *bufio.Reader) {
	t.Helper()
	select {
	case c := <-rt.conns:
		t.Cleanup(func() { c.Close() })
		return c, bufio.NewReader(c)
	case <-time.After(5 * time.Second):
		t.Fatal("no connection")
		return nil, nil
	}
}

// readRequest reads one request from br, body included.
func readRequest(t *testing.T, br *bufio.Reader) *http.Request {
	t.Helper()
	req, err := http.ReadRequest(br)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, req.Body)
	return req
}

// deliverAsync delivers to url in the background; the result arrives on
// the channel.
func deliverAsync(ctx context.Context, w *Webhook, url string) <-chan Result {
	ch := make(chan Result, 1)
	go func() { ch <- w.Deliver(ctx, request(url)) }()
	return ch
}

func wait(t *testing.T, ch <-chan Result) Result {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(5 * time.Second):
		t.Fatal("the delivery did not end")
		return Result{}
	}
}

const okAnswer = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"

// firstDelivery starts a delivery with ctx to a new raw target and reads
// its request there: the test answers on c.
func firstDelivery(t *testing.T, ctx context.Context) (rt *rawTarget, w *Webhook, ch <-chan Result, c net.Conn, br *bufio.Reader) {
	t.Helper()
	rt = newRawTarget(t)
	w = newWebhook(t, WebhookOptions{})
	ch = deliverAsync(ctx, w, rt.url())
	c, br = rt.accept(t)
	readRequest(t, br)
	return rt, w, ch, c, br
}

// TestPlainClosedIdleConnection: a target that closes a kept-alive
// connection while it is idle (as servers with a short keep-alive timeout
// do) costs no attempt: the next delivery notices the close and dials
// again instead of writing into the dead connection.
func TestPlainClosedIdleConnection(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rt, w, ch, c, _ := firstDelivery(t, ctx)
	io.WriteString(c, okAnswer)
	if r := wait(t, ch); r.Outcome.Status != task.AttemptSucceeded {
		t.Fatalf("first delivery: %+v", r.Outcome)
	}
	c.Close() // idle now, as far as the deliverer knows
	ch = deliverAsync(ctx, w, rt.url())
	c2, br2 := rt.accept(t)
	readRequest(t, br2)
	io.WriteString(c2, okAnswer)
	if r := wait(t, ch); r.Outcome.Status != task.AttemptSucceeded {
		t.Fatalf("delivery after the target closed the idle connection: %+v", r.Outcome)
	}
}

// TestPlainConnectionClose: an answer that asks to close the connection,
// or an HTTP/1.0 one, is the connection's last; the next delivery dials.
func TestPlainConnectionClose(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		answer string
		close  bool // the target closes after answering (else it leaves the connection open)
	}{
		{"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", false},
		{"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", false},
		{"HTTP/1.1 200 OK\r\n\r\n{}", true}, // no length: the body ends with the connection
	} {
		rt := newRawTarget(t)
		w := newWebhook(t, WebhookOptions{})
		for i := range 2 {
			ch := deliverAsync(context.Background(), w, rt.url())
			conn, br := rt.accept(t) // fails the test if the first connection was used again
			readRequest(t, br)
			io.WriteString(conn, c.answer)
			if c.close {
				conn.Close()
			}
			if r := wait(t, ch); r.Outcome.Status != task.AttemptSucceeded {
				t.Fatalf("%q, delivery %d: %+v", c.answer, i, r.Outcome)
			}
		}
	}
}

// TestPlainInformational: 1xx answers before the final one are skipped,
// however many; an endless run of them fails the attempt at the header cap,
// which they share with the final answer.
func TestPlainInformational(t *testing.T) {
	t.Parallel()
	rt, w, ch, c, br := firstDelivery(t, context.Background())
	io.WriteString(c, "HTTP/1.1 100 Continue\r\n\r\n"+strings.Repeat("HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n", 6)+
		"HTTP/1.1 201 Created\r\nContent-Length: 11\r\n\r\n{\"ok\":true}")
	if r := wait(t, ch); r.Outcome.Status != task.AttemptSucceeded || r.Outcome.HTTPStatus != 201 || string(r.Outcome.Result) != `{"ok":true}` {
		t.Fatalf("after 1xx: %+v", r.Outcome)
	}
	ch = deliverAsync(context.Background(), w, rt.url())
	readRequest(t, br) // the same connection
	go func() {
		for {
			if _, err := io.WriteString(c, "HTTP/1.1 100 Continue\r\n\r\n"); err != nil {
				return
			}
		}
	}()
	if r := wait(t, ch); r.Outcome.Status != task.AttemptFailed || !strings.Contains(r.Outcome.Error, "exceeded 65536 bytes") {
		t.Fatalf("endless 1xx: %+v", r.Outcome)
	}
}

// TestPlainHeaderCap: an answer whose headers pass 64 KiB fails the attempt
// at the cap, without reading on.
func TestPlainHeaderCap(t *testing.T) {
	t.Parallel()
	_, _, ch, c, _ := firstDelivery(t, context.Background())
	go func() {
		io.WriteString(c, "HTTP/1.1 200 OK\r\n")
		line := "X-Filler: " + strings.Repeat("a", 1000) + "\r\n"
		for range 200 { // ~200 KB, more than the cap
			if _, err := io.WriteString(c, line); err != nil {
				return
			}
		}
	}()
	r := wait(t, ch)
	if r.Outcome.Status != task.AttemptFailed || !strings.Contains(r.Outcome.Error, "exceeded 65536 bytes") {
		t.Fatalf("outcome %+v", r.Outcome)
	}
}

// TestPlainCanceledInFlight: the engine stopping (the attempt's context
// canceled) ends a delivery waiting for its answer at once.
func TestPlainCanceledInFlight(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	_, _, ch, _, _ := firstDelivery(t, ctx) // the request is out; no answer comes
	cancel()
	if r := wait(t, ch); r.Outcome.Error != "canceled" {
		t.Fatalf("outcome %+v", r.Outcome)
	}
}

// TestPlainIdleTimeout: a connection idle for IdleConnTimeout is closed
// by the deliverer, and Close closes the idle ones at once.
func TestPlainIdleTimeout(t *testing.T) {
	t.Parallel()
	for _, viaClose := range []bool{false, true} {
		closed := make(chan struct{}, 1)
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
		srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
			if s == http.StateClosed {
				closed <- struct{}{}
			}
		}
		srv.Start()
		t.Cleanup(srv.Close)
		opts := WebhookOptions{IdleConnTimeout: 20 * time.Millisecond}
		if viaClose {
			opts.IdleConnTimeout = time.Hour
		}
		w := newWebhook(t, opts)
		if r := deliver(t, w, srv.URL); r.Outcome.Status != task.AttemptSucceeded {
			t.Fatalf("outcome %+v", r.Outcome)
		}
		if viaClose {
			w.Close()
		}
		select {
		case <-closed:
		case <-time.After(5 * time.Second):
			t.Fatalf("close=%v: the idle connection was not closed", viaClose)
		}
	}
}

// TestPlainSendsWhatTheTransportSends: a receiver sees the same method,
// path, headers and body from errand's HTTP/1.1 client as from net/http's
// Transport, for a body larger than the client's write buffer too.
func TestPlainSendsWhatTheTransportSends(t *testing.T) {
	t.Parallel()
	type seen struct {
		method, uri, host, proto string
		header                   http.Header
		body                     string
	}
	got := make(chan seen, 2)
	srv := receiver(t, func(rw http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{r.Method, r.RequestURI, r.Host, r.Proto, r.Header, string(b)}
	})
	req := request(srv.URL + "/a/b%20c?x=1&y=%2F")
	req.Task.Payload = []byte(`{"blob":"` + strings.Repeat("z", 20000) + `"}`)
	req.Now = testNow
	var views [2]seen
	for i, plain := range []bool{true, false} {
		w := newWebhook(t, WebhookOptions{})
		if !plain {
			w.plain = nil
		}
		if r := w.Deliver(context.Background(), req); r.Outcome.Status != task.AttemptSucceeded {
			t.Fatalf("plain=%v: %+v", plain, r.Outcome)
		}
		views[i] = <-got
	}
	p, tr := views[0], views[1]
	if p.method != tr.method || p.uri != tr.uri || p.host != tr.host || p.proto != tr.proto || p.body != tr.body {
		t.Errorf("request line or body differ:\nplain     %s %s %s host %s (%d bytes)\ntransport %s %s %s host %s (%d bytes)",
			p.method, p.uri, p.proto, p.host, len(p.body), tr.method, tr.uri, tr.proto, tr.host, len(tr.body))
	}
	if len(p.header) != len(tr.header) {
		t.Errorf("headers: plain %v, transport %v", p.header, tr.header)
	}
	for k, v := range tr.header {
		if strings.Join(p.header[k], ",") != strings.Join(v, ",") {
			t.Errorf("header %s: plain %q, transport %q", k, p.header[k], v)
		}
	}
}

// TestParsePlain: which http:// URLs errand's client sends to itself, and
// what it dials and names.
func TestParsePlain(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		url, id         string
		ok              bool
		addr, host, uri string
	}{
		{"http://example.com", "t1", true, "example.com:80", "example.com", "/"},
		{"HTTP://Example.com:8080/a?b=c", "t1", true, "Example.com:8080", "Example.com:8080", "/a?b=c"},
		{"http://[::1]:9/x", "t1", true, "[::1]:9", "[::1]:9", "/x"},
		{"http://10.0.0.1/p%20q", "t1", true, "10.0.0.1:80", "10.0.0.1", "/p%20q"},
		{"https://example.com/", "t1", false, "", "", ""},
		{"http://user:pw@example.com/", "t1", false, "", "", ""},
		{"http://bücher.example/", "t1", false, "", "", ""},
		{"http://example.com:/", "t1", false, "", "", ""},
		{"http:///nohost", "t1", false, "", "", ""},
		{"http://example.com/", "bad\r\nid", false, "", "", ""},
		{"http://example.com/", "", false, "", "", ""},
		{"http://[fe80::1%25lo]:8080/", "t1", false, "", "", ""},
		{`http://a"b/`, "t1", false, "", "", ""},
	} {
		pt, ok := parsePlain(c.url, c.id)
		if ok != c.ok || (ok && (pt.addr != c.addr || pt.host != c.host || pt.uri != c.uri)) {
			t.Errorf("parsePlain(%q, %q) = %+v, %v", c.url, c.id, pt, ok)
		}
	}
}

// TestPlainPoisonedNotReused: a connection that carries a deadline in the
// past (the attempt's end or the header timer came as its answer did) is
// never handed out again, even if it reached the pool: get skips it, and so
// would plainAlive's peek, which the deadline fails.
func TestPlainPoisonedNotReused(t *testing.T) {
	t.Parallel()
	rt := newRawTarget(t)
	w := newWebhook(t, WebhookOptions{})
	pt, ok := parsePlain(rt.url(), "t1")
	if !ok {
		t.Fatal("parsePlain refused the target")
	}
	ctx := context.Background()
	c, err := w.plain.get(ctx, pt.addr)
	if err != nil {
		t.Fatal(err)
	}
	rt.accept(t)
	c.poison()
	w.plain.put(c)
	c2, err := w.plain.get(ctx, pt.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.nc.Close()
	if c2 == c {
		t.Fatal("the poisoned connection was handed out again")
	}
	rt.accept(t) // a second connection was dialed
}
