package engine

import (
	"github.com/errandhq/errand/internal/deliver"
	"github.com/errandhq/errand/internal/task"
)

// Free implements deliver.Router: the functions next routes (connected
// workers, in-process handlers) and the operations jobs, which every node
// runs in process. A next that routes nothing (a deliverer that is no
// Router) leaves claims unfiltered, as before routing.
func (r *opsRouter) Free(instanceID string) map[string]int {
	rr, ok := r.next.(deliver.Router)
	if !ok {
		return nil
	}
	out := rr.Free(instanceID)
	for fn, n := range r.fns.Free(instanceID) {
		out[fn] = n
	}
	return out
}

// Reserve implements deliver.Reserver for next's functions.
func (r *opsRouter) Reserve(t *task.Task, fn string) {
	if task.IsOpsKind(t.Queue) {
		return
	}
	if res, ok := r.next.(deliver.Reserver); ok {
		res.Reserve(t, fn)
	}
}
