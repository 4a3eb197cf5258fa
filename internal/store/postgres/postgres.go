// Package postgres is errand's PostgreSQL backend of store.Store and
// store.KeyStore, on pgx v5 and its pool (no database/sql), for `errand
// serve --store postgres://…` with any number of nodes on one database.
//
// Nodes coordinate only through the database: claims lock the rows they
// take with FOR UPDATE SKIP LOCKED, every write that ends an attempt is
// fenced by the attempt's lease id, and migrations are serialized by an
// advisory lock; the limits a claim keeps (a queue's and an instance's caps,
// a queue's rate bucket) are kept inside the claim under advisory locks.
// Every transaction of a task's life is short: a few statements, sent in as
// few round trips as pgx's pipelining allows, never waiting on anything but
// the database. docs/postgres.md explains the schema and the choices.
package postgres

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/errandhq/errand/internal/id"
	"github.com/errandhq/errand/internal/store"
)

// Options tune the PostgreSQL backend. Pool size and other pgx settings come
// from the URL (pool_max_conns=…, default_query_exec_mode=…).
type Options struct {
	// Logger receives migration and maintenance logs; nil uses
	// slog.Default().
	Logger *slog.Logger
	// Schema, if set, is the schema errand's tables live in: it is created
	// if missing and becomes the connections' search_path. "" uses the
	// role's search_path as it is (usually public).
	Schema string
}

// The safety settings every connection gets unless the URL sets them: no
// statement runs for more than 30 s, and a session left idle inside a
// transaction (a stuck node) is ended after 60 s, releasing its locks.
const (
	defaultStatementTimeout = "30s"
	defaultIdleInTxTimeout  = "60s"
)

// sessionDefaults are the settings every connection starts with unless
// the URL sets them. They are SET once the connection is made (sessionSets),
// not sent as startup parameters, which a pooler in front (PgBouncer)
// refuses unless told to drop them (docs/postgres.md, "Connection
// poolers"):
//   - the safety timeouts above;
//   - no JIT compilation: errand's statements are short, and the server
//     compiles any whose estimated cost passes jit_above_cost. The
//     rescuer's read of the next due time and lease expiry (sqlNextDue)
//     does, its estimate multiplied by the queues the planner guesses
//     before queues is analyzed: ~130 ms of compiling for ~1 ms of work,
//     every second (docs/postgres.md, "JIT");
//   - no parallel workers for maintenance: errand's own VACUUM of tasks
//     (VacuumTasks, every few seconds under churn) otherwise starts two to
//     read the table's eight indexes, and starting them cost more of the
//     server's CPU than they saved: the vacuum's share of PostgreSQL's CPU
//     a task fell from 9.4–11.0 µs to 5.1–6.1 with none
//     (BenchmarkHotCold; docs/postgres.md, "Vacuum").
var sessionDefaults = []struct{ name, value string }{
	{"statement_timeout", defaultStatementTimeout},
	{"idle_in_transaction_session_timeout", defaultIdleInTxTimeout},
	{"jit", "off"},
	{"max_parallel_maintenance_workers", "0"},
}

// bulkStatementTimeout bounds the statements that delete a queue's or an
// instance's tasks, which may be many more than statement_timeout allows.
const bulkStatementTimeout = "10min"

// bulk lifts statement_timeout for the rest of tx to bulkStatementTimeout.
func bulk(ctx context.Context, tx pgx.Tx) error {
	_, err := tx.Exec(ctx, `SET LOCAL statement_timeout = '`+bulkStatementTimeout+`'`)
	return interpretError(err)
}

// rollbackTimeout bounds a rollback, which runs even when the caller's
// context is done.
const rollbackTimeout = 5 * time.Second

// Store is the PostgreSQL implementation of store.Store and store.KeyStore.
type Store struct {
	pool *pgxpool.Pool
	log  *slog.Logger
	// origin marks this store's own wake notifications (Notify), which its
	// Listen does not pass on: the node that sent one woke its own
	// services already.
	origin string

	closeOnce sync.Once
}

var (
	_ store.Store       = (*Store)(nil)
	_ store.KeyStore    = (*Store)(nil)
	_ store.StatsKeeper = (*Store)(nil)
	_ store.Vacuumer    = (*Store)(nil)
)

// schemaName is what Options.Schema may hold: a plain identifier.
var schemaName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}$`)

// PlainSchema reports whether name is a schema Options.Schema may hold: a
// plain identifier (letters, digits, '_', not starting with a digit).
func PlainSchema(name string) bool { return schemaName.MatchString(name) }

// Open connects to the database at url (a postgres:// URL or a key=value
// connection string), applies the migrations it lacks and returns the
// store. A database migrated by a newer errand is refused. When the server
// cannot be reached the error carries the code UNAVAILABLE.
func Open(ctx context.Context, url string, opts Options) (*Store, error) {
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("postgres: parse store URL: %w", err)
	}
	if !strings.Contains(url, "pool_max_conns") {
		// One connection is held by LISTEN; the API, the dispatcher and the
		// maintenance services share the rest.
		cfg.MaxConns = 16
	}
	params := cfg.ConnConfig.RuntimeParams
	// application_name is a startup parameter poolers pass on.
	setDefault(params, "application_name", "errand")
	if opts.Schema != "" && !PlainSchema(opts.Schema) {
		return nil, fmt.Errorf("postgres: schema %q: must be a plain identifier (letters, digits, '_')", opts.Schema)
	}
	if sets := sessionSets(params, opts.Schema); sets != "" {
		cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
			_, err := c.Exec(ctx, sets)
			return err
		}
	}

	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", interpretError(err))
	}
	s := &Store{pool: pool, log: log, origin: id.Secret(8)}
	if err := migrate(ctx, pool, opts.Schema, log); err != nil {
		pool.Close()
		return nil, err
	}
	return s, nil
}

// sessionSets is what each connection runs once it is made (one round trip,
// the simple protocol): a SET of each of sessionDefaults the URL's startup
// parameters, params, do not set (by name, or in libpq's options, "-c
// name=…"), and of the search_path to schema when it is not "".
func sessionSets(params map[string]string, schema string) string {
	var sets []string
	for _, d := range sessionDefaults {
		if _, ok := params[d.name]; !ok && !strings.Contains(params["options"], d.name) {
			sets = append(sets, "SET "+d.name+" = '"+d.value+"'")
		}
	}
	if schema != "" {
		sets = append(sets, "SET search_path = "+pgx.Identifier{schema}.Sanitize())
	}
	return strings.Join(sets, "; ")
}

// setDefault sets params[key] unless the URL already did.
func setDefault(params map[string]string, key, value string) {
	if _, ok := params[key]; !ok {
		params[key] = value
	}
}

// Close closes the pool, waiting for connections in use to be released; it
// is safe to call more than once.
func (s *Store) Close() error {
	s.closeOnce.Do(s.pool.Close)
	return nil
}

// rowsErr closes rows and returns their error, translated.
func rowsErr(rows pgx.Rows) error {
	rows.Close()
	return interpretError(rows.Err())
}

// inTx runs fn in one transaction (READ COMMITTED, the default) and commits
// it if fn returns nil; fn's error is returned as it is, and nothing fn wrote
// is kept.
func (s *Store) inTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return interpretError(err)
	}
	if err := fn(tx); err != nil {
		// A rollback on a broken connection fails too; the pool then drops
		// the connection and the server ends the transaction with it.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
		_ = tx.Rollback(rctx)
		cancel()
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return interpretError(err)
	}
	return nil
}

// Ping checks that PostgreSQL answers a round trip.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.pool.Ping(ctx); err != nil {
		return interpretError(err)
	}
	return nil
}
