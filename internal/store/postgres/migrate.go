package postgres

import (
	"context"
	"embed"
	"fmt"
	"hash/fnv"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/errandhq/errand/internal/store"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// migrations returns the embedded migrations in version order.
func migrations() ([]store.Migration, error) { return store.LoadMigrations(migrationFS, "migrations") }

// SchemaVersion is the newest schema version this binary knows.
func SchemaVersion() int {
	ms, err := migrations()
	if err != nil || len(ms) == 0 {
		return 0
	}
	return ms[len(ms)-1].Version
}

// migrationLockKey is the advisory lock that serializes migrations of one
// schema across every node opening the database at once.
func migrationLockKey(schema string) int64 {
	h := fnv.New64a()
	h.Write([]byte("errand:migrate:" + schema))
	return int64(h.Sum64())
}

// migrate brings the database to the newest schema, one migration per
// transaction, each recording its version in schema_migrations. A database
// newer than this binary is refused.
func migrate(ctx context.Context, pool *pgxpool.Pool, schema string, log *slog.Logger) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	ml := &store.MigrationLog{Log: log}
	if schema != "" {
		ml.Attrs = []any{"schema", schema}
	}
	for {
		m, err := migrateNext(ctx, pool, ms, schema, log)
		if err != nil {
			return err
		}
		if m == nil {
			ml.Done(ms)
			return nil
		}
		ml.Applied(m)
	}
}

// migrateNext applies the first migration the database lacks, in its own
// transaction under a transaction-level advisory lock, so that nodes
// starting together apply each migration once and a node never sees a
// half-migrated schema. It returns the one it applied (nil for none).
func migrateNext(ctx context.Context, pool *pgxpool.Pool, ms []store.Migration, schema string, log *slog.Logger) (*store.Migration, error) {
	fail := func(what string, err error) error {
		return fmt.Errorf("store migration: %s: %w", what, interpretError(err))
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		return nil, fail("begin", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // a no-op after Commit

	// A migration may rebuild an index over many rows, and waits for
	// another node's migration: neither is bounded by statement_timeout.
	if _, err := tx.Exec(ctx, `SET LOCAL statement_timeout = 0`); err != nil {
		return nil, fail("settings", err)
	}
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrationLockKey(schema)); err != nil {
		return nil, fail("lock", err)
	}
	if schema != "" {
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)`, schema).Scan(&exists); err != nil {
			return nil, fail("schema", err)
		}
		if !exists {
			if _, err := tx.Exec(ctx, `CREATE SCHEMA `+pgx.Identifier{schema}.Sanitize()); err != nil {
				return nil, fail("create schema "+schema, err)
			}
			log.Info("store schema created", "schema", schema)
		}
	}
	// Checked before created: a role without CREATE rights on the schema
	// can still run an errand whose schema is up to date.
	var table *string
	if err := tx.QueryRow(ctx, `SELECT to_regclass('schema_migrations')::text`).Scan(&table); err != nil {
		return nil, fail("schema_migrations", err)
	}
	if table == nil {
		if _, err := tx.Exec(ctx, `CREATE TABLE schema_migrations (
			version    integer     NOT NULL PRIMARY KEY,
			name       text        NOT NULL,
			applied_at timestamptz NOT NULL DEFAULT now()
		)`); err != nil {
			return nil, fail("create schema_migrations", err)
		}
	}
	rows, err := tx.Query(ctx, `SELECT version FROM schema_migrations`)
	if err != nil {
		return nil, fail("version", err)
	}
	versions, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return nil, fail("version", err)
	}
	applied := make(map[int]bool, len(versions))
	for _, v := range versions {
		applied[int(v)] = true
	}
	m, err := store.Pending(ms, applied)
	if err != nil {
		return nil, err
	}
	if m == nil {
		return nil, interpretError(tx.Commit(ctx))
	}
	if _, err := tx.Exec(ctx, m.SQL); err != nil {
		return nil, fail(m.Name, err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.Version, m.Name); err != nil {
		return nil, fail(m.Name, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fail(m.Name, err)
	}
	return m, nil
}
