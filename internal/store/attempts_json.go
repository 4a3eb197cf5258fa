package store

import (
	"strconv"

	"github.com/errandhq/errand/internal/jsonout"
	"github.com/errandhq/errand/internal/task"
)

// AppendAttempt appends a as json.Marshal encodes a task.Attempt, byte for
// byte (FuzzAppendAttempts), without its reflection: every finish of
// either backend stores the attempt it ends.
func AppendAttempt(b []byte, a *task.Attempt) []byte {
	b = append(b, `{"attempt":`...)
	b = strconv.AppendInt(b, int64(a.Attempt), 10)
	b = append(b, `,"status":`...)
	b = jsonout.AppendString(b, a.Status, true)
	b = append(b, `,"startedAt":`...)
	b = strconv.AppendInt(b, a.StartedAt, 10)
	if a.EndedAt != 0 {
		b = append(b, `,"endedAt":`...)
		b = strconv.AppendInt(b, a.EndedAt, 10)
	}
	if a.HTTPStatus != 0 {
		b = append(b, `,"httpStatus":`...)
		b = strconv.AppendInt(b, int64(a.HTTPStatus), 10)
	}
	if a.Error != "" {
		b = append(b, `,"error":`...)
		b = jsonout.AppendString(b, a.Error, true)
	}
	if a.Lease != "" {
		b = append(b, `,"lease":`...)
		b = jsonout.AppendString(b, a.Lease, true)
	}
	return append(b, '}')
}

// AttemptJSON is AppendAttempt's JSON of a, as a string.
func AttemptJSON(a *task.Attempt) string {
	return string(AppendAttempt(make([]byte, 0, attemptSize(a)), a))
}

// AttemptsJSON is AppendAttempts's JSON of as, as a string.
func AttemptsJSON(as []task.Attempt) string {
	n := 2
	for i := range as {
		n += attemptSize(&as[i]) + 1
	}
	return string(AppendAttempts(make([]byte, 0, n), as))
}

// attemptSize is the length of a's JSON when no string needs escaping.
func attemptSize(a *task.Attempt) int {
	return 120 + len(a.Status) + len(a.Error) + len(a.Lease)
}

// AppendAttempts appends an attempt history as json.Marshal encodes it
// ("[]" for an empty one, "null" for nil).
func AppendAttempts(b []byte, as []task.Attempt) []byte {
	if as == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i := range as {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendAttempt(b, &as[i])
	}
	return append(b, ']')
}
