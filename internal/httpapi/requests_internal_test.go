package httpapi

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/errandhq/errand/internal/metrics"
)

// TestObserveCountsPanicsAndFinalStatuses: a handler that panics is
// counted as a 500 (and the panic goes on to net/http); a 103 hint before
// the answer is not the status counted.
func TestObserveCountsPanicsAndFinalStatuses(t *testing.T) {
	m := metrics.New()
	h := observe(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/boom" {
			panic("boom")
		}
		w.WriteHeader(http.StatusEarlyHints)
		w.WriteHeader(http.StatusAccepted)
	}), m.HTTPRequests, slog.New(slog.NewTextHandler(io.Discard, nil)))
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the panic did not go on")
			}
		}()
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/v1/boom", nil))
	}()
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/v1/fine", nil))
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	text := rec.Body.String()
	for _, want := range []string{`errand_http_requests_total{api="v1",code="500"} 1`, `errand_http_requests_total{api="v1",code="202"} 1`} {
		if !strings.Contains(text, want+"\n") {
			t.Errorf("no %s", want)
		}
	}
	if strings.Contains(text, `code="103"`) {
		t.Error("the 103 hint was counted as the answer")
	}
}
