package postgres

import (
	"context"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

var (
	// sqlSessionCreate stores a session and removes those expired, in one
	// statement.
	sqlSessionCreate = `WITH gone AS (DELETE FROM console_sessions WHERE expires_at <= $3)
		INSERT INTO console_sessions (id_hash, sealed, created_at, expires_at) VALUES ($1, $2, $3, $4)`
	sqlSessionGet    = `SELECT sealed, created_at, expires_at FROM console_sessions WHERE id_hash = $1 AND expires_at > $2`
	sqlSessionDelete = `DELETE FROM console_sessions WHERE id_hash = $1`
)

// ConsoleSessionCreate stores s and removes the sessions expired at
// s.CreatedAt, in one statement.
func (s *Store) ConsoleSessionCreate(ctx context.Context, cs *store.ConsoleSession) error {
	if len(cs.IDHash) != 32 {
		return task.Errorf(task.CodeInternal, "store: a session's id hash is 32 bytes (SHA-256), not %d", len(cs.IDHash))
	}
	_, err := s.pool.Exec(ctx, sqlSessionCreate, cs.IDHash, cs.Sealed, cs.CreatedAt, cs.ExpiresAt)
	return interpretError(err)
}

// ConsoleSessionGet finds an unexpired session by its id's hash (a seek on
// the key).
func (s *Store) ConsoleSessionGet(ctx context.Context, idHash []byte, now int64) (*store.ConsoleSession, error) {
	cs := &store.ConsoleSession{IDHash: idHash}
	if err := s.pool.QueryRow(ctx, sqlSessionGet, idHash, now).Scan(&cs.Sealed, &cs.CreatedAt, &cs.ExpiresAt); err != nil {
		return nil, interpretError(err)
	}
	return cs, nil
}

// ConsoleSessionDelete removes a session by its id's hash.
func (s *Store) ConsoleSessionDelete(ctx context.Context, idHash []byte) error {
	_, err := s.pool.Exec(ctx, sqlSessionDelete, idHash)
	return interpretError(err)
}
