package client

import "github.com/errandhq/errand/errandapi"

// Error is a refusal of the server (or of the embedded engine): the v1
// code, the message, the HTTP status, the existing task's id for
// TASK_EXISTS and the Retry-After of RATE_LIMITED. It is errandapi.Error.
type Error = errandapi.Error

// Code is a v1 error code (errandapi.Code).
type Code = errandapi.Code

// The sentinels, one per code of the v1 API: errors.Is(err, ErrTaskExists)
// holds for every TASK_EXISTS, from a server or from the embedded engine.
// They are errandapi's values.
var (
	ErrInvalidArgument       = errandapi.ErrInvalidArgument
	ErrNotFound              = errandapi.ErrNotFound
	ErrTaskExists            = errandapi.ErrTaskExists
	ErrQueueExists           = errandapi.ErrQueueExists
	ErrInstanceExists        = errandapi.ErrInstanceExists
	ErrNoTarget              = errandapi.ErrNoTarget
	ErrLeaseLost             = errandapi.ErrLeaseLost
	ErrPayloadTooLarge       = errandapi.ErrPayloadTooLarge
	ErrNotCancellable        = errandapi.ErrNotCancellable
	ErrRunningNotCancellable = errandapi.ErrRunningNotCancellable
	ErrNotRetryable          = errandapi.ErrNotRetryable
	ErrNotRunnable           = errandapi.ErrNotRunnable
	ErrConfirmRequired       = errandapi.ErrConfirmRequired
	ErrDepthExceeded         = errandapi.ErrDepthExceeded
	ErrWrongMode             = errandapi.ErrWrongMode
	ErrUnauthenticated       = errandapi.ErrUnauthenticated
	ErrPermissionDenied      = errandapi.ErrPermissionDenied
	ErrRateLimited           = errandapi.ErrRateLimited
	ErrUnavailable           = errandapi.ErrUnavailable
	ErrInternal              = errandapi.ErrInternal
	// ErrUnknownTaskKind is the operations API's unknown_task_kind: a
	// submitted kind outside the closed set.
	ErrUnknownTaskKind = errandapi.ErrUnknownTaskKind
)
