package sqlite

import (
	"context"

	"github.com/errandhq/errand/internal/store"
)

// TriggerHookAdd adds a hook call's task and counts it on its rule, in one
// transaction.
func (s *Store) TriggerHookAdd(ctx context.Context, p *store.TriggerHookAddParams) (*store.TriggerFireResult, error) {
	res := &store.TriggerFireResult{}
	err := s.write(ctx, func(w *wtx) error {
		*res = store.TriggerFireResult{Applied: true}
		return w.addForRule(p.Ref, p.Task, "", p.Now, res)
	})
	return res, err
}
