package sqlite

import (
	"context"
	"errors"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// errAddTaken rolls back a TaskAddClaim whose insert met a taken id.
var errAddTaken = errors.New("sqlite: an id of the add is taken")

// TaskAddClaim adds tasks and claims p's queue in one write transaction
// (store.AddClaimer). The claim keeps TaskClaim's limits and order: the
// first p.Limit (and the caps') of the queue's due tasks in runAt order,
// ties by id, the queue's earlier due tasks and the ones added together;
// an earlier task it takes is written back as TaskClaim writes it, and a
// task added that it takes is inserted RUNNING. A task added to a queue
// with room is then written once before its delivery instead of twice
// (inserted, then rewritten by the dispatcher's claim), and is delivered
// without waiting for the dispatcher's pass.
//
// Tasks it does not claim with (not all of p's queue, named, of a
// repeated id) are added by TaskAdd alone, as is a batch whose insert
// meets a taken id: its transaction is rolled back first, so the tasks are
// added once, and then none is claimed.
func (s *Store) TaskAddClaim(ctx context.Context, tasks []*task.Task, p *store.ClaimParams) ([]store.AddResult, []*task.Task, error) {
	if !store.AddClaimable(tasks, p) {
		res, err := s.TaskAdd(ctx, tasks)
		return res, nil, err
	}
	q := p.Queue
	res := make([]store.AddResult, len(tasks))
	var claimed []*task.Task
	err := s.write(ctx, func(w *wtx) error {
		claimed = nil
		ok, err := w.queueExists(q.InstanceID, q.Name)
		if err != nil {
			return err
		}
		if !ok {
			for i, t := range tasks {
				res[i] = store.AddResult{Err: task.Errorf(task.CodeNotFound, "queue %q not found", t.Queue)}
			}
			return nil
		}
		limit, tokens, err := w.claimLimit(p)
		if err != nil {
			return err
		}
		var due []*task.Task
		var rids []int64
		if limit > 0 {
			rows, err := w.query(qClaimDue, append(append([]any{q.InstanceID, q.Name, p.Now}, routeArgs(p)...), limit)...)
			if err != nil {
				return err
			}
			if due, rids, err = scanClaimed(rows); err != nil {
				return err
			}
		}
		picks := store.AddClaimPicks(p, due, tasks, limit)
		takeAdded := make(map[int]*task.Task, len(picks))
		var dueTaken []*task.Task
		var dueRids []int64
		for _, pk := range picks {
			if pk.Due {
				t := due[pk.I]
				if err := t.Claim(q, p.Now, p.NewLeaseID(), p.LeaseMs); err != nil {
					return err
				}
				dueTaken, dueRids = append(dueTaken, t), append(dueRids, rids[pk.I])
				claimed = append(claimed, t)
				continue
			}
			c := *tasks[pk.I]
			if err := c.Claim(q, p.Now, p.NewLeaseID(), p.LeaseMs); err != nil {
				return err
			}
			takeAdded[pk.I] = &c
			claimed = append(claimed, &c)
		}
		if err := w.claimSet(dueTaken, dueRids); err != nil {
			return err
		}
		rows := make([]*task.Task, len(tasks))
		for i, t := range tasks {
			rows[i] = t
			if c := takeAdded[i]; c != nil {
				rows[i] = c
			}
		}
		stored, err := w.insertTasks(rows)
		if err != nil {
			return err
		}
		if len(stored) != len(rows) {
			return errAddTaken
		}
		for i, t := range tasks {
			res[i].Task = t
			if c := takeAdded[i]; c != nil {
				res[i].Task = store.AsClaimed(t, c)
			}
		}
		if p.Rate > 0 && len(claimed) > 0 {
			if _, err := w.exec(qBucketSet, tokens-float64(len(claimed)), p.Now, q.InstanceID, q.Name); err != nil {
				return err
			}
		}
		return nil
	})
	if errors.Is(err, errAddTaken) {
		res, err := s.TaskAdd(ctx, tasks)
		return res, nil, err
	}
	if err != nil {
		return nil, nil, err
	}
	if claimed == nil {
		claimed = []*task.Task{}
	}
	return res, claimed, nil
}
