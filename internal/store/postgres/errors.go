package postgres

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/errandhq/errand/internal/task"
)

// SQLSTATE codes the backend tells apart.
const (
	sqlUniqueViolation            = "23505"
	sqlNotNullViolation           = "23502"
	sqlForeignKeyViolation        = "23503"
	sqlProtocolViolation          = "08P01"
	sqlInvalidStatementName       = "26000"
	sqlDuplicatePreparedStatement = "42P05"
)

// poolerRefusal is the error's words when the server refused a startup
// parameter: a connection pooler (PgBouncer) in front that does not pass it
// on. errand's own settings are SET after connecting (sessionSets), so the
// parameter is one the store URL adds.
const poolerRefusal = "a connection pooler in front of PostgreSQL refused a setting the store URL adds (a session setting " +
	"sent as the connection starts); leave it out of the URL, or list it in the pooler's " +
	"ignore_startup_parameters and set it on errand's role instead (docs/postgres.md, \"Connection poolers\")"

// interpretError is the one place where PostgreSQL's and pgx's errors become
// domain errors:
//   - a missing row is task.ErrNotFound;
//   - a unique violation is INSTANCE_EXISTS, QUEUE_EXISTS or TASK_EXISTS
//     after its constraint (INTERNAL for an API key's id or digest);
//   - a bucket of API calls refused for an instance that is gone is
//     NOT_FOUND;
//   - a server that cannot be reached, a dropped connection, a server
//     shutting down or out of connections, a serialization failure or
//     deadlock, and a statement or idle-transaction timeout are UNAVAILABLE
//     (the API answers 503; the call may be tried again);
//   - a pooler in front that refuses errand's session settings, or that
//     hands a connection's statements to a server connection that never
//     prepared them (transaction pooling), is UNAVAILABLE too, its words
//     saying how to set the pooler up;
//
// Domain errors and context errors pass through unchanged; anything else is
// INTERNAL with the backend's message.
func interpretError(err error) error {
	if err == nil {
		return nil
	}
	var te *task.Error
	if errors.As(err, &te) {
		return err
	}
	switch {
	case errors.Is(err, context.Canceled):
		return context.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		return context.DeadlineExceeded
	case errors.Is(err, pgx.ErrNoRows):
		return task.ErrNotFound
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return interpretPgError(pe)
	}
	if unreachable(err) {
		return task.Unavailable("the store is unreachable; try again", err)
	}
	return task.Errorf(task.CodeInternal, "store: %s", err.Error())
}

// interpretPgError translates an error the server reported.
func interpretPgError(pe *pgconn.PgError) error {
	switch {
	case pe.Code == sqlUniqueViolation:
		switch {
		case strings.HasPrefix(pe.ConstraintName, "tasks_"):
			return task.Errorf(task.CodeTaskExists, "a task with this id or name already exists in the queue")
		case strings.HasPrefix(pe.ConstraintName, "queues_"):
			return task.Errorf(task.CodeQueueExists, "the queue already exists")
		case strings.HasPrefix(pe.ConstraintName, "instances_"):
			return task.Errorf(task.CodeInstanceExists, "the instance already exists")
		case strings.HasPrefix(pe.ConstraintName, "api_keys_"):
			// Ids and secrets are random: a clash is a bug, not a request
			// to answer.
			return task.Errorf(task.CodeInternal, "store: an API key with this id or secret already exists")
		}
	case pe.Code == sqlNotNullViolation && pe.TableName == "tasks" && pe.ColumnName == "attempts":
		// The finish UPDATE appends the task's last attempt only when the
		// task carries exactly one more than the row; anything else is a
		// caller that did not end the attempt through task.Finish.
		return task.Errorf(task.CodeInternal, "store: a finished task's attempt history does not follow the stored one")
	case pe.Code == sqlForeignKeyViolation && pe.ConstraintName == "api_rate_instance":
		// A grant of API calls asked for an instance deleted meanwhile
		// (migration 0013): the row it would have added is refused.
		return task.Errorf(task.CodeNotFound, "the instance does not exist")
	case pe.Code == sqlProtocolViolation && strings.HasPrefix(pe.Message, "unsupported startup parameter"):
		// PgBouncer and poolers like it refuse a connection that carries
		// a setting they do not track: trying again cannot help.
		return task.Unavailable(poolerRefusal, pe)
	case (pe.Code == sqlInvalidStatementName || pe.Code == sqlDuplicatePreparedStatement) && strings.HasPrefix(pe.Message, "prepared statement"):
		// pgx prepares each statement once per connection, under a name
		// of its text: a server connection that does not know it, or
		// knows it already, is one a pooler in transaction or statement
		// mode handed over from another client.
		return task.Unavailable("the server's prepared statements are not this connection's: a connection pooler "+
			"in front runs in transaction or statement mode, which errand cannot work through; connect to PostgreSQL "+
			"directly or through the pooler's session mode (docs/postgres.md, \"Connection poolers\")", pe)
	case retryable(pe.Code):
		return task.Unavailable("the store is unavailable; try again", pe)
	}
	return task.Errorf(task.CodeInternal, "store: %s", pe.Error())
}

// retryable reports whether a SQLSTATE means "not now" rather than "wrong":
// connection exceptions (08), insufficient resources (53), operator
// intervention (57: shutdown, statement_timeout's query_canceled),
// serialization failures and deadlocks (40), and the idle-in-transaction
// timeout (25P03).
func retryable(code string) bool {
	if len(code) != 5 {
		return false
	}
	switch code[:2] {
	case "08", "53", "57", "40":
		return true
	}
	return code == "25P03"
}

// unreachable reports whether err says the server could not be reached or
// the connection broke, before or during a call.
func unreachable(err error) bool {
	var (
		ce  *pgconn.ConnectError
		ne  net.Error
		sce syscall.Errno
	)
	switch {
	case errors.As(err, &ce), errors.As(err, &ne):
		return true
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed):
		return true
	case errors.Is(err, pgconn.ErrConnClosed):
		return true
	case err.Error() == "closed pool": // puddle.ErrClosedPool: a call during Close
		return true
	case errors.As(err, &sce):
		return true
	case pgconn.Timeout(err), pgconn.SafeToRetry(err):
		return true
	}
	return false
}
