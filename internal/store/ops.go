package store

import (
	"context"

	"github.com/errandhq/errand/internal/task"
)

// OpsStore holds the store methods the operations API adds: a page of an
// instance's tasks by offset (the operations instance's jobs), and the
// removal of chosen tasks (dead-letter purge).
type OpsStore interface {
	// TaskPage returns tasks of one instance, every queue, newest CreatedAt
	// first (ties by ID), skipping p.Offset and returning at most p.Limit,
	// without payloads; never nil.
	TaskPage(ctx context.Context, p *TaskPageParams) ([]*task.Task, error)
	// TaskDelete removes the tasks of one instance with the given ids that
	// are in one of p.States, in one transaction, and returns how many.
	// An id of no task of the instance, or of a task in another state, is
	// left alone (the caller counts it).
	TaskDelete(ctx context.Context, p *TaskDeleteParams) (int, error)
	// TaskUpdateMany is TaskUpdate for many tasks of one instance in one
	// transaction: each row is read under a write lock, p.Fn (a domain
	// method) applied, and stored if Fn returned nil. The result holds one
	// error per id, in order: nil, task.ErrNotFound for an id of no task of
	// the instance, or Fn's error unchanged (that row is not written).
	TaskUpdateMany(ctx context.Context, p *TaskUpdateManyParams) ([]error, error)
}

// TaskUpdateManyParams names the tasks to update and how.
type TaskUpdateManyParams struct {
	InstanceID string
	IDs        []string
	Fn         func(*task.Task) error
}

// TaskPageParams selects one page of an instance's tasks.
type TaskPageParams struct {
	InstanceID string
	Limit      int // 1–200; a value outside is clamped
	Offset     int // ≥ 0; a negative value reads from the start
}

// TaskDeleteParams names the tasks to remove.
type TaskDeleteParams struct {
	InstanceID string
	IDs        []string
	States     []task.State // must not be empty
}
