package store

import (
	"context"
	"math"

	"github.com/errandhq/errand/internal/task"
)

// OpsStore holds the store methods the operations API adds: a page of an
// instance's tasks, newest first (the operations instance's jobs), and the
// removal of chosen tasks (dead-letter purge).
type OpsStore interface {
	// TaskPage returns tasks of one instance, every queue, newest CreatedAt
	// first (ties by ID), after p.After when set, at most p.Limit, without
	// payloads; never nil.
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
	// InstanceSnapshot reads one instance whole as of one moment, in one
	// read transaction: p.Head gets the instance, its queues by name, its
	// rules oldest first and its pending chain events (the outbox of task
	// rules: a finished task's follow-up not added yet) oldest first, then
	// p.Task each of its tasks in id order, with payload, result and
	// attempts. Writes committed meanwhile are not seen. An error from
	// p.Head or p.Task ends the read and is returned as it is; NOT_FOUND
	// if the instance does not exist.
	InstanceSnapshot(ctx context.Context, p *SnapshotParams) error
}

// SnapshotParams names the instance InstanceSnapshot reads and what it
// hands what it reads to.
type SnapshotParams struct {
	Ref  InstanceRef
	Head func(*SnapshotHead) error
	Task func(*task.Task) error
}

// SnapshotHead is what InstanceSnapshot reads before the tasks.
type SnapshotHead struct {
	Instance *task.Instance
	Queues   []*task.Queue
	Rules    []*task.Trigger
	Events   []*TriggerEvent
}

// SnapshotPage is how many tasks InstanceSnapshot reads at a time: pages
// keyed by id, so that neither store holds more than a page of payloads
// and results, and a refusal from p.Task ends the read at once.
const SnapshotPage = 200

// SnapshotTasks hands each task of the pages read returns to each, asking
// read for the next SnapshotPage tasks after the last id it returned ("" at
// first) until a page comes back short.
func SnapshotTasks(read func(after string) ([]*task.Task, error), each func(*task.Task) error) error {
	after := ""
	for {
		page, err := read(after)
		if err != nil {
			return err
		}
		for _, t := range page {
			if err := each(t); err != nil {
				return err
			}
		}
		if len(page) < SnapshotPage {
			return nil
		}
		after = page[len(page)-1].ID
	}
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
	// After is the last task of the previous page (nil for the first): the
	// page holds the tasks after it in the order, so a task added or
	// removed meanwhile moves no other task from one page to the next.
	After *TaskPageKey
}

// TaskPageKey is a task's place in TaskPage's order.
type TaskPageKey struct {
	CreatedAt int64
	ID        string
}

// PageAfter returns where the page after one ending with t starts.
func PageAfter(t *task.Task) *TaskPageKey { return &TaskPageKey{CreatedAt: t.CreatedAt, ID: t.ID} }

// PageStart is the key TaskPage reads from when p.After is nil: before
// every task in the order.
func (p *TaskPageParams) PageStart() TaskPageKey {
	if p.After != nil {
		return *p.After
	}
	return TaskPageKey{CreatedAt: math.MaxInt64}
}

// TaskDeleteParams names the tasks to remove.
type TaskDeleteParams struct {
	InstanceID string
	IDs        []string
	States     []task.State // must not be empty
}
