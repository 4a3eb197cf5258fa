package deliver

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
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
	// TLSConfig, when set, is cloned for the client (custom roots, client
	// certificates). nil uses the system roots.
	TLSConfig *tls.Config
}

// Webhook delivers to webhook targets: a signed POST over a pooled HTTP/1.1
// client that follows no redirect and uses no proxy. It is safe for
// concurrent use; Close releases its idle connections.
type Webhook struct {
	client    *http.Client
	transport *http.Transport
	guard     *Guard
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
	}
	return &Webhook{
		transport: tr,
		guard:     opts.Guard,
		client: &http.Client{
			Transport: tr,
			// A 3xx is the answer: a redirect could lead anywhere.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
}

// Close closes the idle pooled connections. Deliveries in flight finish.
func (w *Webhook) Close() { w.transport.CloseIdleConnections() }

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
	body := Body(r.Task)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.Target.Webhook, bytes.NewReader(body))
	if err != nil || (req.URL.Scheme != "https" && req.URL.Scheme != "http") || req.URL.Host == "" {
		return failed(0, "invalid webhook URL")
	}
	req.Header = deliveryHeaders(r, now, body)
	resp, err := w.client.Do(req)
	if err != nil {
		return failed(0, shortError(ctx, err))
	}
	defer resp.Body.Close()
	return answer(resp, now)
}

// deliveryHeaders returns the headers of a delivery: content type, user agent,
// errand's signature and the Standard Webhooks ones.
func deliveryHeaders(r *Request, now time.Time, body []byte) http.Header {
	ms, secs := now.UnixMilli(), now.Unix()
	// One backing array for the values: a delivery's headers cost few
	// allocations.
	v := [...]string{
		"application/json",
		UserAgent,
		strconv.FormatInt(ms, 10),
		Sign(r.Key, ms, body),
		r.Task.ID,
		strconv.FormatInt(secs, 10),
		"",
	}
	h := make(http.Header, 8)
	h["Content-Type"] = v[0:1:1]
	h["User-Agent"] = v[1:2:2]
	h[HeaderTimestamp] = v[2:3:3]
	h[HeaderSignature] = v[3:4:4]
	h[HeaderWebhookID] = v[4:5:5]
	if sig, ok := SignStandard(r.Key, r.Task.ID, secs, body); ok {
		v[6] = sig
		h[HeaderWebhookTimestamp] = v[5:6:6]
		h[HeaderWebhookSignature] = v[6:7:7]
	}
	return h
}

var _ Deliverer = (*Webhook)(nil)
