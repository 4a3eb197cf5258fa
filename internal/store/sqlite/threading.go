package sqlite

import (
	"context"
	"database/sql/driver"
	"reflect"
	"unsafe"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// SQLite has three threading modes. modernc's driver opens every
// connection in the serialized one (SQLITE_OPEN_FULLMUTEX), in which each
// call into SQLite — every bound argument, every column of every row read,
// every step — takes and releases the connection's recursive mutex. The
// store never needs it: database/sql hands a connection to one goroutine
// at a time, and the only call the driver makes from another goroutine,
// sqlite3_interrupt on a cancelled context, takes no mutex. Profiles of a
// burn-down put those lock and unlock calls at ~15% of the writer's time.
//
// So each of the store's connections is switched, right after it opens and
// before any statement is prepared on it, to the multi-thread mode: the
// connection's mutex is freed and its handle's mutex pointer cleared,
// which is exactly the state sqlite3_open_v2 leaves with
// SQLITE_OPEN_NOMUTEX (every sqlite3_mutex_enter and leave of a nil mutex
// does nothing). SQLite's own process-wide mutexes (the page-cache group,
// the VFS's file table, the allocator) stay, so connections used on
// different goroutines at once remain safe, as SQLite documents for this
// mode.

// multiThread switches c, a connection of modernc's driver, to SQLite's
// multi-thread mode. A driver whose connection no longer keeps its handle
// where handleOf looks leaves c serialized (slower, never unsafe), and
// TestConnectionsMultiThread fails.
func multiThread(c driver.Conn) {
	h, ok := handleOf(c)
	if !ok || h.Fmutex == 0 {
		return
	}
	m := h.Fmutex
	h.Fmutex = 0
	tls := libc.NewTLS()
	sqlite3.Xsqlite3_mutex_free(tls, m)
	tls.Close()
}

// handleOf finds the sqlite3 structure of c, a connection of modernc's
// driver (or a fastConn of one), by its handle field: an address in the C
// heap of modernc's libc, which Go's collector neither scans nor moves.
func handleOf(c driver.Conn) (*sqlite3.Tsqlite3, bool) {
	if fc, ok := c.(*fastConn); ok {
		c = fc.Conn
	}
	v := reflect.ValueOf(c)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return nil, false
	}
	f := v.Elem().FieldByName("db") // the *sqlite3 handle, as a uintptr
	if !f.IsValid() || f.Kind() != reflect.Uintptr || f.Uint() == 0 {
		return nil, false
	}
	var p unsafe.Pointer
	*(*uintptr)(unsafe.Pointer(&p)) = uintptr(f.Uint())
	return (*sqlite3.Tsqlite3)(p), true
}

// connector opens the store's connections, each in the multi-thread mode:
// the readers' and the checkpointer's as they are, the writer's inside a
// fastConn (fastConnector).
type connector struct{ dsn string }

// Connect opens a driver connection to the connector's database.
func (c connector) Connect(context.Context) (driver.Conn, error) {
	conn, err := sqliteDriver.Open(c.dsn)
	if err != nil {
		return nil, err
	}
	multiThread(conn)
	return conn, nil
}

// Driver returns modernc's driver.
func (connector) Driver() driver.Driver { return sqliteDriver }
