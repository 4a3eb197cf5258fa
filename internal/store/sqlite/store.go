// Package sqlite is errand's SQLite backend of store.Store, on the pure-Go
// driver modernc.org/sqlite so that errand stays one static binary without
// cgo.
//
// One writer connection carries every write transaction, each opened with
// BEGIN IMMEDIATE so that it holds the write lock from its first statement
// (and so waits its turn, under busy_timeout, behind another process writing
// the same file). A separate pool of query_only connections serves reads,
// which WAL mode lets run beside the writer. Every statement is prepared
// once per connection and reused.
package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"runtime"
	"slices"
	"strings"
	"sync"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/errandhq/errand/internal/store"
)

// Options tune the SQLite backend.
type Options struct {
	// Synchronous is SQLite's synchronous setting in WAL mode: "NORMAL" (the
	// default) keeps every committed write through a crash or kill -9 of
	// the process; "FULL" also keeps it through a power loss or an OS
	// crash, at the cost of an fsync per commit.
	Synchronous string
	// Logger receives migration and maintenance logs; nil uses slog.Default().
	Logger *slog.Logger
	// checkpointed, if set (tests), is told of each background
	// checkpoint's result.
	checkpointed func(checkpointResult)
}

// busyTimeoutMs is how long a connection waits for a lock that another
// process holds before answering UNAVAILABLE.
const busyTimeoutMs = 5000

// Store is the SQLite implementation of store.Store.
type Store struct {
	w   *sql.DB // the one writer connection
	r   *sql.DB // the read pool
	log *slog.Logger

	wst []*sql.Stmt // prepared on w, by query id
	rst []*sql.Stmt // prepared on r, by query id

	ckpt *checkpointer // copies the WAL back on its own connection
	// nv holds the arguments of the writer's last fast op (execFast,
	// queryFast); only a write transaction uses it, one at a time.
	nv []driver.NamedValue
	// leases maps the leases this store's claims granted to their tasks'
	// rowids, and rowArgs and rids hold a finish chunk's arguments and
	// rowids (leaserows.go, finishRound); only a write transaction uses
	// them.
	leases  leaseRows
	rowArgs []any
	rids    []int64
	// finishedByRow counts the tasks finished by rowid (tests).
	finishedByRow int

	closeOnce sync.Once
	closeErr  error
}

var _ store.Store = (*Store)(nil)

// SynchronousMode is s as SQLite's synchronous setting: NORMAL for "",
// NORMAL or FULL in any case; ok is false for anything else.
func SynchronousMode(s string) (mode string, ok bool) {
	switch mode = strings.ToUpper(s); mode {
	case "":
		return "NORMAL", true
	case "NORMAL", "FULL":
		return mode, true
	}
	return "", false
}

// Open opens (creating if needed) the database file at path, applies the
// migrations it lacks and prepares every statement. A database written by a
// newer errand is refused.
func Open(ctx context.Context, path string, opts Options) (*Store, error) {
	syncMode, ok := SynchronousMode(opts.Synchronous)
	if !ok {
		return nil, fmt.Errorf("sqlite: synchronous must be NORMAL or FULL, not %q", opts.Synchronous)
	}
	if path == "" {
		return nil, errors.New("sqlite: empty database path")
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	s := &Store{log: log}

	common := []string{
		fmt.Sprintf("busy_timeout(%d)", busyTimeoutMs),
		"temp_store(MEMORY)",
		"foreign_keys(OFF)", // the store deletes children itself, in the same transaction
		"synchronous(" + syncMode + ")",
	}
	s.w = sql.OpenDB(fastConnector{dsn(path, "immediate", slices.Concat(common, []string{
		"cache_size(-16000)", // 16 MB of page cache
		"journal_mode(WAL)",
		"journal_size_limit(67108864)", // truncate the WAL back to 64 MB after a checkpoint
		"analysis_limit(1000)",         // keeps PRAGMA optimize cheap
		// The checkpointer copies the WAL back; the writer does only
		// past this many pages (checkpoint.go).
		fmt.Sprintf("wal_autocheckpoint(%d)", writerCheckpointPages),
	}))})
	s.w.SetMaxOpenConns(1)
	s.w.SetMaxIdleConns(1)
	s.w.SetConnMaxLifetime(0)
	s.w.SetConnMaxIdleTime(0)
	if err := s.w.PingContext(ctx); err != nil {
		s.w.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	if err := migrate(ctx, s.w, log); err != nil {
		s.w.Close()
		return nil, err
	}

	readers := max(4, runtime.GOMAXPROCS(0))
	s.r = sql.OpenDB(connector{dsn(path, "", slices.Concat(common, []string{"cache_size(-8000)", "query_only(1)"}))})
	s.r.SetMaxOpenConns(readers)
	s.r.SetMaxIdleConns(readers)
	s.r.SetConnMaxLifetime(0)
	s.r.SetConnMaxIdleTime(0)

	if err := s.prepare(ctx); err != nil {
		s.Close()
		return nil, err
	}
	ck := sql.OpenDB(connector{dsn(path, "", common)})
	ck.SetMaxOpenConns(1)
	ck.SetMaxIdleConns(1)
	ck.SetConnMaxLifetime(0)
	ck.SetConnMaxIdleTime(0)
	s.ckpt = newCheckpointer(ck, log, opts.checkpointed)
	return s, nil
}

// dsn builds the driver's name for the file at path: a file: URI (so that
// any character in the path is safe) with the driver's parameters.
func dsn(path, txlock string, pragmas []string) string {
	q := url.Values{}
	for _, p := range pragmas {
		q.Add("_pragma", p)
	}
	if txlock != "" {
		q.Set("_txlock", txlock)
	}
	u := url.URL{Scheme: "file", Opaque: (&url.URL{Path: path}).EscapedPath()}
	return u.String() + "?" + q.Encode()
}

// prepare prepares every registered statement on the pools it is used on.
// The writer's statements must be prepared here, before any transaction:
// preparing on the writer pool while its only connection is inside a
// transaction would wait for that very connection.
func (s *Store) prepare(ctx context.Context) error {
	s.wst = make([]*sql.Stmt, len(registry))
	s.rst = make([]*sql.Stmt, len(registry))
	for i, q := range registry {
		if q.pools&onWriter != 0 {
			st, err := s.w.PrepareContext(ctx, q.text)
			if err != nil {
				return fmt.Errorf("sqlite: prepare %q: %w", q.text, err)
			}
			s.wst[i] = st
		}
		if q.pools&onReader != 0 {
			st, err := s.r.PrepareContext(ctx, q.text)
			if err != nil {
				return fmt.Errorf("sqlite: prepare %q: %w", q.text, err)
			}
			s.rst[i] = st
		}
	}
	return nil
}

// Close stops the checkpointer and closes both pools after a last PRAGMA
// optimize; it is safe to call more than once.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		var errs []error
		if s.ckpt != nil {
			errs = append(errs, s.ckpt.close())
		}
		for _, st := range append(s.wst, s.rst...) {
			if st != nil {
				errs = append(errs, st.Close())
			}
		}
		if s.r != nil {
			errs = append(errs, s.r.Close())
		}
		if s.w != nil {
			if _, err := s.w.Exec("PRAGMA optimize"); err != nil {
				s.log.Warn("sqlite: PRAGMA optimize on close", "err", err)
			}
			errs = append(errs, s.w.Close())
		}
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}

// pool says which connections a statement runs on.
type pool uint8

const (
	onWriter pool = 1 << iota
	onReader
	// onFast statements run only as the writer's fast ops (fast.go):
	// its connection prepares them on first use, database/sql never.
	onFast
)

// query is a registered SQL statement, prepared once per connection.
type query struct {
	id    int
	text  string
	pools pool
}

// registry holds every statement the store runs, filled by define at
// package initialization.
var registry []query

// define registers a statement to prepare on pools.
func define(pools pool, text string) query {
	q := query{id: len(registry), text: text, pools: pools}
	registry = append(registry, q)
	return q
}

// reader returns q prepared on the read pool.
func (s *Store) reader(q query) *sql.Stmt {
	st := s.rst[q.id]
	if st == nil {
		panic("sqlite: statement not registered for the read pool: " + q.text)
	}
	return st
}

// wtx is one write transaction on the writer connection. Its statements run
// with a context that is not cancelled: once the write lock is held, the
// transaction finishes quickly rather than half-way. The caller's context
// still bounds the wait for the writer and the BEGIN.
type wtx struct {
	s     *Store
	tx    *sql.Tx
	ctx   context.Context
	bound map[int]*sql.Stmt
	// chainRules caches, by (instance, queue), whether the queue has an
	// enabled task rule (chainEvents).
	chainRules map[[2]string]bool
}

// write runs fn in one write transaction (BEGIN IMMEDIATE) and commits it
// if fn returns nil. fn's error is returned as it is. ctx bounds the wait
// for the writer connection only: the transaction is begun without it, as
// database/sql rolls a transaction back when its context ends — from
// another goroutine, handing the connection to the next writer while fn
// still runs and uses the store's one-writer scratch (nv, leases, rowArgs,
// rids), whose values the next transaction's would then overwrite.
func (s *Store) write(ctx context.Context, fn func(w *wtx) error) error {
	conn, err := s.w.Conn(ctx)
	if err != nil {
		return interpretError(err)
	}
	defer conn.Close()
	tx, err := conn.BeginTx(context.WithoutCancel(ctx), nil)
	if err != nil {
		return interpretError(err)
	}
	w := &wtx{s: s, tx: tx, ctx: context.WithoutCancel(ctx)}
	if err := fn(w); err != nil {
		_ = tx.Rollback()
		if ctx.Err() != nil && errors.Is(err, sql.ErrTxDone) {
			return ctx.Err()
		}
		return err
	}
	if err := tx.Commit(); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return interpretError(err)
	}
	s.ckpt.committed()
	return nil
}

// stmt returns q bound to this transaction, preparing nothing: the writer's
// statements were prepared on its connection at Open.
func (w *wtx) stmt(q query) *sql.Stmt {
	if st, ok := w.bound[q.id]; ok {
		return st
	}
	base := w.s.wst[q.id]
	if base == nil {
		panic("sqlite: statement not registered for the writer: " + q.text)
	}
	st := w.tx.StmtContext(w.ctx, base)
	if w.bound == nil {
		w.bound = map[int]*sql.Stmt{}
	}
	w.bound[q.id] = st
	return st
}

// exec runs q in the transaction.
func (w *wtx) exec(q query, args ...any) (sql.Result, error) {
	r, err := w.stmt(q).ExecContext(w.ctx, args...)
	if err != nil {
		return nil, interpretError(err)
	}
	return r, nil
}

// query runs q in the transaction and returns its rows.
func (w *wtx) query(q query, args ...any) (*sql.Rows, error) {
	rows, err := w.stmt(q).QueryContext(w.ctx, args...)
	if err != nil {
		return nil, interpretError(err)
	}
	return rows, nil
}

// queryRow runs q in the transaction and returns its one row.
func (w *wtx) queryRow(q query, args ...any) *sql.Row {
	return w.stmt(q).QueryRowContext(w.ctx, args...)
}

// affected returns how many rows r changed.
func affected(r sql.Result) (int, error) {
	n, err := r.RowsAffected()
	if err != nil {
		return 0, interpretError(err)
	}
	return int(n), nil
}

// Ping checks that the database file answers a read.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.r.PingContext(ctx); err != nil {
		if ctx.Err() != nil {
			return ctx.Err() // the caller's, as every method answers it
		}
		return unavailable(err)
	}
	return nil
}
