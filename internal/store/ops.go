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
}

// TaskPageParams selects one page of an instance's tasks.
type TaskPageParams struct {
	InstanceID string
	Limit      int // 1–200
	Offset     int // ≥ 0
}

// TaskDeleteParams names the tasks to remove.
type TaskDeleteParams struct {
	InstanceID string
	IDs        []string
	States     []task.State // must not be empty
}
