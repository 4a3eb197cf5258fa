package engine_test

import (
	"github.com/errandhq/errand/internal/id"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

func claimAll(q *task.Queue, now int64) *store.ClaimParams {
	return &store.ClaimParams{Queue: q, Now: now, Limit: 100, LeaseMs: 60_000, NewLeaseID: id.Lease}
}
