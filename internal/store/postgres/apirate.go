package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/errandhq/errand/internal/store"
)

var (
	// sqlAPIRateRow makes an instance's bucket row on its first grant, as
	// never used (full): concurrent first grants of several nodes wait on
	// the key for the first one's row instead of each starting full. The
	// row's foreign key (migration 0013) refuses it for an instance that
	// is gone, and holds the instance's row against a delete until the
	// grant commits; the delete then removes the row with the instance.
	sqlAPIRateRow = `INSERT INTO api_rate (instance_id, tokens, at) VALUES ($1, -1, 0) ON CONFLICT (instance_id) DO NOTHING`
	sqlAPIRateGet = `SELECT tokens, at FROM api_rate WHERE instance_id = $1 FOR UPDATE`
	sqlAPIRateSet = `UPDATE api_rate SET tokens = $2, at = $3 WHERE instance_id = $1`
)

// APIRateTake takes up to p.Want calls from the instance's bucket
// (store.TakeCalls) in one transaction of two round trips: BEGIN, the row
// (made if missing) and its lock and read travel together; the write and
// the COMMIT follow. The commit does not wait for its WAL flush: a grant
// lost in a crash only gives its calls back.
func (s *Store) APIRateTake(ctx context.Context, p *store.APIRateParams) (store.APIRateTaken, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return store.APIRateTaken{}, interpretError(err)
	}
	defer conn.Release()
	b := &pgx.Batch{}
	b.Queue(`BEGIN`)
	b.Queue(`SET LOCAL synchronous_commit = off`)
	b.Queue(sqlAPIRateRow, p.InstanceID)
	b.Queue(sqlAPIRateGet, p.InstanceID)
	var tokens float64
	var at int64
	err = func() error {
		br := conn.SendBatch(ctx, b)
		defer br.Close()
		for range 3 {
			if _, err := br.Exec(); err != nil {
				return err
			}
		}
		if err := br.QueryRow().Scan(&tokens, &at); err != nil {
			return err
		}
		return br.Close()
	}()
	if err != nil {
		abort(ctx, conn)
		return store.APIRateTaken{}, interpretError(err)
	}
	g, t, when := store.TakeCalls(tokens, at, p)
	b = &pgx.Batch{}
	b.Queue(sqlAPIRateSet, p.InstanceID, t, when)
	b.Queue(`COMMIT`)
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		abort(ctx, conn)
		return store.APIRateTaken{}, interpretError(err)
	}
	return g, nil
}
