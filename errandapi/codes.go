package errandapi

// Code is a stable, upper-snake-case error code of the v1 API.
type Code string

// The error codes of the v1 API (docs/api.md lists when each is answered).
const (
	CodeInvalidArgument       Code = "INVALID_ARGUMENT"
	CodeNotFound              Code = "NOT_FOUND"
	CodeTaskExists            Code = "TASK_EXISTS"
	CodeQueueExists           Code = "QUEUE_EXISTS"
	CodeInstanceExists        Code = "INSTANCE_EXISTS"
	CodeNoTarget              Code = "NO_TARGET"
	CodeLeaseLost             Code = "LEASE_LOST"
	CodePayloadTooLarge       Code = "PAYLOAD_TOO_LARGE"
	CodeNotCancellable        Code = "NOT_CANCELLABLE"
	CodeRunningNotCancellable Code = "RUNNING_NOT_CANCELLABLE"
	CodeNotRetryable          Code = "NOT_RETRYABLE"
	CodeNotRunnable           Code = "NOT_RUNNABLE"
	CodeConfirmRequired       Code = "CONFIRM_REQUIRED"
	CodeDepthExceeded         Code = "DEPTH_EXCEEDED"
	CodeWrongMode             Code = "WRONG_MODE"
	CodeUnauthenticated       Code = "UNAUTHENTICATED"
	CodePermissionDenied      Code = "PERMISSION_DENIED"
	CodeRateLimited           Code = "RATE_LIMITED"
	CodeUnavailable           Code = "UNAVAILABLE"
	CodeInternal              Code = "INTERNAL"
	// CodeMethodNotAllowed is errand's own: a known path with another
	// method (405, with Allow).
	CodeMethodNotAllowed Code = "METHOD_NOT_ALLOWED"
)

// statusOf is THE table from code to HTTP status; the server answers with
// it and the SDK reads it back.
var statusOf = map[Code]int{
	CodeInvalidArgument:       400,
	CodeNotFound:              404,
	CodeTaskExists:            409,
	CodeQueueExists:           409,
	CodeInstanceExists:        409,
	CodeNoTarget:              400,
	CodeLeaseLost:             409,
	CodePayloadTooLarge:       400,
	CodeNotCancellable:        400,
	CodeRunningNotCancellable: 400,
	CodeNotRetryable:          400,
	CodeNotRunnable:           400,
	CodeConfirmRequired:       400,
	CodeDepthExceeded:         400,
	CodeWrongMode:             400,
	CodeUnauthenticated:       401,
	CodePermissionDenied:      403,
	CodeRateLimited:           429,
	CodeUnavailable:           503,
	CodeInternal:              500,
	CodeMethodNotAllowed:      405,
}

// Codes returns every code of the v1 API, in the order of the constants.
func Codes() []Code {
	return []Code{
		CodeInvalidArgument, CodeNotFound, CodeTaskExists, CodeQueueExists, CodeInstanceExists,
		CodeNoTarget, CodeLeaseLost, CodePayloadTooLarge, CodeNotCancellable, CodeRunningNotCancellable,
		CodeNotRetryable, CodeNotRunnable, CodeConfirmRequired, CodeDepthExceeded, CodeWrongMode,
		CodeUnauthenticated, CodePermissionDenied, CodeRateLimited, CodeUnavailable, CodeInternal,
		CodeMethodNotAllowed,
	}
}

// StatusOf returns the HTTP status the server answers code with (500 for a
// code it does not know).
func StatusOf(c Code) int {
	if s, ok := statusOf[c]; ok {
		return s
	}
	return 500
}

// CodeOfStatus is the code for an answer that carries no v1 error body (a
// proxy's 502, a load balancer's 429): the code the server itself would
// have used for that status, UNAVAILABLE for a gateway error and INTERNAL
// for anything else.
func CodeOfStatus(status int) Code {
	switch status {
	case 400:
		return CodeInvalidArgument
	case 401:
		return CodeUnauthenticated
	case 403:
		return CodePermissionDenied
	case 404:
		return CodeNotFound
	case 405:
		return CodeMethodNotAllowed
	case 429:
		return CodeRateLimited
	case 502, 503, 504:
		return CodeUnavailable
	}
	return CodeInternal
}
