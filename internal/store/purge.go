package store

import (
	"context"
	"slices"

	"github.com/errandhq/errand/internal/task"
)

// FinishPurged is a store's TaskFinish around its fenced writes (finish)
// and its removal of purged tasks (remove). The entries whose fence is a
// purged lease (the rescuer's, ending an attempt a purge marked) are not
// written; each of them, and each entry finish answered LEASE_LOST, is
// then removed if its task is still RUNNING under the purged form of the
// fence, and answered task.ErrPurged. remove reports, per ref, whether it
// removed the task.
//
// A removal that fails is not the write's failure: the writes that
// applied are committed, the purged tasks stay until a later answer or
// the rescuer removes them, and the entries keep their LEASE_LOST.
func FinishPurged(ctx context.Context, ps []*FinishParams,
	finish func(context.Context, []*FinishParams) ([]error, error),
	remove func(context.Context, []LeaseRef) ([]bool, error),
) ([]error, error) {
	purged := func(p *FinishParams) bool { return task.IsPurgedLease(p.LeaseID) }
	var res []error
	if !slices.ContainsFunc(ps, purged) {
		var err error
		if res, err = finish(ctx, ps); err != nil {
			return nil, err
		}
	} else {
		res = make([]error, len(ps))
		var sent []*FinishParams
		var at []int
		for i, p := range ps {
			if purged(p) {
				res[i] = task.Errorf(task.CodeLeaseLost, "the lease is no longer held: the task was purged and its attempt has ended")
				continue
			}
			sent, at = append(sent, p), append(at, i)
		}
		got, err := finish(ctx, sent)
		if err != nil {
			return nil, err
		}
		for k, e := range got {
			res[at[k]] = e
		}
	}
	var refs []LeaseRef
	var at []int
	for i, p := range ps {
		if !task.IsCode(res[i], task.CodeLeaseLost) {
			continue
		}
		lease := p.LeaseID
		if !purged(p) {
			lease = task.PurgedLease(lease)
		}
		refs = append(refs, LeaseRef{InstanceID: p.Task.InstanceID, ID: p.Task.ID, LeaseID: lease})
		at = append(at, i)
	}
	if len(refs) == 0 {
		return res, nil
	}
	gone, err := remove(ctx, refs)
	if err != nil {
		return res, nil
	}
	for k, g := range gone {
		if g {
			res[at[k]] = task.ErrPurged
		}
	}
	return res, nil
}
