package sqlite

import (
	"context"

	"github.com/errandhq/errand/internal/store"
)

// TriggerHookAdd adds hook calls' tasks and counts them on their rules, in
// one transaction.
func (s *Store) TriggerHookAdd(ctx context.Context, ps []*store.TriggerHookAddParams) ([]store.TriggerFireResult, error) {
	res := make([]store.TriggerFireResult, len(ps))
	err := s.write(ctx, func(w *wtx) error {
		for i, p := range ps {
			res[i] = store.TriggerFireResult{Applied: true}
			if err := w.addForRule(p.Ref, p.Task, "", p.Now, &res[i]); err != nil {
				return err
			}
		}
		return nil
	})
	return res, err
}
