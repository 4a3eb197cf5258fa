package task

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/errandhq/errand/errandapi"
)

// Code is a stable, upper-snake-case error code: the public contract's
// (errandapi), so the server, the SDK and the embedded engine share one
// set. The HTTP layer maps each code to a status with errandapi.StatusOf.
type Code = errandapi.Code

// The error codes of the v1 API, with errand's own (NOT_RUNNABLE,
// WRONG_MODE, …); errandapi defines them and docs/api.md lists their
// HTTP statuses.
const (
	CodeInvalidArgument       = errandapi.CodeInvalidArgument
	CodeNotFound              = errandapi.CodeNotFound
	CodeTaskExists            = errandapi.CodeTaskExists
	CodeQueueExists           = errandapi.CodeQueueExists
	CodeInstanceExists        = errandapi.CodeInstanceExists
	CodeNoTarget              = errandapi.CodeNoTarget
	CodeLeaseLost             = errandapi.CodeLeaseLost
	CodePayloadTooLarge       = errandapi.CodePayloadTooLarge
	CodeNotCancellable        = errandapi.CodeNotCancellable
	CodeRunningNotCancellable = errandapi.CodeRunningNotCancellable
	CodeNotRetryable          = errandapi.CodeNotRetryable
	CodeNotRunnable           = errandapi.CodeNotRunnable
	CodeConfirmRequired       = errandapi.CodeConfirmRequired
	CodeDepthExceeded         = errandapi.CodeDepthExceeded
	CodeWrongMode             = errandapi.CodeWrongMode
	CodeUnauthenticated       = errandapi.CodeUnauthenticated
	CodePermissionDenied      = errandapi.CodePermissionDenied
	CodeRateLimited           = errandapi.CodeRateLimited
	CodeUnavailable           = errandapi.CodeUnavailable
	CodeMethodNotAllowed      = errandapi.CodeMethodNotAllowed
	CodeInternal              = errandapi.CodeInternal
	CodeUnknownTaskKind       = errandapi.CodeUnknownTaskKind
)

// Lower returns the code in the lowercase form the operations API
// (/api/tasks) answers its refusals in (`not_cancellable`), so both APIs
// spell a code from the one set.
func Lower(c Code) string { return strings.ToLower(string(c)) }

// Error is a domain error with a code that travels unchanged from the store to
// the wire and back into the SDK.
type Error struct {
	Code    Code
	Message string
	// Field names the offending field for INVALID_ARGUMENT and friends.
	Field string
	// ID is the existing task's id for TASK_EXISTS.
	ID string
	// Cause is what lies under an UNAVAILABLE store (a driver's error, a
	// host and port): in Error, for the operator's log and a command's
	// exit, but never answered (the API answers Message) nor recorded
	// (Recorded).
	Cause error
}

// Error implements error: the code, the message and the cause.
func (e *Error) Error() string {
	if e.Cause != nil {
		return string(e.Code) + ": " + e.Message + ": " + e.Cause.Error()
	}
	return string(e.Code) + ": " + e.Message
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Cause }

// Recorded is err as a recorded error (an attempt's, a rule's, a job's),
// which keys that may read it see: its text without the cause of a coded
// error in it, wrapped or not.
func Recorded(err error) string {
	var e *Error
	if errors.As(err, &e) && e.Cause != nil {
		return strings.Replace(err.Error(), ": "+e.Cause.Error(), "", 1)
	}
	return err.Error()
}

// Unavailable is an UNAVAILABLE error whose message says what to do and
// whose cause, err, goes to the log only.
func Unavailable(message string, err error) *Error {
	return &Error{Code: CodeUnavailable, Message: message, Cause: err}
}

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

// InstanceNotFound is the NOT_FOUND of an instance the caller named: the
// same whether it does not exist, belongs to another organization or the
// caller's key has no grant on it.
func InstanceNotFound(name string) *Error {
	return Errorf(CodeNotFound, instanceNotFound, Quote(name))
}

// instanceNotFound takes the name as Quote quotes it, as notFoundIn does.
const instanceNotFound = "instance %s not found"

// InBatch is err as the refusal of item i of a batch (tasks[i]): its field
// and message are prefixed with tasks[i]; an error that is not an *Error
// is returned as it is.
func InBatch(err error, i int) error {
	te, ok := err.(*Error)
	if !ok {
		return err
	}
	c := *te
	at := "tasks[" + strconv.Itoa(i) + "]"
	if c.Field != "" {
		c.Field = at + "." + c.Field
		c.Message = at + "." + c.Message
	} else {
		c.Message = at + ": " + c.Message
	}
	return &c
}

// IsField reports whether err is an *Error about field.
func IsField(err error, field string) bool {
	var te *Error
	return errors.As(err, &te) && te.Field == field
}

// OneOfBatch is err as the refusal of the one task of a batch of one: a
// refusal of one of its fields gets tasks[0] (as InBatch), unless it has
// it already; any other error is returned as it is.
func OneOfBatch(err error) error {
	var te *Error
	if !errors.As(err, &te) || te.Field == "" || strings.HasPrefix(te.Field, "tasks") {
		return err
	}
	return InBatch(te, 0)
}

// NotFoundIn is the NOT_FOUND of a queue, task or rule (what: "queue",
// "task", "trigger") the caller named in an instance, in the caller's own
// words.
func NotFoundIn(what, name, instance string) *Error {
	return Errorf(CodeNotFound, notFoundIn, what, Quote(name), Quote(instance))
}

// NamedIn is Named with NotFoundIn's message.
func NamedIn(err error, what, name, instance string) error {
	return Named(err, notFoundIn, what, Quote(name), Quote(instance))
}

// notFoundIn takes the names as Quote quotes them: a megabyte sent as an
// id is not echoed back whole.
const notFoundIn = "%s %s not found in instance %s"

// NamedInstance is Named for the instance name.
func NamedInstance(err error, name string) error { return Named(err, instanceNotFound, Quote(name)) }

// Named gives a NOT_FOUND without a subject (ErrNotFound, as stores answer)
// the message naming what the caller asked for; any other error is
// returned as it is.
func Named(err error, format string, a ...any) error {
	var e *Error
	if errors.As(err, &e) && e.Code == CodeNotFound && e.Message == ErrNotFound.Message {
		return Errorf(CodeNotFound, format, a...)
	}
	return err
}
