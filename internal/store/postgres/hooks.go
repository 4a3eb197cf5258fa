package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/errandhq/errand/internal/store"
)

// TriggerHookAdd adds hook calls' tasks and counts them on their rules, in
// one transaction: one insert of the tasks and one update of each rule
// (addForRules).
func (s *Store) TriggerHookAdd(ctx context.Context, ps []*store.TriggerHookAddParams) ([]store.TriggerFireResult, error) {
	res := make([]store.TriggerFireResult, len(ps))
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		adds := make([]ruleAdd, len(ps))
		for i, p := range ps {
			res[i] = store.TriggerFireResult{Applied: true}
			adds[i] = ruleAdd{ref: p.Ref, task: p.Task, now: p.Now, res: &res[i]}
		}
		return addForRules(ctx, tx, adds)
	})
	return res, err
}
