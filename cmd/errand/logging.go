package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/errandhq/errand/internal/httpapi"
)

// logFlags are --log-level and --log-format of dev and serve.
type logFlags struct{ level, format string }

func addLogFlags(fs *pflag.FlagSet) *logFlags {
	l := &logFlags{}
	fs.StringVar(&l.level, "log-level", "info", "debug (every request and attempt), info, warn or error")
	fs.StringVar(&l.format, "log-format", "text", "text (key=value lines) or json (one object a line)")
	return l
}

// logger is the node's logger on w as the flags ask.
func (l *logFlags) logger(w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(l.level)); err != nil {
		return nil, usageErrorf("--log-level %q: want debug, info, warn or error", l.level)
	}
	o := &slog.HandlerOptions{Level: level}
	switch strings.ToLower(l.format) {
	case "text":
		return slog.New(newQuietRepeats(slog.NewTextHandler(w, o))), nil
	case "json":
		return slog.New(newQuietRepeats(slog.NewJSONHandler(w, o))), nil
	}
	return nil, usageErrorf("--log-format %q: want text or json", l.format)
}

// listen makes a node's logger and opens its port, before anything else
// of the node: when the port is taken, no data directory or store is
// created.
func (l *logFlags) listen(c *cobra.Command, addr string) (*slog.Logger, net.Listener, error) {
	log, err := l.logger(c.ErrOrStderr())
	if err != nil {
		return nil, nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	return log, ln, nil
}

// logRequests logs every request at debug: method, path, status and
// duration (never a header or a body: they carry keys and payloads). At
// any other level it is h itself.
func logRequests(h http.Handler, log *slog.Logger) http.Handler {
	if !log.Enabled(context.Background(), slog.LevelDebug) {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(rec, r)
		log.Debug("request", "method", r.Method, "path", httpapi.LoggedPath(r.URL.Path), "status", rec.status,
			"ms", time.Since(start).Milliseconds(), "remote", r.RemoteAddr)
	})
}

// statusRecorder keeps the status a handler wrote.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the real writer.
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }
