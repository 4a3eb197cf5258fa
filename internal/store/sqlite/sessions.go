package sqlite

import (
	"context"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

var (
	qSessionExpired = define(onWriter, `DELETE FROM console_sessions WHERE expires_at <= ?`)
	qSessionInsert  = define(onWriter, `INSERT INTO console_sessions (id_hash, sealed, created_at, expires_at) VALUES (?, ?, ?, ?)`)
	qSessionGet     = define(onReader, `SELECT sealed, created_at, expires_at FROM console_sessions WHERE id_hash = ? AND expires_at > ?`)
	qSessionDelete  = define(onWriter, `DELETE FROM console_sessions WHERE id_hash = ?`)
)

// ConsoleSessionCreate stores s and removes the sessions expired at
// s.CreatedAt, in one write transaction.
func (s *Store) ConsoleSessionCreate(ctx context.Context, cs *store.ConsoleSession) error {
	if len(cs.IDHash) != 32 {
		return task.Errorf(task.CodeInternal, "store: a session's id hash is 32 bytes (SHA-256), not %d", len(cs.IDHash))
	}
	return s.write(ctx, func(w *wtx) error {
		if _, err := w.exec(qSessionExpired, cs.CreatedAt); err != nil {
			return err
		}
		_, err := w.exec(qSessionInsert, cs.IDHash, cs.Sealed, cs.CreatedAt, cs.ExpiresAt)
		return err
	})
}

// ConsoleSessionGet finds an unexpired session by its id's hash (a seek on
// the key).
func (s *Store) ConsoleSessionGet(ctx context.Context, idHash []byte, now int64) (*store.ConsoleSession, error) {
	cs := &store.ConsoleSession{IDHash: idHash}
	if err := s.reader(qSessionGet).QueryRowContext(ctx, idHash, now).Scan(&cs.Sealed, &cs.CreatedAt, &cs.ExpiresAt); err != nil {
		return nil, interpretError(err)
	}
	return cs, nil
}

// ConsoleSessionDelete removes a session by its id's hash.
func (s *Store) ConsoleSessionDelete(ctx context.Context, idHash []byte) error {
	return s.write(ctx, func(w *wtx) error {
		_, err := w.exec(qSessionDelete, idHash)
		return err
	})
}
