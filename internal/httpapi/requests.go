package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// observe counts every request the server answers in
// errand_http_requests_total, by the API it reached and the status it was
// answered with, and logs it at debug: method, path (LoggedPath), status
// and duration, never a header or a body (they carry keys and payloads).
func observe(next http.Handler, requests *prometheus.CounterVec, log *slog.Logger) http.Handler {
	debug := log.Enabled(context.Background(), slog.LevelDebug)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		defer func() {
			// A handler that panicked answered nothing (net/http closes the
			// connection): counted as the 500 it is, then let go on.
			if p := recover(); p != nil {
				requests.WithLabelValues(apiOf(r.URL.Path), "500").Inc()
				panic(p)
			}
		}()
		next.ServeHTTP(rec, r)
		if rec.status == 0 {
			rec.status = http.StatusOK
		}
		requests.WithLabelValues(apiOf(r.URL.Path), strconv.Itoa(rec.status)).Inc()
		if debug {
			log.Debug("request", "method", r.Method, "path", LoggedPath(r.URL.Path), "status", rec.status,
				"ms", time.Since(start).Milliseconds(), "remote", r.RemoteAddr)
		}
	})
}

// apiOf is the api label of a request's path: a few values, whatever the
// path, and none that names a tenant.
func apiOf(p string) string {
	switch {
	case strings.HasPrefix(p, hookPrefix):
		return "hooks"
	case strings.HasPrefix(p, "/v1/"):
		return "v1"
	case strings.HasPrefix(p, "/api/"):
		return "ops"
	case p == "/mcp" || strings.HasPrefix(p, "/mcp/"):
		return "mcp"
	case strings.HasPrefix(p, "/console/") || p == "/console":
		return "console"
	case p == "/healthz" || p == "/livez" || p == "/metrics":
		return "probes"
	}
	return "other"
}

// statusRecorder keeps the final status a handler wrote (0 until then).
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 && (code >= 200 || code == http.StatusSwitchingProtocols) {
		s.status = code // a 1xx hint (103) is not the answer; 101 is
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController (flushes, deadlines, hijacks)
// reach the real writer.
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }
