package embedded

import (
	"errors"

	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/store/storeurl"
	"github.com/errandhq/errand/internal/task"
)

// Error is a refusal of the engine: the v1 API's code, message, HTTP
// status and, for TASK_EXISTS, the existing task's id. It is the type the
// client SDK answers (errandapi.Error), so errors.Is(err,
// client.ErrTaskExists) holds alike in process and over HTTP.
type Error = errandapi.Error

// ErrClosed is the error of every call on an Engine after Close began (a
// Lease waiting when Close begins returns it at once). It is not an *Error:
// no v1 API answer means "this engine is closed". Compare with errors.Is.
var ErrClosed = errors.New("embedded: the engine is closed")

// publicError turns the engine's errors into *Error; other errors (a
// store that cannot be opened, a cancelled context) pass unchanged.
func publicError(err error) error {
	var te *task.Error
	if err == nil || !errors.As(err, &te) {
		return err
	}
	msg := te.Message
	if te.Cause != nil { // in process: the embedder owns the store, and its cause
		msg += ": " + te.Cause.Error()
	}
	return &Error{Code: te.Code, Message: msg, Status: errandapi.StatusOf(te.Code), ID: te.ID}
}

// storeError says a refusal of Options.Store in the embedded API's words:
// an INVALID_ARGUMENT *Error naming the field Store. A database that does
// not answer, and a SQLite store another engine or node holds, are
// UNAVAILABLE *Errors (the second naming the holder); other errors (a file
// that cannot be opened) pass unchanged.
func storeError(err error) error {
	var ue *storeurl.URLError
	if iu := (*storeurl.InUseError)(nil); errors.As(err, &iu) {
		return publicError(task.Errorf(task.CodeUnavailable, "%s", iu.Error()))
	}
	if !errors.As(err, &ue) {
		return publicError(err)
	}
	why := ue.Why
	if ue.InURL {
		why += " (options are Options fields, such as Sync)"
	}
	return publicError(task.FieldErrorf(task.CodeInvalidArgument, "Store", "%q: %s", ue.URL, why))
}
