package engine

import (
	"context"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// ListFilter selects one page of a queue's tasks: the API's list filters.
// The order follows the state (see store.ListParams).
type ListFilter struct {
	State task.State // "" for every state
	// Pull narrows RUNNING to leased (true) or running (false); nil for both.
	Pull   *bool
	Name   string // exact name, "" for any
	Limit  int    // 1–MaxListLimit
	Cursor string // opaque, from the previous page; "" for the first
}

// DefaultListLimit and MaxListLimit are a page's size when none is asked
// for, and the largest that may be.
const (
	DefaultListLimit = 50
	MaxListLimit     = 200
)

// ListPage is one page of tasks; Cursor is "" on the last page.
type ListPage = store.ListPage

// TaskList returns one page of a queue's tasks, without payloads.
func (e *Engine) TaskList(ctx context.Context, ref QueueRef, f ListFilter) (*ListPage, error) {
	if f.Limit < 1 || f.Limit > MaxListLimit {
		return nil, task.FieldErrorf(task.CodeInvalidArgument, "limit", "must be an integer 1–%d", MaxListLimit)
	}
	if f.Name != "" {
		if err := task.ValidateName(f.Name, "name"); err != nil {
			return nil, err
		}
	}
	q, err := e.queueGet(ctx, ref)
	if err != nil {
		return nil, err
	}
	page, err := e.store.TaskList(ctx, &store.ListParams{
		InstanceID: q.InstanceID, Queue: q.Name,
		State: f.State, Pull: f.Pull, Name: f.Name, Limit: f.Limit, Cursor: f.Cursor,
	})
	if err != nil {
		return nil, err
	}
	e.noteUnserved(ctx, page.Tasks, func() *task.Queue { return q })
	return page, nil
}

// Ping reports whether the store answers now (for /healthz): nil, or an
// UNAVAILABLE error.
func (e *Engine) Ping(ctx context.Context) error { return e.store.Ping(ctx) }

// RateLimit reads an instance's rateLimit setting (API calls per second, 0
// for none) and the instance's id. Unlike Instance it never creates the
// instance in dev mode: a missing one is NOT_FOUND, and the call it was
// asked for answers for itself.
func (e *Engine) RateLimit(ctx context.Context, org, instance string) (float64, string, error) {
	inst, err := e.store.InstanceGet(ctx, store.InstanceRef{Org: org, Name: instance})
	if err != nil {
		return 0, "", err
	}
	return inst.Settings.RateLimit, inst.ID, nil
}

// APICallGrant takes up to want calls of an instance's rateLimit (limit
// calls a second, in a bucket of burst) from its bucket in the store, which
// every node sharing the store pays from (store.APIRateStore), at the
// engine's clock (the database's on a shared store). It returns how many
// it took and what the bucket holds after.
func (e *Engine) APICallGrant(ctx context.Context, instanceID string, want int, limit float64, burst int) (int, float64, error) {
	g, err := e.store.APIRateTake(ctx, &store.APIRateParams{
		InstanceID: instanceID, Want: want, Rate: limit, Burst: burst, Now: e.clock.Now().UnixMilli(),
	})
	return g.Took, g.Left, err
}
