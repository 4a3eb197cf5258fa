package deliver

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/errandhq/errand/internal/task"
)

// TestWebhookTargetHeaders: a target's own headers reach the receiver over
// errand's plain HTTP/1.1 client (http://) and over net/http (https://),
// beside errand's, which they do not replace; the signatures still verify.
func TestWebhookTargetHeaders(t *testing.T) {
	t.Parallel()
	seen := make(chan http.Header, 2)
	h := http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := Verify(katKey, r.Header, body, testNow, 0); err != nil {
			t.Errorf("Verify: %v", err)
		}
		seen <- r.Header.Clone()
	})
	plain := receiver(t, h)
	tlsSrv := httptest.NewTLSServer(h)
	t.Cleanup(tlsSrv.Close)
	roots := x509.NewCertPool()
	roots.AddCert(tlsSrv.Certificate())
	w := newWebhook(t, WebhookOptions{TLSConfig: &tls.Config{RootCAs: roots}})
	headers := map[string]string{"Authorization": "Bearer tok en", "X-Api-Key": "k\t1", "X-Vercel-Protection-Bypass": "s"}
	for _, url := range []string{plain.URL + "/in", tlsSrv.URL + "/in"} {
		r := request(url)
		r.Target.Headers = headers
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		res := w.Deliver(ctx, r)
		cancel()
		if res.Outcome.Status != task.AttemptSucceeded {
			t.Fatalf("%s: %+v", url, res.Outcome)
		}
		got := <-seen
		for k, v := range headers {
			if got.Get(k) != v || len(got.Values(k)) != 1 {
				t.Errorf("%s: %s = %q, want %q once", url, k, got.Values(k), v)
			}
		}
		if got.Get("User-Agent") != UserAgent || got.Get("Content-Type") != "application/json" || got.Get("Webhook-Id") != katID ||
			got.Get("X-Errand-Delivery") == "" {
			t.Errorf("%s: errand's own headers %v", url, got)
		}
	}
	if !plainHeaders(headers) || plainHeaders(map[string]string{"X-A": "a\r\nX-B: b"}) || plainHeaders(map[string]string{"X A": "a"}) {
		t.Error("plainHeaders: a valid set is written as it is; a CR LF or a space in a name is left to net/http")
	}
}
