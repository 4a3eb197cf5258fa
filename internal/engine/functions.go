package engine

import (
	"cmp"
	"context"
	"slices"

	"github.com/errandhq/errand/errandapi"
)

// Functions lists the instance's functions: every function a connected
// worker (or an embedded program) serves now, with its slots summed over
// the nodes, and every function a queue of the instance targets, served
// or not (slots 0), with those queues. A function only a task names, and
// nothing serves, is not listed: the task's lastError says it waits.
func (e *Engine) Functions(ctx context.Context, org, instance string) ([]errandapi.Function, error) {
	inst, err := e.Instance(ctx, org, instance)
	if err != nil {
		return nil, err
	}
	served, err := e.served(ctx, inst.ID)
	if err != nil {
		return nil, err
	}
	qs, err := e.store.QueueList(ctx, inst.ID)
	if err != nil {
		return nil, err
	}
	byName := map[string]*errandapi.Function{}
	get := func(fn string) *errandapi.Function {
		f := byName[fn]
		if f == nil {
			f = &errandapi.Function{Function: fn, Slots: served[fn], Queues: []string{}}
			byName[fn] = f
		}
		return f
	}
	for fn := range served {
		get(fn)
	}
	for _, q := range qs {
		if q.Target != nil && q.Target.Function != "" {
			f := get(q.Target.Function)
			f.Queues = append(f.Queues, q.Name)
		}
	}
	out := make([]errandapi.Function, 0, len(byName))
	for _, f := range byName {
		slices.Sort(f.Queues)
		out = append(out, *f)
	}
	slices.SortFunc(out, func(a, b errandapi.Function) int { return cmp.Compare(a.Function, b.Function) })
	return out, nil
}
