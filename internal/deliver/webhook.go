package deliver

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"strings"
	"time"
	"unsafe"
)

// UserAgent is sent with every webhook delivery.
const UserAgent = "errand/1"

// WebhookOptions configure NewWebhook; zero fields take the defaults.
type WebhookOptions struct {
	// Guard, when set (serve mode), checks every address at dial time and
	// keeps http:// to allowed ranges. nil (dev mode) allows anything.
	Guard *Guard
	// DialTimeout bounds connecting, DNS included (10 s).
	DialTimeout time.Duration
	// TLSHandshakeTimeout bounds the TLS handshake (10 s).
	TLSHandshakeTimeout time.Duration
	// ResponseHeaderTimeout bounds the wait for the answer's headers after
	// the request is sent (15 min, above the longest deadline of 840 s). The
	// attempt's own limit is the context's deadline, set by the engine; this
	// is a backstop for a context without one.
	ResponseHeaderTimeout time.Duration
	// IdleConnTimeout closes a pooled connection unused this long (90 s).
	IdleConnTimeout time.Duration
	// MaxIdleConnsPerHost is how many connections to one target are kept
	// for reuse (1024): at least the deliveries one instance may have in
	// flight (maxInFlight), or connections churn under load.
	MaxIdleConnsPerHost int
	// MaxIdleConns is how many are kept over all targets (4096).
	MaxIdleConns int
	// ConnsPerHost is how many connections to one http:// target are
	// dialed at once without first waiting for one in use to come back
	// (64), and ConnWait how long a delivery past them waits before it
	// dials anyway (100 ms): a fast target is served over about as many
	// connections as its pace needs, a slow one over as many as it has
	// deliveries in flight.
	ConnsPerHost int
	ConnWait     time.Duration
	// TLSConfig, when set, is cloned for the client (custom roots, client
	// certificates). nil uses the system roots.
	TLSConfig *tls.Config
}

// Webhook delivers to webhook targets: a signed POST over a pooled
// connection (HTTP/2 when an https target offers it, HTTP/1.1 keep-alive
// otherwise) that follows no redirect and uses no proxy. An http:// target
// is served by errand's own HTTP/1.1 client (plainClient), an https:// one
// by net/http's Transport. It is safe for concurrent use; Close releases its
// idle connections.
type Webhook struct {
	transport *http.Transport
	plain     *plainClient // nil where the platform cannot check an idle connection
	guard     *Guard
	signers   signers
}

// NewWebhook returns a webhook deliverer with its own connection pool.
func NewWebhook(opts WebhookOptions) *Webhook {
	dialer := &net.Dialer{
		Timeout:   cmp.Or(opts.DialTimeout, 10*time.Second),
		KeepAlive: 30 * time.Second,
	}
	if opts.Guard != nil {
		dialer.ControlContext = opts.Guard.ControlContext
	}
	tlsConf := &tls.Config{MinVersion: tls.VersionTLS12}
	if opts.TLSConfig != nil {
		tlsConf = opts.TLSConfig.Clone()
		if tlsConf.MinVersion == 0 {
			tlsConf.MinVersion = tls.VersionTLS12
		}
	}
	tr := &http.Transport{
		Proxy:                  nil, // never the environment's proxy: the guard must see the real target
		DialContext:            dialer.DialContext,
		TLSClientConfig:        tlsConf,
		TLSHandshakeTimeout:    cmp.Or(opts.TLSHandshakeTimeout, 10*time.Second),
		ResponseHeaderTimeout:  cmp.Or(opts.ResponseHeaderTimeout, 15*time.Minute),
		IdleConnTimeout:        cmp.Or(opts.IdleConnTimeout, 90*time.Second),
		MaxIdleConns:           cmp.Or(opts.MaxIdleConns, 4096),
		MaxIdleConnsPerHost:    cmp.Or(opts.MaxIdleConnsPerHost, 1024),
		MaxResponseHeaderBytes: 64 << 10,
		DisableCompression:     true,
		// A custom dialer or TLS config turns HTTP/2 off unless asked for:
		// a target that offers h2 (ALPN) gets one multiplexed connection.
		ForceAttemptHTTP2: true,
	}
	w := &Webhook{transport: tr, guard: opts.Guard}
	if plainSupported {
		w.plain = &plainClient{
			dial:          dialer.DialContext,
			headerTimeout: tr.ResponseHeaderTimeout,
			idleTimeout:   tr.IdleConnTimeout,
			maxIdleHost:   tr.MaxIdleConnsPerHost,
			maxIdle:       tr.MaxIdleConns,
			connsPerHost:  cmp.Or(opts.ConnsPerHost, defaultConnsPerHost),
			connWait:      cmp.Or(opts.ConnWait, defaultConnWait),
		}
	}
	return w
}

// Close closes the idle pooled connections. Deliveries in flight finish.
func (w *Webhook) Close() {
	w.transport.CloseIdleConnections()
	if w.plain != nil {
		w.plain.closeIdle()
	}
}

// Deliver POSTs the task to r.Target.Webhook, signed with r.Key, and
// classifies the answer: 2xx succeeded; 503 with `x-task-retry: defer` and a
// valid `retry-after` sets Result.Defer; any other answer, a redirect, a
// connection error or the context's end failed. A 2xx body that is JSON of
// at most 64 KiB becomes Outcome.Result.
func (w *Webhook) Deliver(ctx context.Context, r *Request) Result {
	start := time.Now()
	res := w.deliver(ctx, r)
	res.Duration = time.Since(start)
	return res
}

func (w *Webhook) deliver(ctx context.Context, r *Request) Result {
	if r.Task == nil || r.Target.Webhook == "" {
		return failed(0, "no webhook URL")
	}
	now := r.Now
	if now.IsZero() {
		now = time.Now()
	}
	if w.guard != nil && len(r.Target.Webhook) > 5 && strings.EqualFold(r.Target.Webhook[:5], "http:") {
		ctx = withPlainHTTP(ctx) // the dial must then land in an allowed range
	}
	s := w.sign(r, now)
	s.headers = r.Target.Headers
	if w.plain != nil {
		if pt, ok := parsePlain(r.Target.Webhook, r.Task.ID); ok && plainHeaders(s.headers) {
			return w.plain.deliver(ctx, pt, &s, now)
		}
	}
	req, err := s.request(ctx, r.Target.Webhook)
	if err != nil || (req.URL.Scheme != "https" && req.URL.Scheme != "http") || req.URL.Host == "" {
		return failed(0, "invalid webhook URL")
	}
	// The transport itself, not an http.Client: a 3xx is the answer (a
	// redirect could lead anywhere), and the client's redirect bookkeeping
	// (a copy of the URL and the headers per request) is not needed.
	resp, err := w.transport.RoundTrip(req)
	if err != nil {
		return failed(0, shortError(ctx, err))
	}
	defer resp.Body.Close()
	return answer(resp, now)
}

// Header values that are the same on every delivery, shared read-only by
// all requests.
var (
	contentTypeJSON = []string{"application/json"}
	userAgent       = []string{UserAgent}
)

// signed is a delivery's body and the values of the headers made for it:
// errand's timestamp and signature, the task id, the Standard Webhooks
// timestamp and signature (when the key has that form), and the attempt's
// delivery token.
type signed struct {
	body                             []byte
	ms, sig, id, secs, stdSig, token string
	standard                         bool
	headers                          map[string]string // the target's own (task.Target.Headers)
}

// sign builds the body of a delivery and signs it. The body and every
// header value made for this delivery share one buffer, so a delivery costs
// a handful of allocations whatever its size.
func (w *Webhook) sign(r *Request, now time.Time) signed {
	t := r.Task
	ks := w.signers.get(r.Key)
	buf := make([]byte, 0, bodySize(t)+2*len(t.ID)+180+tokenCap(t))
	buf = appendBody(buf, t)
	n := len(buf)
	body := buf[:n:n]
	// After the body: ms, errand's signature, secs, the Standard one.
	buf, ms := appendInt(buf, now.UnixMilli())
	msEnd := len(buf)
	buf = ks.appendErrand(buf, ms, body)
	sigEnd := len(buf)
	buf, secs := appendInt(buf, now.Unix())
	secsEnd := len(buf)
	buf = ks.appendStandard(buf, t.ID, secs, body)
	stdEnd := len(buf)
	buf = ks.appendToken(buf, t, TokenWebhook)
	// buf is complete and never written again: its tail is the header
	// values' backing store (as strings.Builder makes its string).
	all := unsafe.String(unsafe.SliceData(buf), len(buf))
	return signed{body: body, ms: all[n:msEnd], sig: all[msEnd:sigEnd], id: t.ID,
		secs: all[sigEnd:secsEnd], stdSig: all[secsEnd:stdEnd], token: all[stdEnd:], standard: ks.hasStandard}
}

// request builds the signed POST of a delivery for net/http: the target's
// own headers, then content type, user agent, errand's signature and the
// Standard Webhooks ones (which a target's cannot replace:
// task.ValidateTarget refuses those names).
func (s *signed) request(ctx context.Context, url string) (*http.Request, error) {
	v := [...]string{s.ms, s.sig, s.id, s.secs, s.stdSig, s.token}
	h := make(http.Header, 9+len(s.headers))
	for k, val := range s.headers {
		h[http.CanonicalHeaderKey(k)] = []string{val}
	}
	h["Content-Type"] = contentTypeJSON
	h["User-Agent"] = userAgent
	h[HeaderTimestamp] = v[0:1:1]
	h[HeaderSignature] = v[1:2:2]
	h[HeaderWebhookID] = v[2:3:3]
	h[HeaderDelivery] = v[5:6:6]
	if s.standard {
		h[HeaderWebhookTimestamp] = v[3:4:4]
		h[HeaderWebhookSignature] = v[4:5:5]
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(s.body))
	if err != nil {
		return nil, err
	}
	req.Header = h
	return req, nil
}

var _ Deliverer = (*Webhook)(nil)
