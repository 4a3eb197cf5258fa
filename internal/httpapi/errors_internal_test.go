package httpapi

import (
	"bytes"
	"errors"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/errandhq/errand/internal/task"
)

// An INTERNAL answer carries a request id, never the driver's message; the
// log carries both under the same id (defect 1).
func TestInternalAnswerHidesTheDriverMessage(t *testing.T) {
	t.Parallel()
	for _, err := range []error{
		task.Errorf(task.CodeInternal, `store: ERROR: invalid byte sequence for encoding "UTF8": 0x00 (SQLSTATE 22021)`),
		errors.New("sqlite: disk I/O error (SQLSTATE 22021)"),
	} {
		var logs bytes.Buffer
		s := &Server{log: slog.New(slog.NewTextHandler(&logs, nil))}
		rec := httptest.NewRecorder()
		s.writeError(rec, httptest.NewRequest("GET", "/v1/x", nil), err)
		body := rec.Body.String()
		rid := rec.Header().Get("X-Request-Id")
		if rec.Code != 500 || rid == "" || strings.Contains(body, "SQLSTATE") || !strings.Contains(body, rid) || !strings.Contains(body, `"INTERNAL"`) {
			t.Fatalf("%d %q %s", rec.Code, rid, body)
		}
		if !strings.Contains(logs.String(), "SQLSTATE") || !strings.Contains(logs.String(), "request_id="+rid) {
			t.Fatalf("log: %s", logs.String())
		}
	}
}
