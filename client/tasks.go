package client

import (
	"context"
	"errors"
	"iter"
	"net/url"
	"strconv"
	"time"

	"github.com/errandhq/errand/errandapi"
)

// AddTasks adds 1–100 tasks to a queue in one call and returns one result
// per task, in order. A task that is invalid refuses the whole call (the
// error; nothing is added); a name that is taken refuses only its task
// (its result: AddResult.Err() is a TASK_EXISTS *Error with the existing
// task's id). When no task was added the results come with an error too:
// the first refusal, as the server's 409.
//
// The call is retried after a connection error or a 503 only when every
// task has a name (the server dedupes by name; a TASK_EXISTS after such a
// retry may be this call's own task, its id is in the result). Without
// names it is sent again only when the server certainly never saw it.
func (c *Client) AddTasks(ctx context.Context, instance, queue string, tasks ...errandapi.NewTask) ([]errandapi.AddResult, error) {
	named := len(tasks) > 0
	for _, t := range tasks {
		named = named && t.Name != ""
	}
	var out errandapi.AddResponse
	err := c.do(ctx, call{method: "POST", path: []string{"v1", "tasks", instance, "queues", queue, "tasks"},
		body: errandapi.AddRequest{Tasks: tasks}, out: &out, repeatable: named, conflictOut: true})
	var e *Error
	if errors.As(err, &e) && len(out.Tasks) > 0 {
		for i := range out.Tasks {
			if !out.Tasks[i].OK {
				e.ID = out.Tasks[i].ID
				break
			}
		}
	}
	return out.Tasks, err
}

// AddTask adds one task. A refusal, TASK_EXISTS included, is the error;
// for TASK_EXISTS, Error.ID is the existing task's id.
func (c *Client) AddTask(ctx context.Context, instance, queue string, t errandapi.NewTask) (*errandapi.AddResult, error) {
	res, err := c.AddTasks(ctx, instance, queue, t)
	if err != nil {
		return nil, err
	}
	if len(res) != 1 {
		return nil, errandapi.NewError(errandapi.CodeInternal, "the server answered "+strconv.Itoa(len(res))+" results for one task")
	}
	return &res[0], res[0].Err()
}

// ListOptions select a page of a queue's tasks. Zero values are left out:
// every state, any name, 50 tasks, the first page.
type ListOptions struct {
	State  errandapi.State
	Name   string
	Limit  int    // 1–200
	Cursor string // the previous page's cursor
}

// ListTasks returns one page of a queue's tasks, without payloads; its
// Cursor is nil on the last page.
func (c *Client) ListTasks(ctx context.Context, instance, queue string, o ListOptions) (*errandapi.TaskPage, error) {
	q := url.Values{}
	if o.State != "" {
		q.Set("state", string(o.State))
	}
	if o.Name != "" {
		q.Set("name", o.Name)
	}
	if o.Limit != 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	if o.Cursor != "" {
		q.Set("cursor", o.Cursor)
	}
	var out errandapi.TaskPage
	err := c.do(ctx, call{method: "GET", path: []string{"v1", "tasks", instance, "queues", queue, "tasks"}, query: q,
		out: &out, repeatable: true})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// Tasks iterates over every task of a queue that o selects, page after
// page (o.Limit tasks a page). It stops at the first error, which it
// yields.
func (c *Client) Tasks(ctx context.Context, instance, queue string, o ListOptions) iter.Seq2[*errandapi.Task, error] {
	return func(yield func(*errandapi.Task, error) bool) {
		for {
			page, err := c.ListTasks(ctx, instance, queue, o)
			if err != nil {
				yield(nil, err)
				return
			}
			for i := range page.Tasks {
				if !yield(&page.Tasks[i], nil) {
					return
				}
			}
			if page.Cursor == nil {
				return
			}
			o.Cursor = *page.Cursor
		}
	}
}

// GetTask returns one task with its payload, result and every attempt.
func (c *Client) GetTask(ctx context.Context, instance, id string) (*errandapi.Task, error) {
	return c.taskCall(ctx, call{method: "GET", path: []string{"v1", "tasks", instance, "tasks", id}, repeatable: true})
}

// WaitTask returns the task once it has ended (succeeded, failed or
// cancelled: State.Ended), holding calls of up to 30 s each on the node
// (GET with waitSeconds) for as long as ctx allows. When ctx ends first it
// returns the task as last read (nil if none was) and ctx's error.
func (c *Client) WaitTask(ctx context.Context, instance, id string) (*errandapi.Task, error) {
	var last *errandapi.Task
	for {
		// Whole seconds that end before ctx does, so the node answers the
		// task as it is before ctx cuts the call.
		wait := maxTaskWait
		if d, ok := ctx.Deadline(); ok {
			wait = min(wait, max(time.Second, time.Until(d).Truncate(time.Second)))
		}
		t, err := c.GetTaskWait(ctx, instance, id, wait)
		if err != nil {
			if ctx.Err() != nil {
				return last, ctx.Err()
			}
			return nil, err
		}
		if last = t; t.State.Ended() {
			return t, nil
		}
		if err := ctx.Err(); err != nil {
			return last, err
		}
	}
}

// maxTaskWait is the longest a node holds one GetTaskWait call.
const maxTaskWait = 30 * time.Second

// GetTaskWait returns the task once it has ended, or as it is when wait
// has passed: one call the node holds for up to wait, in whole seconds (at
// most 30; 0 answers at once, as GetTask). Read the task's State to tell
// which (State.Ended).
func (c *Client) GetTaskWait(ctx context.Context, instance, id string, wait time.Duration) (*errandapi.Task, error) {
	secs := int((min(max(wait, 0), maxTaskWait) + time.Second - 1) / time.Second)
	var q url.Values
	if secs > 0 {
		q = url.Values{"waitSeconds": {strconv.Itoa(secs)}}
	}
	return c.taskCall(ctx, call{method: "GET", path: []string{"v1", "tasks", instance, "tasks", id}, query: q, repeatable: true})
}

// UpdateTask changes the fields of a task that patch sets (its priority; a
// waiting task's due time: errandapi.TaskPatchRequest) and returns the
// task. Repeating it changes nothing more, so it is retried.
func (c *Client) UpdateTask(ctx context.Context, instance, id string, patch errandapi.TaskPatchRequest) (*errandapi.Task, error) {
	return c.taskCall(ctx, call{method: "PATCH", path: []string{"v1", "tasks", instance, "tasks", id}, body: patch, repeatable: true})
}

// RunTask makes a scheduled or retrying task due now (NOT_RUNNABLE for a
// finished one). Repeating it changes nothing more, so it is retried.
func (c *Client) RunTask(ctx context.Context, instance, id string) (*errandapi.Task, error) {
	return c.taskOp(ctx, instance, id, "run", true)
}

// CancelTask cancels a task that is not running (RUNNING_NOT_CANCELLABLE
// while it runs, NOT_CANCELLABLE once finished). It is retried: a retry
// after a try that cancelled it answers NOT_CANCELLABLE.
func (c *Client) CancelTask(ctx context.Context, instance, id string) (*errandapi.Task, error) {
	return c.taskOp(ctx, instance, id, "cancel", true)
}

// DeleteTask removes a task's record — any task but one whose attempt
// runs (RUNNING_NOT_CANCELLABLE) — freeing its name, and returns the task
// as it was. It needs the full grant. It is retried: a retry after a try
// that removed it answers NOT_FOUND.
func (c *Client) DeleteTask(ctx context.Context, instance, id string) (*errandapi.Task, error) {
	return c.taskCall(ctx, call{method: "DELETE", path: []string{"v1", "tasks", instance, "tasks", id}, repeatable: true})
}

// RetryTask gives a failed task a fresh budget and makes it due now
// (NOT_RETRYABLE for any other state). It is not retried once it may have
// reached the server: the task may run and fail again in between, and a
// second retry would run it once more.
func (c *Client) RetryTask(ctx context.Context, instance, id string) (*errandapi.Task, error) {
	return c.taskOp(ctx, instance, id, "retry", false)
}

func (c *Client) taskOp(ctx context.Context, instance, id, op string, repeatable bool) (*errandapi.Task, error) {
	return c.taskCall(ctx, call{method: "POST", path: []string{"v1", "tasks", instance, "tasks", id, op}, repeatable: repeatable})
}

func (c *Client) taskCall(ctx context.Context, cl call) (*errandapi.Task, error) {
	var out errandapi.TaskResponse
	cl.out = &out
	if err := c.do(ctx, cl); err != nil {
		return nil, err
	}
	return out.Task, nil
}
