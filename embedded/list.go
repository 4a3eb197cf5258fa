package embedded

import (
	"context"

	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/task"
)

// ListOptions select a page of a queue's tasks (the v1 API's list
// filters).
type ListOptions struct {
	// State is a v1 state name (scheduled, running, leased, retrying,
	// succeeded, failed, cancelled), "" for every state.
	State string
	Name  string // exact name, "" for any
	// Limit is the page's size, 1–200; 0 is 50.
	Limit int
	// Cursor is the previous page's TaskPage.Cursor, "" for the first.
	Cursor string
}

// TaskPage is one page of a queue's tasks; Cursor is "" on the last.
type TaskPage struct {
	Tasks  []*Task // without their payloads, params and results: Get has them
	Cursor string
}

// List returns one page of a queue's tasks (River's JobList). Without a
// State the newest come first; scheduled, running, leased and retrying
// tasks come soonest due first, finished ones latest first. Pages are
// keyset: a task added or removed meanwhile moves no other task from one
// page to the next.
func (e *Engine) List(ctx context.Context, instance, queue string, o ListOptions) (*TaskPage, error) {
	if err := e.refuse(); err != nil {
		return nil, err
	}
	f := engine.ListFilter{Name: o.Name, Limit: o.Limit, Cursor: o.Cursor}
	if f.Limit == 0 {
		f.Limit = engine.DefaultListLimit
	}
	if o.State != "" {
		s, pull, err := task.ParseV1StateArg(o.State, "state")
		if err != nil {
			return nil, e.fail(err)
		}
		f.State, f.Pull = s, pull
	}
	page, err := e.eng.TaskList(ctx, engine.QueueRef{Org: e.org, Instance: instance, Queue: queue}, f)
	if err != nil {
		return nil, e.fail(err)
	}
	out := &TaskPage{Tasks: make([]*Task, len(page.Tasks)), Cursor: page.Cursor}
	for i, t := range page.Tasks {
		out.Tasks[i] = publicTask(t)
	}
	return out, nil
}
