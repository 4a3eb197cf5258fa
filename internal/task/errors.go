package task

import (
	"errors"
	"fmt"
	"strings"
)

// Code is a stable, upper-snake-case error code. The HTTP layer maps each code
// to a status in one table; the SDK maps statuses and codes back.
type Code string

// The error codes of the v1 API, with errand's own (NOT_RUNNABLE,
// WRONG_MODE, …); docs/api.md lists their HTTP statuses.
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
)

// Lower returns the code in the lowercase form the operations API
// (/api/tasks) answers its refusals in (`not_cancellable`). Nothing calls
// it until that API is built; it is kept so that both APIs spell a code
// from the one set.
func (c Code) Lower() string { return strings.ToLower(string(c)) }

// Error is a domain error with a code that travels unchanged from the store to
// the wire and back into the SDK.
type Error struct {
	Code    Code
	Message string
	// Field names the offending field for INVALID_ARGUMENT and friends.
	Field string
	// ID is the existing task's id for TASK_EXISTS.
	ID string
}

// Error implements error.
func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// Errorf builds an *Error with a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// FieldErrorf builds an INVALID_ARGUMENT (or other code) error naming a field;
// the message starts with the field name so a reader sees it first.
func FieldErrorf(code Code, field, format string, args ...any) *Error {
	return &Error{Code: code, Field: field, Message: field + ": " + fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of err, CodeInternal for an error without one and
// "" for nil.
func ErrorCode(err error) Code {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeInternal
}

// IsCode reports whether err carries code.
func IsCode(err error, code Code) bool { return err != nil && ErrorCode(err) == code }

// ErrNotFound is the error for anything missing or foreign: both answer alike.
var ErrNotFound = &Error{Code: CodeNotFound, Message: "not found"}
