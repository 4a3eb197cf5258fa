package httpapi

import (
	"bytes"
	"errors"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/errandhq/errand/internal/task"
)

// An INTERNAL answer carries a request id, never the driver's message; the
// log carries both under the same id (defect 1), and a hook's path cut.
func TestInternalAnswerHidesTheDriverMessage(t *testing.T) {
	t.Parallel()
	for _, err := range []error{
		task.Errorf(task.CodeInternal, `store: ERROR: invalid byte sequence for encoding "UTF8": 0x00 (SQLSTATE 22021)`),
		errors.New("sqlite: disk I/O error (SQLSTATE 22021)"),
	} {
		var logs bytes.Buffer
		s := &Server{log: slog.New(slog.NewTextHandler(&logs, nil))}
		rec := httptest.NewRecorder()
		s.writeError(rec, httptest.NewRequest("POST", "/v1/hooks/jobs/hk_3f9a0c1d2e3f4a5b6c7d8e9f00112233", nil), err)
		body := rec.Body.String()
		rid := rec.Header().Get("X-Request-Id")
		if rec.Code != 500 || rid == "" || strings.Contains(body, "SQLSTATE") || !strings.Contains(body, rid) || !strings.Contains(body, `"INTERNAL"`) {
			t.Fatalf("%d %q %s", rec.Code, rid, body)
		}
		// A hook's token, a capability to add tasks, is cut in the log.
		if !strings.Contains(logs.String(), "SQLSTATE") || !strings.Contains(logs.String(), "request_id="+rid) ||
			strings.Contains(logs.String(), "hk_3f9a0") || !strings.Contains(logs.String(), "path=/v1/hooks/jobs/hk_3f9a…") {
			t.Fatalf("log: %s", logs.String())
		}
	}
}

// TestLoggedPath: a hook call's token is cut in the request log to what
// recognises it (hk_ and four characters); other paths are logged whole.
func TestLoggedPath(t *testing.T) {
	for in, want := range map[string]string{
		"/v1/hooks/jobs/hk_3f9a0c1d2e3f4a5b6c7d8e9f00112233": "/v1/hooks/jobs/hk_3f9a…",
		"/v1/hooks/jobs/hk_3":                                "/v1/hooks/jobs/hk_3",
		"/v1/hooks/jobs":                                     "/v1/hooks/jobs",
		"/v1/tasks/jobs/queues/q/tasks":                      "/v1/tasks/jobs/queues/q/tasks",
	} {
		if got := LoggedPath(in); got != want {
			t.Errorf("LoggedPath(%q) = %q, want %q", in, got, want)
		}
	}
}

// An UNAVAILABLE store's driver error (host, port, user) is never
// answered: the answer says to try again; the log has it with its cause,
// one line for many answers.
func TestUnavailableAnswerHidesTheDriverMessage(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	s := &Server{log: slog.New(slog.NewTextHandler(&logs, nil))}
	driver := errors.New("failed to connect to `user=postgres database=prod`: 10.0.0.7:5432: connect: connection refused")
	for range 3 {
		rec := httptest.NewRecorder()
		s.writeError(rec, httptest.NewRequest("GET", "/v1/tasks/jobs/queues", nil), task.Unavailable("the store is unreachable; try again", driver))
		if body := rec.Body.String(); rec.Code != 503 || !strings.Contains(body, `"UNAVAILABLE"`) || !strings.Contains(body, "try again") ||
			strings.Contains(body, "10.0.0.7") || strings.Contains(body, "user=") {
			t.Fatalf("%d %s", rec.Code, body)
		}
	}
	if n := strings.Count(logs.String(), "answering 503"); n != 1 || !strings.Contains(logs.String(), "10.0.0.7:5432") {
		t.Fatalf("%d lines logged, want one with the cause:\n%s", n, logs.String())
	}
	if ok, held := s.unavailable.allow(time.Now().Add(unavailableLogEvery)); !ok || held != 2 {
		t.Fatalf("the next line after %v: %v, %d held back; want true, 2", unavailableLogEvery, ok, held)
	}
}
