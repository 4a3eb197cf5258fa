package sqlite

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

const keyCols = `id, org, digest, prefix, grants, created_at, revoked_at`

var (
	qKeyInsert   = define(onWriter, `INSERT INTO api_keys (`+keyCols+`) VALUES (?, ?, ?, ?, ?, ?, ?)`)
	qKeyByDigest = define(onReader, `SELECT `+keyCols+` FROM api_keys WHERE digest = ?`)
	qKeyGet      = define(onReader, `SELECT `+keyCols+` FROM api_keys WHERE id = ? AND org = ?`)
	qKeyListOrg  = define(onReader, `SELECT `+keyCols+` FROM api_keys WHERE org = ? ORDER BY created_at, id`)
	qKeyListAll  = define(onReader, `SELECT `+keyCols+` FROM api_keys ORDER BY created_at, id`)
	// Revoking keeps the first time: a row that is already revoked matches
	// (so the call succeeds) but keeps its revoked_at.
	qKeyRevoke = define(onWriter, `UPDATE api_keys SET revoked_at = CASE WHEN revoked_at = 0 THEN ? ELSE revoked_at END
		WHERE org = ? AND id = ?`)
	qKeyCount = define(onReader, `SELECT count(*) FROM api_keys`)
)

// grantJSON is one grant as the grants column stores it.
type grantJSON struct {
	Instance string `json:"instance"`
	Role     string `json:"role"`
}

func encodeGrants(gs []store.Grant) (string, error) {
	out := make([]grantJSON, len(gs))
	for i, g := range gs {
		out[i] = grantJSON(g)
	}
	b, err := json.Marshal(out)
	if err != nil {
		return "", task.Errorf(task.CodeInternal, "store: encoding grants: %v", err)
	}
	return string(b), nil
}

func scanKey(sc scanner) (*store.APIKey, error) {
	k := &store.APIKey{}
	var grants string
	if err := sc.Scan(&k.ID, &k.Org, &k.Digest, &k.Prefix, &grants, &k.CreatedAt, &k.RevokedAt); err != nil {
		return nil, interpretError(err)
	}
	var gs []grantJSON
	if err := json.Unmarshal([]byte(grants), &gs); err != nil {
		return nil, task.Errorf(task.CodeInternal, "store: key %s has unreadable grants: %v", k.ID, err)
	}
	if len(gs) > 0 {
		k.Grants = make([]store.Grant, len(gs))
		for i, g := range gs {
			k.Grants[i] = store.Grant(g)
		}
	}
	return k, nil
}

// KeyCreate stores a new key. A digest or id already stored is refused.
func (s *Store) KeyCreate(ctx context.Context, k *store.APIKey) error {
	if len(k.Digest) != 32 {
		return task.Errorf(task.CodeInternal, "store: a key digest is 32 bytes (SHA-256), not %d", len(k.Digest))
	}
	grants, err := encodeGrants(k.Grants)
	if err != nil {
		return err
	}
	return s.write(ctx, func(w *wtx) error {
		_, err := w.exec(qKeyInsert, k.ID, k.Org, k.Digest, k.Prefix, grants, k.CreatedAt, k.RevokedAt)
		return err
	})
}

// KeyByDigest finds a key, revoked or not, by the exact SHA-256 digest of
// its secret (a lookup of the unique index on digest).
func (s *Store) KeyByDigest(ctx context.Context, digest []byte) (*store.APIKey, error) {
	if len(digest) == 0 {
		return nil, task.ErrNotFound
	}
	return scanKey(s.reader(qKeyByDigest).QueryRowContext(ctx, digest))
}

// KeyGet finds org's key, revoked or not, by its id (a seek on the
// primary key); task.ErrNotFound if org has none of that id.
func (s *Store) KeyGet(ctx context.Context, ref store.KeyRef) (*store.APIKey, error) {
	return scanKey(s.reader(qKeyGet).QueryRowContext(ctx, ref.ID, ref.Org))
}

// KeyList lists an organization's keys oldest first; org "" lists every
// organization's.
func (s *Store) KeyList(ctx context.Context, org string) ([]*store.APIKey, error) {
	q, args := qKeyListOrg, []any{org}
	if org == "" {
		q, args = qKeyListAll, nil
	}
	rows, err := s.reader(q).QueryContext(ctx, args...)
	if err != nil {
		return nil, interpretError(err)
	}
	defer rows.Close()
	out, err := store.ScanAll(rows, scanKey)
	return out, interpretError(err)
}

// KeyRevoke marks org's key revoked at now, keeping the first time when it
// already is; task.ErrNotFound when org has no key with that id.
func (s *Store) KeyRevoke(ctx context.Context, ref store.KeyRef, now int64) error {
	org, id := ref.Org, ref.ID
	return s.write(ctx, func(w *wtx) error {
		r, err := w.exec(qKeyRevoke, now, org, id)
		if err != nil {
			return err
		}
		n, err := affected(r)
		switch {
		case err != nil:
			return err
		case n == 0:
			return task.ErrNotFound
		case n > 1:
			return fmt.Errorf("store: revoking key %s changed %d rows", id, n)
		}
		return nil
	})
}

// KeyCount counts every key, revoked ones included.
func (s *Store) KeyCount(ctx context.Context) (int, error) {
	var n int
	if err := s.reader(qKeyCount).QueryRowContext(ctx).Scan(&n); err != nil {
		return 0, interpretError(err)
	}
	return n, nil
}
