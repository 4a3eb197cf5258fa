package deliver

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// plainClient delivers to http:// webhooks over HTTP/1.1 connections it
// pools itself. A delivery takes a connection, writes its request through a
// 4 KiB buffer (one write for a request that fits), reads the answer with
// net/http's own parser (http.ReadResponse) and puts the connection back,
// all in the delivering goroutine. net/http's
// Transport, which errand keeps for https:// (where a target may offer
// HTTP/2), runs a reading and a writing goroutine per connection and hands
// every request and answer between them and the caller: on loopback that
// was about a third of the CPU of a delivery.
//
// Its rules are the Transport's: the guard sees every dial (the same
// dialer), an idle connection is closed after idleTimeout, a connection
// goes back to the pool only when its answer was read to the end and did
// not ask to close, and the answer's headers (informational answers
// included) are capped at 64 KiB together and must come within
// headerTimeout. An idle connection the target has closed is noticed
// (plainAlive) before it is used, as the Transport's reading goroutine
// would have noticed it. Two differences, both narrow: a request is never
// sent again (the Transport resends one on a new connection when a reused
// connection failed before any of it was written, a window plainAlive
// keeps small: here that attempt fails and is retried with backoff), and an
// answer sent while the request's write is stalled (a target that answers
// 413 early, then neither reads nor closes) is seen only when the write
// ends, by error or by the attempt's deadline.
//
// Its pool (plain_pool.go) also keeps the number of connections to a
// target near what the target's pace needs: see defaultConnsPerHost.
type plainClient struct {
	dial          func(ctx context.Context, network, addr string) (net.Conn, error)
	headerTimeout time.Duration
	idleTimeout   time.Duration
	maxIdleHost   int
	maxIdle       int
	connsPerHost  int           // connections dialed to a target without waiting for one
	connWait      time.Duration // how long a delivery past them waits for one to come back
	onWait        func()        // tests only: called when a delivery starts to wait for a connection

	mu    sync.Mutex
	hosts map[string]*hostPool // by dial address
	nIdle int
	sweep *time.Timer // closes connections idle past idleTimeout; nil when none is pending
}

// plainTarget is an http:// webhook URL as plainClient sends to it.
type plainTarget struct {
	addr string // host:port to dial
	host string // the Host header
	uri  string // the request target: path and query
}

// parsePlain reads an http:// webhook URL that plainClient can send to as
// net/http would, and says whether it can: a URL with user info (net/http
// turns it into an Authorization header), a host that is not plain ASCII
// (net/http converts it to punycode), or a request line or id that holds a
// control character is left to net/http, which sends or refuses it as it
// always did.
func parsePlain(raw, id string) (plainTarget, bool) {
	if len(raw) < 7 || !strings.EqualFold(raw[:7], "http://") {
		return plainTarget{}, false
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "http" || u.Host == "" || u.User != nil || u.Opaque != "" ||
		strings.HasSuffix(u.Host, ":") || !plainHost(u.Host) || !plainText(id) {
		return plainTarget{}, false
	}
	uri := u.RequestURI()
	if !plainText(uri) {
		return plainTarget{}, false
	}
	port := u.Port()
	if port == "" {
		port = "80"
	}
	return plainTarget{addr: net.JoinHostPort(u.Hostname(), port), host: u.Host, uri: uri}, true
}

// plainHost reports whether host is made of what a plain host name or IP
// literal holds, and so goes into the Host header as net/http would send it
// (which strips an IPv6 zone and refuses other characters).
func plainHost(host string) bool {
	for i := 0; i < len(host); i++ {
		switch b := host[i]; {
		case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9':
		case b == '.', b == '-', b == '_', b == ':', b == '[', b == ']':
		default:
			return false
		}
	}
	return host != ""
}

// plainText reports whether s is printable ASCII without spaces.
func plainText(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] >= 0x7f {
			return false
		}
	}
	return s != ""
}

// plainHeaders reports whether a target's headers can be written as they
// are (task.ValidateTarget allows no others): names printable ASCII
// without spaces or a colon, values without control characters but tabs.
// Any other is left to net/http, which refuses it.
func plainHeaders(h map[string]string) bool {
	for k, v := range h {
		if !plainText(k) || strings.IndexByte(k, ':') >= 0 {
			return false
		}
		for i := 0; i < len(v); i++ {
			if c := v[i]; (c < ' ' && c != '\t') || c == 0x7f {
				return false
			}
		}
	}
	return true
}

// plainConn is one pooled connection.
type plainConn struct {
	nc     net.Conn
	addr   string
	br     *bufio.Reader // reads through the conn itself, which keeps the budget
	bw     *bufio.Writer
	budget int64     // bytes reads may still take from nc while the headers are read; < 0: no cap
	idleAt time.Time // when it went back to the pool
	body   eofBody   // the answer's body, which notes its end
	// poisoned is set once a deadline in the past is on the connection;
	// it is then never pooled again.
	poisoned atomic.Bool
}

// Read reads from the network connection within the budget.
func (c *plainConn) Read(p []byte) (int, error) {
	if c.budget >= 0 {
		if c.budget == 0 {
			return 0, errHeadersTooLarge
		}
		if int64(len(p)) > c.budget {
			p = p[:c.budget]
		}
	}
	n, err := c.nc.Read(p)
	if c.budget >= 0 {
		c.budget -= int64(n)
	}
	return n, err
}

// maxAnswerHeader caps an answer's status line and headers, as the
// Transport's MaxResponseHeaderBytes does.
const maxAnswerHeader = 64 << 10

var (
	errHeadersTooLarge = errors.New("the answer's headers exceeded 65536 bytes")
	// errHeaderTimeout reads as the Transport's error, which shortError names.
	errHeaderTimeout = errors.New("timeout awaiting response headers")
)

// eofBody is an answer's body that notes whether it was read to its end.
type eofBody struct {
	io.ReadCloser
	eof bool
}

// Read reads from the body and notes its end.
func (b *eofBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.eof = true
	}
	return n, err
}

// deliver sends the signed POST to pt and classifies the answer as the
// Transport path does.
//
// A pooled connection carries no deadline. The only deadline ever set on
// one is a time long past (poison), by the attempt's end or by the header
// timeout, and a poisoned connection is never pooled again: no code path
// clears a deadline that another goroutine may just have set.
func (p *plainClient) deliver(ctx context.Context, pt plainTarget, s *signed, now time.Time) Result {
	c, err := p.get(ctx, pt.addr)
	if err != nil {
		return failed(0, shortError(ctx, err))
	}
	// The attempt's end (its deadline, or the engine stopping) interrupts
	// the connection's reads and writes at once.
	stop := context.AfterFunc(ctx, c.poison)
	resp, err := c.roundTrip(pt, s, p.headerTimeout)
	if err != nil {
		stop()
		p.drop(c)
		if cerr := ctx.Err(); cerr != nil {
			err = cerr // the I/O error is the attempt's end, set on the connection
		}
		return failed(0, shortError(ctx, err))
	}
	res := answer(resp, now)
	reuse := resp.StatusCode >= 200 && !resp.Close && (resp.ContentLength == 0 || c.body.eof)
	if !stop() || c.poisoned.Load() {
		reuse = false
	}
	if reuse {
		p.put(c)
	} else {
		p.drop(c)
	}
	return res
}

// aLongTimeAgo is a deadline in the past: I/O with it set fails at once.
var aLongTimeAgo = time.Unix(1, 0)

// poison makes every read and write on the connection fail from now on.
func (c *plainConn) poison() {
	c.poisoned.Store(true)
	c.nc.SetDeadline(aLongTimeAgo)
}

// earlyAnswerWait is how long a request whose write failed waits for an
// answer the target may have sent before it stopped reading (a 413 for a
// body it will not take, say); the Transport's reading goroutine would
// have read such an answer already.
const earlyAnswerWait = 50 * time.Millisecond

// roundTrip writes the request and reads the answer's headers, skipping
// informational (1xx) answers; the body is left to read. No answer's
// headers within headerTimeout fail it.
func (c *plainConn) roundTrip(pt plainTarget, s *signed, headerTimeout time.Duration) (*http.Response, error) {
	bw := c.bw
	bw.WriteString("POST ")
	bw.WriteString(pt.uri)
	bw.WriteString(" HTTP/1.1\r\nHost: ")
	bw.WriteString(pt.host)
	bw.WriteString("\r\nUser-Agent: " + UserAgent + "\r\nContent-Length: ")
	var n [20]byte
	bw.Write(strconv.AppendInt(n[:0], int64(len(s.body)), 10))
	bw.WriteString("\r\nContent-Type: application/json\r\n")
	header(bw, HeaderTimestamp, s.ms)
	header(bw, HeaderSignature, s.sig)
	header(bw, HeaderWebhookID, s.id)
	header(bw, HeaderDelivery, s.token)
	if s.standard {
		header(bw, HeaderWebhookTimestamp, s.secs)
		header(bw, HeaderWebhookSignature, s.stdSig)
	}
	for k, v := range s.headers {
		header(bw, k, v)
	}
	bw.WriteString("\r\n")
	bw.Write(s.body)
	werr := bw.Flush()
	wait := headerTimeout
	if werr != nil {
		wait = earlyAnswerWait
	}
	late := time.AfterFunc(wait, c.poison)
	resp, err := c.readAnswer()
	fired := !late.Stop() // then the connection is poisoned and never pooled
	switch {
	case err != nil && werr != nil:
		return nil, werr // no answer came after the failed write
	case err != nil && fired:
		return nil, errHeaderTimeout // deliver names the attempt's end instead, if it came first
	case err != nil:
		return nil, err
	case werr != nil, fired:
		// The request did not go out whole, or the header timer fired as
		// the answer came (its poison may land any moment): the
		// connection's last answer.
		resp.Close = true
	}
	return resp, nil
}

// readAnswer reads the headers of the final answer, skipping informational
// ones; all of them share the 64 KiB cap, as in the Transport.
func (c *plainConn) readAnswer() (*http.Response, error) {
	c.budget = maxAnswerHeader
	defer func() { c.budget = -1 }()
	for {
		resp, err := http.ReadResponse(c.br, nil)
		if err != nil {
			if c.budget == 0 {
				// The cap cut the answer off, maybe mid-line: whatever the
				// parser made of the cut, the headers were too large.
				err = errHeadersTooLarge
			}
			return nil, err
		}
		if resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			c.body = eofBody{ReadCloser: resp.Body}
			resp.Body = &c.body
			return resp, nil
		}
		// A 1xx answer has no body; the final one follows.
	}
}

// header writes one header line.
func header(bw *bufio.Writer, name, value string) {
	bw.WriteString(name)
	bw.WriteString(": ")
	bw.WriteString(value)
	bw.WriteString("\r\n")
}
