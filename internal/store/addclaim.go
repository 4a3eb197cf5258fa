package store

import (
	"slices"

	"github.com/errandhq/errand/internal/task"
)

// AddClaimable reports whether a TaskAddClaim of tasks claims with them:
// at least one task, each unnamed, of a distinct id and of p's queue, and
// a claim to make (a limit above 0, a queue and lease ids). A backend may
// bound the batch further.
func AddClaimable(tasks []*task.Task, p *ClaimParams) bool {
	if len(tasks) == 0 || p.Limit <= 0 || p.Queue == nil || p.NewLeaseID == nil {
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

// AsClaimed is a copy of t, as added, in the state its claim c left it
// (committed with the add): the add's result then says RUNNING, and the
// dispatcher may change c itself while the result is read.
func AsClaimed(t, c *task.Task) *task.Task {
	cp := *t
	cp.State, cp.Attempt, cp.MaxAttempts = c.State, c.Attempt, c.MaxAttempts
	cp.StartedAt, cp.DeadlineAt, cp.LeaseID, cp.LeaseExpiresAt = c.StartedAt, c.DeadlineAt, c.LeaseID, c.LeaseExpiresAt
	return &cp
}

// AddPick is one task an add's claim takes (AddClaimPicks): Due[I] of the
// queue's earlier due tasks, or else Added[I] of the tasks added.
type AddPick struct {
	Due bool
	I   int
}

// AddClaimPicks is the claim of an add (AddClaimer): of due, the queue's
// earlier due tasks in claim order (task.ClaimOrder), and added, the tasks
// the add stores (due now), the first room in that order, trimmed to p's
// function slots as Keep trims a claim's. It returns them in that order.
func AddClaimPicks(p *ClaimParams, due, added []*task.Task, room int) []AddPick {
	room = max(room, 0)
	order := make([]int, len(added))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return task.ClaimOrder(added[a], added[b]) })
	picks := make([]AddPick, 0, min(room, len(due)+len(added)))
	tasks := make([]*task.Task, 0, cap(picks))
	for i, j := 0, 0; len(picks) < room && (i < len(due) || j < len(order)); {
		if j == len(order) || i < len(due) && task.ClaimOrder(due[i], added[order[j]]) < 0 {
			picks, tasks = append(picks, AddPick{Due: true, I: i}), append(tasks, due[i])
			i++
		} else {
			picks, tasks = append(picks, AddPick{I: order[j]}), append(tasks, added[order[j]])
			j++
		}
	}
	_, picks = KeepWith(p, tasks, picks)
	return picks
}
