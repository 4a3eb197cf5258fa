package errandapi

import "time"

// Error is a refusal of errand, the same value whether it came over HTTP
// (the client SDK) or from the engine in this process (the embedded
// package). errors.Is matches it against the sentinels by Code:
//
//	if errors.Is(err, errandapi.ErrTaskExists) { … }
type Error struct {
	// Code is the v1 API's code (a newer server may answer one that this
	// package does not name yet).
	Code Code
	// Message says what was refused; for INVALID_ARGUMENT it starts with
	// the field's name.
	Message string
	// Status is the HTTP status the server answered (in process: the one
	// it would have answered, StatusOf(Code)).
	Status int
	// ID is the existing task's id for TASK_EXISTS (add results carry it).
	ID string
	// RetryAfter is the server's Retry-After on RATE_LIMITED (0 if none).
	RetryAfter time.Duration
}

// Error implements error.
func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// Is reports whether target is an *Error with the same code, so that
// errors.Is(err, ErrTaskExists) holds for every TASK_EXISTS.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// NewError builds an *Error for code with the status of the table.
func NewError(code Code, message string) *Error {
	return &Error{Code: code, Message: message, Status: StatusOf(code)}
}

// The sentinels, one per code: compare with errors.Is, never with ==.
var (
	ErrInvalidArgument       = NewError(CodeInvalidArgument, "invalid argument")
	ErrNotFound              = NewError(CodeNotFound, "not found")
	ErrTaskExists            = NewError(CodeTaskExists, "a task of that name exists in the queue")
	ErrQueueExists           = NewError(CodeQueueExists, "the queue already exists")
	ErrInstanceExists        = NewError(CodeInstanceExists, "the instance already exists")
	ErrNoTarget              = NewError(CodeNoTarget, "the queue has no target and the task names none")
	ErrLeaseLost             = NewError(CodeLeaseLost, "the lease is no longer held")
	ErrPayloadTooLarge       = NewError(CodePayloadTooLarge, "payload too large")
	ErrNotCancellable        = NewError(CodeNotCancellable, "the task is finished and cannot be cancelled")
	ErrRunningNotCancellable = NewError(CodeRunningNotCancellable, "the task is running and cannot be cancelled")
	ErrNotRetryable          = NewError(CodeNotRetryable, "only a failed task can be retried")
	ErrNotRunnable           = NewError(CodeNotRunnable, "the task is not waiting: it cannot be run now or rescheduled")
	ErrConfirmRequired       = NewError(CodeConfirmRequired, "the call needs ?confirm=true")
	ErrDepthExceeded         = NewError(CodeDepthExceeded, "the chain of adds is too deep")
	ErrWrongMode             = NewError(CodeWrongMode, "the queue's mode does not allow this call")
	ErrUnauthenticated       = NewError(CodeUnauthenticated, "missing, unknown or revoked API key")
	ErrPermissionDenied      = NewError(CodePermissionDenied, "the key's grant is too small")
	ErrRateLimited           = NewError(CodeRateLimited, "the instance's rateLimit was passed")
	ErrUnavailable           = NewError(CodeUnavailable, "the store cannot be reached")
	ErrInternal              = NewError(CodeInternal, "internal error")
	ErrMethodNotAllowed      = NewError(CodeMethodNotAllowed, "method not allowed on this path")
)

// Sentinel returns the sentinel of code, or nil for a code this package
// does not name.
func Sentinel(c Code) *Error {
	for _, e := range []*Error{
		ErrInvalidArgument, ErrNotFound, ErrTaskExists, ErrQueueExists, ErrInstanceExists, ErrNoTarget,
		ErrLeaseLost, ErrPayloadTooLarge, ErrNotCancellable, ErrRunningNotCancellable, ErrNotRetryable,
		ErrNotRunnable, ErrConfirmRequired, ErrDepthExceeded, ErrWrongMode, ErrUnauthenticated,
		ErrPermissionDenied, ErrRateLimited, ErrUnavailable, ErrInternal, ErrMethodNotAllowed,
		ErrUnknownTaskKind,
	} {
		if e.Code == c {
			return e
		}
	}
	return nil
}

// ErrorResponse is the body of every refused call:
// {"error": {"code": "…", "message": "…"}}.
type ErrorResponse struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is the error object of an ErrorResponse, and the "error"
// that names the first refusal of an add or batch ack that did nothing.
type ErrorDetail struct {
	Code    Code   `json:"code"`
	Message string `json:"message"`
}
