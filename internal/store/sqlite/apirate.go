package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

var (
	qAPIRateGet = define(onWriter, `SELECT tokens, at FROM api_rate WHERE instance_id = ?`)
	// qAPIRateSet writes the bucket, only while its instance exists: the
	// writer's transactions run one at a time, so a delete comes wholly
	// before the grant (no row is written) or after it (the delete removes
	// the row).
	qAPIRateSet = define(onWriter, `INSERT INTO api_rate (instance_id, tokens, at)
		SELECT ?1, ?2, ?3 WHERE EXISTS (SELECT 1 FROM instances WHERE id = ?1)
		ON CONFLICT (instance_id) DO UPDATE SET tokens = excluded.tokens, at = excluded.at`)
)

// APIRateTake takes up to p.Want calls from the instance's bucket in one
// write transaction (store.TakeCalls).
func (s *Store) APIRateTake(ctx context.Context, p *store.APIRateParams) (store.APIRateTaken, error) {
	var g store.APIRateTaken
	err := s.write(ctx, func(w *wtx) error {
		tokens, at := -1.0, int64(0) // a bucket never used
		if err := w.queryRow(qAPIRateGet, p.InstanceID).Scan(&tokens, &at); err != nil && !errors.Is(err, sql.ErrNoRows) {
			return interpretError(err)
		}
		var t float64
		var when int64
		g, t, when = store.TakeCalls(tokens, at, p)
		res, err := w.exec(qAPIRateSet, p.InstanceID, t, when)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return interpretError(err)
		} else if n == 0 {
			g = store.APIRateTaken{}
			return task.Errorf(task.CodeNotFound, "the instance does not exist")
		}
		return nil
	})
	return g, err
}
