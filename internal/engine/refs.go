package engine

import (
	"context"
	"encoding/json"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// The engine's operations name what they act on the way an API caller
// does, with a ref value: the organization (always the caller's, from its
// key), the instance's name and the queue's name or the task's id. What
// the operation does comes as a params value, so that no operation takes
// two strings in a row that could be swapped unseen; only the instance
// operations take (org, name).

// QueueRef names a queue of an organization's instance.
type QueueRef struct {
	Org      string
	Instance string // the instance's name
	Queue    string
}

// TaskRef names a task of an organization's instance.
type TaskRef struct {
	Org      string
	Instance string // the instance's name
	ID       string
}

// AckParams finishes a leased task: the lease it holds and an optional
// result (JSON).
type AckParams struct {
	LeaseID string
	Result  json.RawMessage
}

// ExtendParams lengthens a held lease to LeaseSeconds from now.
type ExtendParams struct {
	LeaseID      string
	LeaseSeconds int
}

// ReleaseParams gives a leased task back. With Error it is a failed attempt;
// without, the task goes back unharmed after DelaySeconds.
type ReleaseParams struct {
	LeaseID      string
	Error        string
	DelaySeconds float64
}

// notFound names the queue in a NOT_FOUND without a subject.
func (r QueueRef) notFound(err error) error {
	return task.NamedIn(err, "queue", r.Queue, r.Instance)
}

// notFound names the task in a NOT_FOUND without a subject.
func (r TaskRef) notFound(err error) error {
	return task.NamedIn(err, "task", r.ID, r.Instance)
}

// queueOf resolves ref's instance (creating it on first use in dev mode) and
// returns the store's ref of the queue.
func (e *Engine) queueOf(ctx context.Context, ref QueueRef) (store.QueueRef, error) {
	inst, err := e.Instance(ctx, ref.Org, ref.Instance)
	if err != nil {
		return store.QueueRef{}, err
	}
	return store.QueueRef{InstanceID: inst.ID, Name: ref.Queue}, nil
}

// queueGet reads ref's queue (NOT_FOUND when the instance or the queue does
// not exist).
func (e *Engine) queueGet(ctx context.Context, ref QueueRef) (*task.Queue, error) {
	sq, err := e.queueOf(ctx, ref)
	if err != nil {
		return nil, err
	}
	q, err := e.store.QueueGet(ctx, sq)
	return q, ref.notFound(err)
}

// taskOf resolves ref's instance (creating it on first use in dev mode) and
// returns the store's ref of the task.
func (e *Engine) taskOf(ctx context.Context, ref TaskRef) (store.TaskRef, error) {
	inst, err := e.Instance(ctx, ref.Org, ref.Instance)
	if err != nil {
		return store.TaskRef{}, err
	}
	return store.TaskRef{InstanceID: inst.ID, ID: ref.ID}, nil
}
