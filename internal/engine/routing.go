package engine

import (
	"github.com/errandhq/errand/internal/deliver"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// slotView is one claim's view of the function slots free on this node
// (deliver.Router): read once per instance, then lessened by what the
// claim took, whose slots it takes in the router (Reserver) at once, since
// the deliveries take them only a moment later. It is made and used under
// the dispatcher's slotMu. A deliverer that routes no function (no Router)
// leaves claims unfiltered.
type slotView struct {
	r      deliver.Router
	byInst map[string]map[string]int
}

func newSlotView(d deliver.Deliverer) *slotView {
	r, _ := d.(deliver.Router)
	return &slotView{r: r, byInst: map[string]map[string]int{}}
}

// free is ClaimParams.Functions for a queue of instanceID (nil: no filter).
func (v *slotView) free(instanceID string) map[string]int {
	if v.r == nil {
		return nil
	}
	m, ok := v.byInst[instanceID]
	if !ok {
		m = v.r.Free(instanceID)
		v.byInst[instanceID] = m
	}
	return m
}

// took lessens the view by the function tasks a claim of q took, and
// takes their slots in the router (deliver.Reserver) before the next pass
// reads it again.
func (v *slotView) took(q *task.Queue, ts []*task.Task) {
	m := v.byInst[q.InstanceID]
	if m == nil {
		return
	}
	res, _ := v.r.(deliver.Reserver)
	for _, t := range ts {
		fn := store.FunctionOf(t, q)
		if fn == "" {
			continue
		}
		if m[fn] > 0 {
			m[fn]--
		}
		if res != nil {
			res.Reserve(t, fn)
		}
	}
}
