package httpapi

import (
	"context"
	"errors"
	"net/http"

	"github.com/errandhq/errand/internal/task"
)

// statusOf is THE table from error code to HTTP status.
var statusOf = map[task.Code]int{
	task.CodeInvalidArgument:       http.StatusBadRequest,
	task.CodeNotFound:              http.StatusNotFound,
	task.CodeTaskExists:            http.StatusConflict,
	task.CodeQueueExists:           http.StatusConflict,
	task.CodeInstanceExists:        http.StatusConflict,
	task.CodeNoTarget:              http.StatusBadRequest,
	task.CodeLeaseLost:             http.StatusConflict,
	task.CodePayloadTooLarge:       http.StatusBadRequest,
	task.CodeNotCancellable:        http.StatusBadRequest,
	task.CodeRunningNotCancellable: http.StatusBadRequest,
	task.CodeNotRetryable:          http.StatusBadRequest,
	task.CodeNotRunnable:           http.StatusBadRequest,
	task.CodeConfirmRequired:       http.StatusBadRequest,
	task.CodeDepthExceeded:         http.StatusBadRequest,
	task.CodeWrongMode:             http.StatusBadRequest,
	task.CodeUnauthenticated:       http.StatusUnauthorized,
	task.CodePermissionDenied:      http.StatusForbidden,
	task.CodeRateLimited:           http.StatusTooManyRequests,
	task.CodeUnavailable:           http.StatusServiceUnavailable,
	task.CodeInternal:              http.StatusInternalServerError,
}

// writeBatchRefused answers a batch call (add, batch ack) in which every
// item was refused: results under key, each with its own code, and error
// naming the first refusal. It is the one status not looked up in statusOf:
// the v1 API answers such a batch 409 whatever the items' codes (a task
// of a queue deleted meanwhile is NOT_FOUND, yet its batch is 409), since
// the request itself was well formed and the items are what conflicted.
func writeBatchRefused(w http.ResponseWriter, key string, results any, first *task.Error) {
	writeJSON(w, http.StatusConflict, map[string]any{key: results, "error": errorDetail{Code: first.Code, Message: first.Message}})
}

// StatusOf returns the HTTP status for a code (500 for an unknown one).
func StatusOf(c task.Code) int {
	if s, ok := statusOf[c]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// errorBody is the v1 error shape.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    task.Code `json:"code"`
	Message string    `json:"message"`
}

// writeError answers err in the v1 shape. Errors without a code are logged
// and answered 500 without their text.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	var te *task.Error
	switch {
	case errors.As(err, &te):
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		te = task.Errorf(task.CodeUnavailable, "the request was cancelled or timed out")
	default:
		s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		te = task.Errorf(task.CodeInternal, "internal error")
	}
	writeJSON(w, StatusOf(te.Code), errorBody{Error: errorDetail{Code: te.Code, Message: te.Message}})
}
