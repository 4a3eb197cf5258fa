package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"strings"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/errandhq/errand/internal/task"
)

// interpretError is the one place where SQLite's errors become domain
// errors: a missing row is task.ErrNotFound, a unique or primary-key
// violation is INSTANCE_EXISTS, QUEUE_EXISTS or TASK_EXISTS after its table,
// a busy or locked database is UNAVAILABLE, and so is a full disk (the
// write is refused and nothing of it is kept; it may succeed once space is
// freed, as a client that retries a 503 expects). Domain errors and context errors
// pass through unchanged; anything else is INTERNAL with SQLite's message.
func interpretError(err error) error {
	if err == nil {
		return nil
	}
	var te *task.Error
	if errors.As(err, &te) {
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if errors.Is(err, sql.ErrNoRows) {
		return task.ErrNotFound
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		code := se.Code()
		switch {
		case keyTakenCode(code):
			msg := se.Error()
			switch {
			case strings.Contains(msg, "failed: tasks."):
				return task.Errorf(task.CodeTaskExists, "a task with this name already exists in the queue")
			case strings.Contains(msg, "failed: queues."):
				return task.Errorf(task.CodeQueueExists, "the queue already exists")
			case strings.Contains(msg, "failed: instances."):
				return task.Errorf(task.CodeInstanceExists, "the instance already exists")
			}
		case code&0xff == sqlite3.SQLITE_BUSY || code&0xff == sqlite3.SQLITE_LOCKED:
			return task.Unavailable("the store is busy; try again", se)
		case code&0xff == sqlite3.SQLITE_FULL:
			return task.Errorf(task.CodeUnavailable, "the store's disk is full; try again later")
		}
	}
	return task.Errorf(task.CodeInternal, "store: %s", err.Error())
}

// isKeyTaken reports whether err is SQLite's refusal of a row whose key
// or unique index entry is taken.
func isKeyTaken(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	return keyTakenCode(se.Code())
}

// keyTakenCode reports whether an SQLite result code is a taken key or
// unique index entry.
func keyTakenCode(code int) bool {
	return code == sqlite3.SQLITE_CONSTRAINT_UNIQUE || code == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY
}

// unavailable reports a database that cannot be reached or read.
func unavailable(err error) error {
	return task.Unavailable("the store cannot be read; try again", err)
}
