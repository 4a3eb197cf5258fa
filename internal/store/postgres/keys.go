package postgres

import (
	"context"
	"encoding/json"

	"github.com/jackc/pgx/v5"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

const keyCols = `id, org, digest, prefix, grants, created_at, revoked_at`

const (
	qKeyInsert   = `INSERT INTO api_keys (` + keyCols + `) VALUES ($1, $2, $3, $4, $5, $6, $7)`
	qKeyByDigest = `SELECT ` + keyCols + ` FROM api_keys WHERE digest = $1`
	qKeyGet      = `SELECT ` + keyCols + ` FROM api_keys WHERE id = $1 AND org = $2`
	qKeyList     = `SELECT ` + keyCols + ` FROM api_keys WHERE org = $1 ORDER BY created_at, id`
	qKeyListAll  = `SELECT ` + keyCols + ` FROM api_keys ORDER BY created_at, id`
	// qKeyRevoke revokes an unrevoked key and counts the org's keys of
	// that id (0 or 1): a revoked key keeps its first time.
	qKeyRevoke = `WITH k AS (
		SELECT id, revoked_at FROM api_keys WHERE org = $1 AND id = $2 FOR UPDATE
	), u AS (
		UPDATE api_keys AS a SET revoked_at = $3 FROM k WHERE a.id = k.id AND k.revoked_at = 0
	)
	SELECT count(*) FROM k`
	qKeyCount = `SELECT count(*) FROM api_keys`
)

// grantJSON is a grant as the grants column stores it.
type grantJSON struct {
	Instance string `json:"instance"`
	Role     string `json:"role"`
}

func scanKey(row store.Scanner) (*store.APIKey, error) {
	k := &store.APIKey{}
	var grants []byte
	if err := row.Scan(&k.ID, &k.Org, &k.Digest, &k.Prefix, &grants, &k.CreatedAt, &k.RevokedAt); err != nil {
		return nil, interpretError(err)
	}
	var gs []grantJSON
	if err := json.Unmarshal(grants, &gs); err != nil {
		return nil, task.Errorf(task.CodeInternal, "store: key %s: bad grants: %v", k.ID, err)
	}
	for _, g := range gs {
		k.Grants = append(k.Grants, store.Grant{Instance: g.Instance, Role: g.Role})
	}
	return k, nil
}

// KeyCreate stores a new key. An id or a digest already stored is refused
// (INTERNAL: both are random).
func (s *Store) KeyCreate(ctx context.Context, k *store.APIKey) error {
	if len(k.Digest) != 32 {
		return task.Errorf(task.CodeInternal, "store: a key digest is 32 bytes (SHA-256), not %d", len(k.Digest))
	}
	gs := make([]grantJSON, 0, len(k.Grants))
	for _, g := range k.Grants {
		gs = append(gs, grantJSON(g))
	}
	grants, err := json.Marshal(gs)
	if err != nil {
		return task.Errorf(task.CodeInternal, "store: encode grants: %v", err)
	}
	_, err = s.pool.Exec(ctx, qKeyInsert, k.ID, k.Org, k.Digest, k.Prefix, string(grants), k.CreatedAt, k.RevokedAt)
	return interpretError(err)
}

// KeyByDigest finds a key, revoked or not, by the SHA-256 digest of its
// secret; task.ErrNotFound if none.
func (s *Store) KeyByDigest(ctx context.Context, digest []byte) (*store.APIKey, error) {
	return scanKey(s.pool.QueryRow(ctx, qKeyByDigest, digest))
}

// KeyGet finds org's key, revoked or not, by its id (a seek on the
// primary key); task.ErrNotFound if org has none of that id.
func (s *Store) KeyGet(ctx context.Context, ref store.KeyRef) (*store.APIKey, error) {
	return scanKey(s.pool.QueryRow(ctx, qKeyGet, ref.ID, ref.Org))
}

// KeyList lists an organization's keys, oldest first; org "" lists every
// organization's.
func (s *Store) KeyList(ctx context.Context, org string) ([]*store.APIKey, error) {
	var (
		rows pgx.Rows
		err  error
	)
	if org == "" {
		rows, err = s.pool.Query(ctx, qKeyListAll)
	} else {
		rows, err = s.pool.Query(ctx, qKeyList, org)
	}
	if err != nil {
		return nil, interpretError(err)
	}
	defer rows.Close()
	out, err := store.ScanAll(rows, scanKey)
	return out, interpretError(err)
}

// KeyRevoke marks a key of org revoked at now, in one statement;
// task.ErrNotFound if org has no such key. Revoking twice keeps the first
// time.
func (s *Store) KeyRevoke(ctx context.Context, ref store.KeyRef, now int64) error {
	org, id := ref.Org, ref.ID
	var n int
	if err := s.pool.QueryRow(ctx, qKeyRevoke, org, id, now).Scan(&n); err != nil {
		return interpretError(err)
	}
	if n == 0 {
		return task.ErrNotFound
	}
	return nil
}

// KeyCount counts every key, revoked ones included.
func (s *Store) KeyCount(ctx context.Context) (int, error) {
	var n int
	if err := s.pool.QueryRow(ctx, qKeyCount).Scan(&n); err != nil {
		return 0, interpretError(err)
	}
	return n, nil
}
