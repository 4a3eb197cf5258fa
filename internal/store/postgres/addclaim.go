package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// TaskAddClaim adds tasks and claims p's queue in one transaction of two
// round trips (store.AddClaimer). The first carries BEGIN, the setting,
// the claim's locks, the read of its room (sqlClaimRoom: how many tasks its
// limits let it take) and its locking read of the queue's earlier due
// tasks. The claim then takes the first of those and of the tasks added,
// up to the room, in runAt order (store.AddClaimPicks), as TaskClaim would
// had the tasks been added first; the second round trip carries the UPDATE
// of the earlier tasks it took (claimSet's), the insert of the tasks added
// (oneQueueInsert), those it took already RUNNING, the bucket and the
// COMMIT. A task added to an idle queue then waits for one commit's WAL
// flush before its delivery, not two, and is written once, not inserted
// and then updated by a claim: one row version and its index entries
// fewer. The claim of a single task's add does not wait for its locks:
// when another claim holds one (another node's add, or a dispatcher's
// pass), it takes nothing and the task is only added (sqlClaimTryLock); a
// batch's waits for them, as every other claim does.
//
// Only a batch of unnamed tasks, all of p's queue, is claimed with; any
// other is added by TaskAdd alone, as is a batch whose transaction was not
// committed (a statement refused, such as the insert meeting a taken id, or
// task.Claim refusing a task): the transaction is rolled back first, so the
// tasks are added once. Any other error once the COMMIT was sent is
// returned: whether it committed is not known, as for any add whose answer
// is lost.
func (s *Store) TaskAddClaim(ctx context.Context, tasks []*task.Task, p *store.ClaimParams) ([]store.AddResult, []*task.Task, error) {
	if !store.AddClaimable(tasks, p) {
		res, err := s.TaskAdd(ctx, tasks)
		return res, nil, err
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, nil, interpretError(err)
	}
	defer conn.Release()
	b := &pgx.Batch{}
	b.Queue(`BEGIN`)
	b.Queue(`SET LOCAL plan_cache_mode = force_generic_plan`) // the insert's and the claim's reason
	// A single task's add tries the claim's locks, a batch's waits for them
	// (sqlClaimTryLock says why).
	locks := queueClaimWith(b, p, true, len(tasks) == 1)
	var room int
	due, ctids, tokens, err := func() ([]*task.Task, []pgtype.TID, float64, error) {
		br := conn.SendBatch(ctx, b)
		defer br.Close()
		for range 2 + locks {
			if _, err := br.Exec(); err != nil {
				return nil, nil, 0, interpretError(err)
			}
		}
		if err := br.QueryRow().Scan(&room); err != nil {
			return nil, nil, 0, interpretError(err)
		}
		return claimRows(br, p)
	}()
	var (
		claimed []*task.Task
		taken   map[int]*task.Task // the tasks added that the claim took, by position
		out     = make([]inserted, len(tasks))
	)
	if err == nil {
		claimed, taken, err = addClaimCommit(ctx, conn, p, tasks, due, ctids, tokens, room, out)
		var pe *pgconn.PgError
		if err != nil && !errors.Is(err, errRolledBack) && !errors.As(err, &pe) && !errors.Is(err, errClaimRefused) {
			abort(ctx, conn)
			return nil, nil, err // sent with the COMMIT: whether it committed is not known
		}
	}
	if err != nil {
		// Not committed: a statement was refused (a taken id), the claim
		// refused a task, or the COMMIT was answered ROLLBACK.
		abort(ctx, conn)
		res, err := s.TaskAdd(ctx, tasks)
		return res, nil, err
	}
	res := make([]store.AddResult, len(tasks))
	for i, t := range tasks {
		switch c := taken[i]; {
		case !out[i].stored:
			res[i].Err = queueMissing(t)
		case c != nil:
			res[i].Task = store.AsClaimed(t, c)
		default:
			res[i].Task = t
		}
	}
	return res, claimed, nil
}

// errClaimRefused: task.Claim refused a task an add's claim picked, or a
// task's row could not be encoded, before anything of the second round
// trip was sent.
var errClaimRefused = errors.New("postgres: the add's claim refused a task")

// addClaimCommit is TaskAddClaim's second round trip: it picks what the
// claim takes, queues the UPDATE of the earlier due tasks taken, the
// insert of tasks (those taken RUNNING), the bucket and the COMMIT, and
// reads their results into out (whether each task was stored). It returns
// the tasks claimed, in claim order, and the tasks added that were taken,
// as claimed, by position.
func addClaimCommit(ctx context.Context, conn *pgxpool.Conn, p *store.ClaimParams, tasks, due []*task.Task, ctids []pgtype.TID,
	tokens float64, room int, out []inserted) ([]*task.Task, map[int]*task.Task, error) {
	q := p.Queue
	picks := store.AddClaimPicks(p, due, tasks, room)
	var (
		claimed  []*task.Task
		dueTaken []*task.Task
		dueCtids []pgtype.TID
		taken    = make(map[int]*task.Task, len(picks))
	)
	for _, pk := range picks {
		if pk.Due {
			dueTaken, dueCtids = append(dueTaken, due[pk.I]), append(dueCtids, ctids[pk.I])
			claimed = append(claimed, due[pk.I])
			continue
		}
		c := *tasks[pk.I]
		if err := c.Claim(q, p.Now, p.NewLeaseID(), p.LeaseMs); err != nil {
			return nil, nil, errClaimRefused
		}
		taken[pk.I] = &c
		claimed = append(claimed, &c)
	}
	b := &pgx.Batch{}
	if len(dueTaken) > 0 {
		if err := queueClaimSet(b, p, dueTaken, dueCtids); err != nil {
			return nil, nil, errClaimRefused
		}
	}
	var r taskRows
	for i, t := range tasks {
		if c := taken[i]; c != nil {
			t = c
		}
		if err := r.add(t); err != nil {
			return nil, nil, errClaimRefused
		}
	}
	sql, args := r.oneQueueInsert(q.InstanceID, q.Name)
	b.Queue(sql, args...)
	bucket := p.Rate > 0 && len(picks) > 0
	if bucket {
		b.Queue(sqlBucketSet, q.InstanceID, q.Name, tokens-float64(len(claimed)), p.Now)
	}
	b.Queue(`COMMIT`)
	br := conn.SendBatch(ctx, b)
	defer br.Close()
	if len(dueTaken) > 0 {
		tag, err := br.Exec()
		if err != nil {
			return nil, nil, err
		}
		if tag.RowsAffected() != int64(len(dueTaken)) {
			return nil, nil, task.Errorf(task.CodeInternal, "store: claimed %d tasks but wrote %d", len(dueTaken), tag.RowsAffected())
		}
	}
	tag, err := br.Exec()
	if err != nil {
		return nil, nil, err
	}
	if err := markOneQueue(tag.RowsAffected(), out); err != nil {
		return nil, nil, err
	}
	if !out[0].stored {
		// The queue is gone: nothing was inserted, and none of its tasks
		// was due.
		claimed, taken = nil, nil
	}
	if bucket {
		if _, err := br.Exec(); err != nil {
			return nil, nil, err
		}
	}
	if tag, err = br.Exec(); err != nil {
		return nil, nil, err
	}
	if tag.String() != "COMMIT" {
		return nil, nil, errRolledBack
	}
	if err := br.Close(); err != nil {
		return nil, nil, interpretError(err)
	}
	if claimed == nil {
		claimed = []*task.Task{}
	}
	return claimed, taken, nil
}
