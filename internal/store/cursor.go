package store

import (
	"encoding/base64"
	"math"
	"strconv"
	"strings"

	"github.com/errandhq/errand/internal/task"
)

// ListOrder is one of the three orders of a listing (see ListParams).
type ListOrder byte

// The orders, as their cursors spell them.
const (
	// ByRunAt: PENDING, RUNNING, RETRY_WAIT, soonest runAt first.
	ByRunAt ListOrder = 'r'
	// ByFinished: SUCCEEDED, FAILED, CANCELLED, latest finishedAt first.
	ByFinished ListOrder = 'f'
	// ByCreated: no state filter, newest createdAt first.
	ByCreated ListOrder = 'c'
)

// OrderOf returns the order of a listing of state s ("" for all).
func OrderOf(s task.State) ListOrder {
	switch {
	case s == "":
		return ByCreated
	case s.Terminal():
		return ByFinished
	}
	return ByRunAt
}

// keyOf is t's sort key in order o.
func keyOf(o ListOrder, t *task.Task) int64 {
	switch o {
	case ByFinished:
		return t.FinishedAt
	case ByCreated:
		return t.CreatedAt
	}
	return t.RunAt
}

// EncodeCursor makes the opaque keyset cursor after t (its sort key and id)
// in order o. Every backend pages with it, so rows added between pages
// never shift a page.
func EncodeCursor(o ListOrder, t *task.Task) string {
	raw := string(o) + strconv.FormatInt(keyOf(o, t), 10) + ":" + t.ID
	return base64.RawURLEncoding.EncodeToString([]byte(raw))
}

// DecodeCursor reads a cursor of order o; an empty cursor starts before the
// first row. A cursor of another listing, or one whose id could not be a
// task id (a NUL byte, invalid UTF-8), is INVALID_ARGUMENT naming cursor.
func DecodeCursor(o ListOrder, c string) (key int64, id string, err error) {
	if c == "" {
		if o == ByRunAt {
			return math.MinInt64, "", nil
		}
		return math.MaxInt64, "", nil
	}
	bad := task.FieldErrorf(task.CodeInvalidArgument, "cursor", "is not a cursor of this listing")
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || len(raw) < 3 || ListOrder(raw[0]) != o {
		return 0, "", bad
	}
	num, id, ok := strings.Cut(string(raw[1:]), ":")
	if !ok || !task.ValidID(id) {
		return 0, "", bad
	}
	key, err = strconv.ParseInt(num, 10, 64)
	if err != nil {
		return 0, "", bad
	}
	return key, id, nil
}
