package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/errandhq/errand/internal/store"
)

// TriggerHookAdd adds a hook call's task and counts it on its rule, in one
// transaction.
func (s *Store) TriggerHookAdd(ctx context.Context, p *store.TriggerHookAddParams) (*store.TriggerFireResult, error) {
	res := &store.TriggerFireResult{}
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		*res = store.TriggerFireResult{Applied: true}
		return s.addForRule(ctx, tx, p.Ref, p.Task, "", p.Now, res)
	})
	return res, err
}
