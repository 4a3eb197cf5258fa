package postgres

import (
	"context"
	"embed"
	"fmt"
	"hash/fnv"
	"io/fs"
	"log/slog"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// migration is one numbered schema change.
type migration struct {
	version int
	name    string
	sql     string
}

// migrations returns the embedded migrations in version order. Their file
// names are NNNN_what.sql, numbered from 1 without gaps.
func migrations() ([]migration, error) {
	files, err := fs.Glob(migrationFS, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, f := range files {
		base := path.Base(f)
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v < 1 {
			return nil, fmt.Errorf("migration %s: name must be NNNN_what.sql", base)
		}
		body, err := migrationFS.ReadFile(f)
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: base, sql: string(body)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	for i, m := range ms {
		if m.version != i+1 {
			return nil, fmt.Errorf("migration %s: expected version %d", m.name, i+1)
		}
	}
	return ms, nil
}

// SchemaVersion is the newest schema version this binary knows.
func SchemaVersion() int {
	ms, err := migrations()
	if err != nil || len(ms) == 0 {
		return 0
	}
	return ms[len(ms)-1].version
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
	for {
		applied, err := migrateNext(ctx, pool, ms, schema, log)
		if err != nil {
			return err
		}
		if !applied {
			return nil
		}
	}
}

// migrateNext applies the first migration the database lacks, in its own
// transaction under a transaction-level advisory lock, so that nodes
// starting together apply each migration once and a node never sees a
// half-migrated schema. It reports whether it applied one.
func migrateNext(ctx context.Context, pool *pgxpool.Pool, ms []migration, schema string, log *slog.Logger) (bool, error) {
	fail := func(what string, err error) error {
		return fmt.Errorf("store migration: %s: %w", what, interpretError(err))
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		return false, fail("begin", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // a no-op after Commit

	// A migration may rebuild an index over many rows, and waits for
	// another node's migration: neither is bounded by statement_timeout.
	if _, err := tx.Exec(ctx, `SET LOCAL statement_timeout = 0`); err != nil {
		return false, fail("settings", err)
	}
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrationLockKey(schema)); err != nil {
		return false, fail("lock", err)
	}
	if schema != "" {
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)`, schema).Scan(&exists); err != nil {
			return false, fail("schema", err)
		}
		if !exists {
			if _, err := tx.Exec(ctx, `CREATE SCHEMA `+pgx.Identifier{schema}.Sanitize()); err != nil {
				return false, fail("create schema "+schema, err)
			}
			log.Info("store schema created", "schema", schema)
		}
	}
	// Checked before created: a role without CREATE rights on the schema
	// can still run an errand whose schema is up to date.
	var table *string
	if err := tx.QueryRow(ctx, `SELECT to_regclass('schema_migrations')::text`).Scan(&table); err != nil {
		return false, fail("schema_migrations", err)
	}
	if table == nil {
		if _, err := tx.Exec(ctx, `CREATE TABLE schema_migrations (
			version    integer     NOT NULL PRIMARY KEY,
			name       text        NOT NULL,
			applied_at timestamptz NOT NULL DEFAULT now()
		)`); err != nil {
			return false, fail("create schema_migrations", err)
		}
	}
	var current int
	if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&current); err != nil {
		return false, fail("version", err)
	}
	latest := len(ms)
	if current > latest {
		return false, fmt.Errorf("store schema version %d is newer than this errand (%d); upgrade errand", current, latest)
	}
	if current == latest {
		return false, interpretError(tx.Commit(ctx))
	}
	m := ms[current]
	if _, err := tx.Exec(ctx, m.sql); err != nil {
		return false, fail(m.name, err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.version, m.name); err != nil {
		return false, fail(m.name, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return false, fail(m.name, err)
	}
	log.Info("store migrated", "version", m.version, "migration", m.name, "schema", schema)
	return true, nil
}
