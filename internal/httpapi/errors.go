package httpapi

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/id"
	"github.com/errandhq/errand/internal/task"
)

// StatusOf returns the HTTP status for a code (500 for an unknown one):
// the one table, errandapi's, that the client SDK reads back.
func StatusOf(c task.Code) int { return errandapi.StatusOf(c) }

// writeBatchRefused answers a batch call (add, batch ack) in which every
// item was refused; body carries each item's result and "error" naming the
// first refusal. It is the one status not looked up in the code table: the
// v1 API answers such a batch 409 whatever the items' codes (a task of a
// queue deleted meanwhile is NOT_FOUND, yet its batch is 409), since the
// request itself was well formed and the items are what conflicted.
func writeBatchRefused(w http.ResponseWriter, body any) { writeJSON(w, http.StatusConflict, body) }

// writeError answers err in the v1 shape. An INTERNAL answer never carries
// the error's text (a driver's message, a constraint name): the error is
// logged under a fresh request id, and the answer gives that id alone, in
// its message and in the X-Request-Id header, so an operator can find it.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	te := s.taskError(w, r, err)
	writeJSON(w, StatusOf(te.Code), errandapi.ErrorResponse{Error: errandapi.ErrorDetail{Code: te.Code, Message: te.Message}})
}

// taskError is err as the coded error to answer (the v1 and the operations
// API share it): a cancelled request is UNAVAILABLE, and an error without a
// code is logged and becomes INTERNAL with a request id.
func (s *Server) taskError(w http.ResponseWriter, r *http.Request, err error) *task.Error {
	var te *task.Error
	switch {
	case errors.As(err, &te):
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		te = task.Errorf(task.CodeUnavailable, "the request was cancelled or timed out")
	}
	// OpsStatusOf: the v1 table, plus the operations API's own 400 code.
	switch {
	case te == nil || te.Code == task.CodeInternal || errandapi.OpsStatusOf(te.Code) >= 500 && te.Code != task.CodeUnavailable:
		rid := id.Secret(8)
		s.log.Error("request failed", "request_id", rid, "method", r.Method, "path", LoggedPath(r.URL.Path), "err", err)
		w.Header().Set("X-Request-Id", rid)
		te = task.Errorf(task.CodeInternal, "internal error; request id %s", rid)
	case te.Cause != nil:
		// The store's outage, with its cause (never answered), once in
		// unavailableLogEvery however many calls meet it.
		if ok, skipped := s.unavailable.allow(time.Now()); ok {
			s.log.Warn("answering 503: the store is unavailable", "method", r.Method, "path", LoggedPath(r.URL.Path),
				"err", err, "alsoAnswered", skipped)
		}
	}
	return te
}

// unavailableLogEvery is how often the API logs that it answers 503 for
// an unavailable store.
const unavailableLogEvery = 10 * time.Second

// everyLog lets one log line through every unavailableLogEvery and counts
// the ones it held back.
type everyLog struct {
	mu      sync.Mutex
	last    time.Time
	skipped int
}

// allow reports whether a line at now is logged, and how many were held
// back since the last one.
func (l *everyLog) allow(now time.Time) (bool, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.last.IsZero() && now.Sub(l.last) < unavailableLogEvery {
		l.skipped++
		return false, 0
	}
	skipped := l.skipped
	l.last, l.skipped = now, 0
	return true, skipped
}
