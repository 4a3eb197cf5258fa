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
				res[i] = store.AddResult{Err: queueMissing(t)}
			}
			return nil
		}
		var takeAdded map[int]*task.Task
		if claimed, takeAdded, err = w.claimIn(p, tasks); err != nil {
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
