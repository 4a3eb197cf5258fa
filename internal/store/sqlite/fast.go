package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"

	"modernc.org/sqlite"

	"github.com/errandhq/errand/internal/task"
)

// The writer's largest statements — a claim's read of the due tasks and
// the multi-row writes of a claim, a finish and an add, each with up to
// 2,500 arguments — skip database/sql's per-argument and per-column work
// (its checks and conversions of every argument, by reflection for an int,
// into a slice allocated per call; a lock and a conversion per column of
// every row read). Each such statement is sent as one Exec of fastQuery
// whose one argument is a fastOp, inside the write transaction as any
// other statement: the writer's connection (fastConn) runs the op itself
// on the driver's own prepared statement, holding the locks database/sql
// holds for an Exec, so a rollback on the transaction's end cannot run
// beside it. Errors are the driver's, as before.

// fastQuery is the text of an Exec that fastConn runs as its fastOp.
const fastQuery = "-- errand: fast op"

// fastOp is a statement fastConn runs on its driver connection.
type fastOp interface {
	run(ctx context.Context, c *fastConn) (driver.Result, error)
}

// fastConnector opens the writer's connection as a fastConn of one that
// connector opened, in SQLite's multi-thread mode (threading.go).
type fastConnector struct{ dsn string }

// sqliteDriver is modernc's driver, which sql.Open("sqlite", …) uses too.
var sqliteDriver = &sqlite.Driver{}

// Connect opens a driver connection to the connector's database.
func (f fastConnector) Connect(ctx context.Context) (driver.Conn, error) {
	c, err := connector(f).Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &fastConn{Conn: c, stmts: map[int]driver.Stmt{}}, nil
}

// Driver returns modernc's driver.
func (fastConnector) Driver() driver.Driver { return sqliteDriver }

// fastConn is a driver connection that runs fastOps besides passing every
// call of database/sql through.
type fastConn struct {
	driver.Conn
	stmts map[int]driver.Stmt // the fast ops' statements, by query id
}

// stmt returns q prepared on the driver connection.
func (c *fastConn) stmt(ctx context.Context, q query) (driver.Stmt, error) {
	if st, ok := c.stmts[q.id]; ok {
		return st, nil
	}
	st, err := c.Conn.(driver.ConnPrepareContext).PrepareContext(ctx, q.text)
	if err != nil {
		return nil, err
	}
	c.stmts[q.id] = st
	return st, nil
}

// ExecContext runs a fastOp, or passes the call to the driver.
func (c *fastConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if query == fastQuery && len(args) == 1 {
		if op, ok := args[0].Value.(fastOp); ok {
			return op.run(ctx, c)
		}
	}
	return c.Conn.(driver.ExecerContext).ExecContext(ctx, query, args)
}

// CheckNamedValue lets a fastOp through as it is; every other value gets
// database/sql's own conversion.
func (c *fastConn) CheckNamedValue(nv *driver.NamedValue) error {
	if _, ok := nv.Value.(fastOp); ok {
		return nil
	}
	return driver.ErrSkip
}

// QueryContext passes the call to the driver.
func (c *fastConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	return c.Conn.(driver.QueryerContext).QueryContext(ctx, query, args)
}

// PrepareContext passes the call to the driver.
func (c *fastConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	return c.Conn.(driver.ConnPrepareContext).PrepareContext(ctx, query)
}

// BeginTx passes the call to the driver.
func (c *fastConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	return c.Conn.(driver.ConnBeginTx).BeginTx(ctx, opts)
}

// Ping passes the call to the driver.
func (c *fastConn) Ping(ctx context.Context) error { return c.Conn.(driver.Pinger).Ping(ctx) }

// ResetSession passes the call to the driver.
func (c *fastConn) ResetSession(ctx context.Context) error {
	return c.Conn.(driver.SessionResetter).ResetSession(ctx)
}

// IsValid passes the call to the driver.
func (c *fastConn) IsValid() bool { return c.Conn.(driver.Validator).IsValid() }

// Close closes the fast ops' statements and the connection.
func (c *fastConn) Close() error {
	var errs []error
	for _, st := range c.stmts {
		errs = append(errs, st.Close())
	}
	return errors.Join(append(errs, c.Conn.Close())...)
}

// fastExec is a statement run for its effect.
type fastExec struct {
	q    query
	args []driver.NamedValue
}

func (e *fastExec) run(ctx context.Context, c *fastConn) (driver.Result, error) {
	st, err := c.stmt(ctx, e.q)
	if err != nil {
		return nil, err
	}
	return st.(driver.StmtExecContext).ExecContext(ctx, e.args)
}

// fastRows is a query whose rows are handed to row one by one, as the
// driver read them; its result counts them.
type fastRows struct {
	q    query
	args []driver.NamedValue
	row  func(driverRow) error
}

func (r *fastRows) run(ctx context.Context, c *fastConn) (driver.Result, error) {
	st, err := c.stmt(ctx, r.q)
	if err != nil {
		return nil, err
	}
	rows, err := st.(driver.StmtQueryContext).QueryContext(ctx, r.args)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	dest := make([]driver.Value, len(rows.Columns()))
	n := int64(0)
	for {
		switch err := rows.Next(dest); {
		case errors.Is(err, io.EOF):
			return driver.RowsAffected(n), rows.Close()
		case err != nil:
			return nil, err
		}
		n++
		if err := r.row(driverRow(dest)); err != nil {
			return nil, err
		}
	}
}

// namedValues converts args as database/sql would for this driver, into
// buf's storage (grown to fit, once).
func namedValues(buf []driver.NamedValue, args []any) ([]driver.NamedValue, error) {
	clear(buf) // nothing of an earlier statement is kept alive by it
	if cap(buf) < len(args) {
		buf = make([]driver.NamedValue, 0, len(args))
	}
	buf = buf[:0]
	for i, a := range args {
		var v driver.Value
		switch x := a.(type) {
		case nil, int64, string, []byte, float64:
			v = x
		case int:
			v = int64(x)
		case bool:
			v = x
		default:
			var err error
			if v, err = driver.DefaultParameterConverter.ConvertValue(a); err != nil {
				return nil, fmt.Errorf("sqlite: argument %d: %w", i+1, err)
			}
		}
		buf = append(buf, driver.NamedValue{Ordinal: i + 1, Value: v})
	}
	return buf, nil
}

// execFast runs q with args in the transaction as a fastExec. Its error
// is the driver's, not yet interpreted (an insert tells a taken key by it).
func (w *wtx) execFast(q query, args []any) (sql.Result, error) {
	var err error
	if w.s.nv, err = namedValues(w.s.nv, args); err != nil {
		return nil, task.Errorf(task.CodeInternal, "store: %v", err)
	}
	return w.tx.ExecContext(w.ctx, fastQuery, &fastExec{q: q, args: w.s.nv})
}

// queryFast runs q with args in the transaction as a fastRows, handing
// each row to row.
func (w *wtx) queryFast(q query, args []any, row func(driverRow) error) error {
	var err error
	if w.s.nv, err = namedValues(w.s.nv, args); err != nil {
		return task.Errorf(task.CodeInternal, "store: %v", err)
	}
	if _, err := w.tx.ExecContext(w.ctx, fastQuery, &fastRows{q: q, args: w.s.nv, row: row}); err != nil {
		return interpretError(err)
	}
	return nil
}

// driverRow is one row as the driver read it, scanned as database/sql
// scans the types the store reads (store.Scanner). Its blobs are the
// driver's own copies, made for this row, so they are kept as they are.
type driverRow []driver.Value

// Scan assigns the row's columns to dest, one each.
func (r driverRow) Scan(dest ...any) error {
	if len(dest) != len(r) {
		return fmt.Errorf("sqlite: %d destinations for %d columns", len(dest), len(r))
	}
	for i, d := range dest {
		if err := assign(d, r[i]); err != nil {
			return fmt.Errorf("sqlite: column %d: %w", i, err)
		}
	}
	return nil
}

// assign stores src, a value the driver read, in dest.
func assign(dest any, src driver.Value) error {
	switch d := dest.(type) {
	case *string:
		switch s := src.(type) {
		case string:
			*d = s
			return nil
		case []byte:
			*d = string(s)
			return nil
		}
	case **string:
		switch s := src.(type) {
		case nil:
			*d = nil
			return nil
		case string:
			*d = &s
			return nil
		case []byte:
			str := string(s)
			*d = &str
			return nil
		}
	case *[]byte:
		switch s := src.(type) {
		case nil:
			*d = nil
			return nil
		case []byte:
			*d = s
			return nil
		case string:
			*d = []byte(s)
			return nil
		}
	case *int64:
		if s, ok := src.(int64); ok {
			*d = s
			return nil
		}
	case *int:
		if s, ok := src.(int64); ok {
			*d = int(s)
			return nil
		}
	case *bool:
		if s, ok := src.(int64); ok && (s == 0 || s == 1) {
			*d = s == 1
			return nil
		}
	case *float64:
		switch s := src.(type) {
		case float64:
			*d = s
			return nil
		case int64:
			*d = float64(s)
			return nil
		}
	}
	return fmt.Errorf("cannot store %T in %T", src, dest)
}
