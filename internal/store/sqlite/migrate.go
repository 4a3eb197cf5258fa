package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"log/slog"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"
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

// migrate brings the database on db (the writer) to the newest schema, one
// migration per transaction, each recording its version in
// schema_migrations. A database newer than this binary is refused.
func migrate(ctx context.Context, db *sql.DB, log *slog.Logger) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	latest := len(ms)
	for {
		applied, err := migrateNext(ctx, db, ms, latest, log)
		if err != nil {
			return err
		}
		if !applied {
			return nil
		}
	}
}

// migrateNext applies the first migration the database lacks, in its own
// write transaction (BEGIN IMMEDIATE, so two processes opening the same
// file at once apply each migration once). It reports whether it applied
// one.
func migrateNext(ctx context.Context, db *sql.DB, ms []migration, latest int, log *slog.Logger) (bool, error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("store migration: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER NOT NULL PRIMARY KEY,
		name       TEXT    NOT NULL,
		applied_at INTEGER NOT NULL
	) STRICT`); err != nil {
		return false, fmt.Errorf("store migration: %w", err)
	}
	var current int
	if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&current); err != nil {
		return false, fmt.Errorf("store migration: %w", err)
	}
	if current > latest {
		return false, fmt.Errorf("store schema version %d is newer than this errand (%d); upgrade errand", current, latest)
	}
	if current == latest {
		return false, tx.Commit()
	}
	m := ms[current]
	if _, err := tx.ExecContext(ctx, m.sql); err != nil {
		return false, fmt.Errorf("store migration %s: %w", m.name, err)
	}
	// applied_at is for the operator's eyes only; it is not a task time.
	if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
		m.version, m.name, time.Now().UnixMilli()); err != nil {
		return false, fmt.Errorf("store migration %s: %w", m.name, err)
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("store migration %s: %w", m.name, err)
	}
	log.Info("store migrated", "version", m.version, "migration", m.name)
	return true, nil
}
