package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"log/slog"
	"time"

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

// migrate brings the database on db (the writer) to the newest schema, one
// migration per transaction, each recording its version in
// schema_migrations. A database newer than this binary is refused.
func migrate(ctx context.Context, db *sql.DB, log *slog.Logger) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	ml := &store.MigrationLog{Log: log}
	for {
		m, err := migrateNext(ctx, db, ms)
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
// write transaction (BEGIN IMMEDIATE, so two processes opening the same
// file at once apply each migration once). It returns the one it applied
// (nil for none).
func migrateNext(ctx context.Context, db *sql.DB, ms []store.Migration) (*store.Migration, error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("store migration: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER NOT NULL PRIMARY KEY,
		name       TEXT    NOT NULL,
		applied_at INTEGER NOT NULL
	) STRICT`); err != nil {
		return nil, fmt.Errorf("store migration: %w", err)
	}
	applied, err := appliedVersions(ctx, tx)
	if err != nil {
		return nil, fmt.Errorf("store migration: %w", err)
	}
	m, err := store.Pending(ms, applied)
	if err != nil {
		return nil, err
	}
	if m == nil {
		return nil, tx.Commit()
	}
	if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
		return nil, fmt.Errorf("store migration %s: %w", m.Name, err)
	}
	// applied_at is for the operator's eyes only; it is not a task time.
	if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
		m.Version, m.Name, time.Now().UnixMilli()); err != nil {
		return nil, fmt.Errorf("store migration %s: %w", m.Name, err)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("store migration %s: %w", m.Name, err)
	}
	return m, nil
}

// appliedVersions reads the versions recorded in schema_migrations.
func appliedVersions(ctx context.Context, tx *sql.Tx) (map[int]bool, error) {
	rows, err := tx.QueryContext(ctx, `SELECT version FROM schema_migrations`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	applied := map[int]bool{}
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		applied[v] = true
	}
	return applied, rows.Err()
}
