package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// TaskAddClaim adds tasks and claims p's queue in one transaction of two
// round trips (store.AddClaimer): BEGIN, the insert of the tasks
// (qTaskInsertOneQueue) and the claim's locks and locking read travel
// together, then the claim's UPDATE with the COMMIT (claimBatch,
// claimCommit), as in TaskClaim. An idle queue's task then waits for one
// commit's WAL flush before its delivery, not two: after a 20 ms idle
// pause an add and its claim took 1.52 ms p50 in one transaction against
// 1.96 in two (docs/benchmarks-history.md, the thirteenth session).
//
// Only a small batch of unnamed tasks, all of p's queue, is claimed with;
// any other is added by TaskAdd alone, as is a batch whose insert meets a
// taken id or whose transaction was not committed (the first round trip
// failed, task.Claim refused a task, the COMMIT was answered ROLLBACK):
// the transaction is rolled back first, so the tasks are added once. Any
// other error after the COMMIT was sent is returned: whether it committed
// is not known, as for any add whose answer is lost.
func (s *Store) TaskAddClaim(ctx context.Context, tasks []*task.Task, p *store.ClaimParams) ([]store.AddResult, []*task.Task, error) {
	if !addClaimable(tasks, p) {
		res, err := s.TaskAdd(ctx, tasks)
		return res, nil, err
	}
	var r taskRows
	for _, t := range tasks {
		if err := r.add(t); err != nil {
			return nil, nil, err
		}
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, nil, interpretError(err)
	}
	defer conn.Release()
	b := &pgx.Batch{}
	b.Queue(`BEGIN`)
	b.Queue(`SET LOCAL plan_cache_mode = force_generic_plan`) // the insert's and the claim's reason
	b.Queue(qTaskInsertOneQueue, append(r.args(), p.Queue.InstanceID, p.Queue.Name)...)
	locks := queueClaim(b, p)
	out := make([]inserted, len(tasks))
	br := conn.SendBatch(ctx, b)
	claimed, ctids, tokens, err := func() ([]*task.Task, []pgtype.TID, float64, error) {
		for range 2 {
			if _, err := br.Exec(); err != nil {
				br.Close()
				return nil, nil, 0, interpretError(err)
			}
		}
		tag, err := br.Exec()
		if err != nil {
			br.Close()
			return nil, nil, 0, insertError(err)
		}
		if err := markOneQueue(tag.RowsAffected(), out); err != nil {
			br.Close()
			return nil, nil, 0, err
		}
		return claimDue(br, p, locks)
	}()
	var second *pgx.Batch
	if err == nil {
		second, claimed, err = claimBatch(p, claimed, ctids, tokens)
	}
	if err == nil {
		err = claimCommit(conn.SendBatch(ctx, second), len(claimed), p.Rate > 0)
		if err != nil && !errors.Is(err, errRolledBack) {
			abort(ctx, conn)
			return nil, nil, err // sent with the COMMIT: whether it committed is not known
		}
	}
	if err != nil {
		// Not committed: the first round trip failed (a taken id), or the
		// claim refused a task, or the COMMIT was answered ROLLBACK.
		abort(ctx, conn)
		res, err := s.TaskAdd(ctx, tasks)
		return res, nil, err
	}
	byID := make(map[string]*task.Task, len(claimed))
	for _, c := range claimed {
		byID[c.ID] = c
	}
	res := make([]store.AddResult, len(tasks))
	for i, t := range tasks {
		switch c := byID[t.ID]; {
		case c != nil:
			res[i].Task = asClaimed(t, c)
		case out[i].stored:
			res[i].Task = t
		default:
			res[i].Err = queueMissing(t)
		}
	}
	return res, claimed, nil
}

// addClaimable reports whether TaskAddClaim claims with tasks: fewer than
// copyMinBatch, unnamed, of distinct ids, all of p's queue, with a claim
// to make.
func addClaimable(tasks []*task.Task, p *store.ClaimParams) bool {
	if len(tasks) == 0 || len(tasks) >= copyMinBatch || p.Limit <= 0 || p.Queue == nil || p.NewLeaseID == nil {
		return false
	}
	ids := make(map[string]bool, len(tasks))
	for _, t := range tasks {
		if t.Name != "" || ids[t.ID] || t.InstanceID != p.Queue.InstanceID || t.Queue != p.Queue.Name {
			return false
		}
		ids[t.ID] = true
	}
	return true
}

// asClaimed is a copy of t, as added, in the state its claim c left it
// (committed with the add): the add's result then says RUNNING, and the
// dispatcher may change c itself while the result is read.
func asClaimed(t, c *task.Task) *task.Task {
	cp := *t
	cp.State, cp.Attempt, cp.MaxAttempts = c.State, c.Attempt, c.MaxAttempts
	cp.StartedAt, cp.DeadlineAt, cp.LeaseID, cp.LeaseExpiresAt = c.StartedAt, c.DeadlineAt, c.LeaseID, c.LeaseExpiresAt
	return &cp
}
