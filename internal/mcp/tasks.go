package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/errandhq/errand/client"
	"github.com/errandhq/errand/errandapi"
)

type newTaskIn struct {
	Payload         json.RawMessage   `json:"payload,omitempty" jsonschema:"The task's data: any JSON value, at most 64 KiB. The target (or the worker that leases it) receives it as is. Default null."`
	Name            string            `json:"name,omitempty" jsonschema:"Optional unique name in the queue (1–500 letters, digits, '-', '_', '.'), e.g. \"receipt-o-1041\". A second add with the same name is refused with TASK_EXISTS while the first task's record is kept: use it to add a task exactly once."`
	Params          json.RawMessage   `json:"params,omitempty" jsonschema:"Optional JSON the target receives beside the payload (at most 64 KiB)."`
	Target          *errandapi.Target `json:"target,omitempty" jsonschema:"This task's own target, overriding the queue's: exactly one of {\"webhook\": \"https://…\"} (optionally with \"headers\" sent with every delivery), {\"function\": \"group/name\"} or {\"channel\": \"name\"}. Needed on a push queue without a target (such as default)."`
	Delay           *float64          `json:"delay,omitempty" jsonschema:"Seconds to wait before the task is due (fractions allowed, at most 31,536,000). Default 0: due at once. Do not combine with runAt."`
	RunAt           *int64            `json:"runAt,omitempty" jsonschema:"When the task is due, as epoch milliseconds (a time in the past means now). Do not combine with delay."`
	DeadlineSeconds *int              `json:"deadlineSeconds,omitempty" jsonschema:"Seconds the target has to answer each attempt (1–840); default the queue's deadlineSeconds."`
	Priority        *int              `json:"priority,omitempty" jsonschema:"0–9, default 0: the queue's due tasks of a higher priority are delivered (or leased) before those of a lower one; tasks of the same priority go in runAt order. Use it to let urgent work pass a backlog."`
}

type addIn struct {
	queueArg
	Tasks []newTaskIn `json:"tasks" jsonschema:"The tasks to add: 1 to 100, stored in one transaction, each with its own result in order. A task that is invalid refuses the whole call and nothing is added; a name that is taken refuses only its task (TASK_EXISTS)."`
	// DeliveryToken is a leased task's token (tasks_lease answers it).
	DeliveryToken string `json:"deliveryToken,omitempty" jsonschema:"When these tasks are follow-ups of work on a task you leased, that task's deliveryToken from tasks_lease (while its lease lasts, and a day after): they get its depth + 1 and source lease, so a chain of tasks adding tasks stops at depth 8 (DEPTH_EXCEEDED) instead of looping. Without it they get source mcp and depth 0."`
}

type listIn struct {
	queueArg
	State  errandapi.State `json:"state,omitempty" jsonschema:"Only tasks in this state. Without it, newest first; scheduled, running, leased and retrying tasks come soonest due first, finished ones latest first."`
	Name   string          `json:"name,omitempty" jsonschema:"Only the task with this name."`
	Limit  int             `json:"limit,omitempty" jsonschema:"Tasks per page, 1–200; default 50."`
	Cursor string          `json:"cursor,omitempty" jsonschema:"The cursor of the previous page, to read the next one. A null cursor in an answer means it was the last page."`
}

// taskOut is the answer of every tool that returns one task.
type taskOut = errandapi.TaskResponse

var taskTools = []tool{
	define(spec{
		name: "tasks_add", title: "Add tasks", need: errandapi.RoleWrite,
		desc: "Add 1–100 tasks to a queue. Each is delivered to its target (push queue) or held for tasks_lease (pull queue) when it is due, and retried with backoff until it succeeds or its attempts are spent. Tasks added here get source \"mcp\". Returns one result per task: {ok, id, name, state, runAt} or {ok: false, code, id, message}.",
		shape: func(s *jsonschema.Schema) {
			one, hundred := 1, 100
			s.Properties["tasks"].MinItems, s.Properties["tasks"].MaxItems = &one, &hundred
			shapePriority(s.Properties["tasks"].Items.Properties["priority"])
		},
	}, func(ctx context.Context, c *client.Client, in addIn) (*errandapi.AddResponse, string, error) {
		tasks := make([]errandapi.NewTask, len(in.Tasks))
		for i, t := range in.Tasks {
			tasks[i] = errandapi.NewTask{Payload: t.Payload, Name: t.Name, Params: t.Params, Target: t.Target,
				Delay: t.Delay, RunAt: t.RunAt, DeadlineSeconds: t.DeadlineSeconds, Priority: t.Priority}
		}
		if in.DeliveryToken != "" {
			ctx = client.WithDelivery(ctx, in.DeliveryToken)
		}
		res, err := c.AddTasks(ctx, in.Instance, in.Queue, tasks...)
		if err != nil {
			return nil, "", renameField(err, errandapi.DeliveryHeader, "deliveryToken")
		}
		added, refused := 0, []string{}
		for i, r := range res {
			if r.OK {
				added++
			} else {
				refused = append(refused, fmt.Sprintf("tasks[%d] %s (id %s)", i, r.Code, r.ID))
			}
		}
		summary := fmt.Sprintf("added %d of %d tasks to %s/%s", added, len(res), in.Instance, in.Queue)
		if len(res) == 1 && added == 1 {
			summary += fmt.Sprintf(": id %s, %s, due %s", res[0].ID, res[0].State, when(res[0].RunAt))
		}
		if len(refused) > 0 {
			summary += "; refused: " + strings.Join(refused, ", ")
		}
		return &errandapi.AddResponse{Tasks: res}, summary, nil
	}),
	define(spec{
		name: "tasks_list", title: "List tasks", need: errandapi.RoleRead, readOnly: true, idempotent: true,
		desc: "List one page of a queue's tasks, without payloads (tasks_get shows one task whole). Filter by state or name; read further pages with the cursor the previous page returned.",
		shape: func(s *jsonschema.Schema) {
			vals := make([]string, len(states))
			for i, st := range states {
				vals[i] = string(st)
			}
			enum(s, "state", vals...)
			bounds(s, "limit", 1, 200)
		},
	}, func(ctx context.Context, c *client.Client, in listIn) (*errandapi.TaskPage, string, error) {
		page, err := c.ListTasks(ctx, in.Instance, in.Queue, client.ListOptions{State: in.State, Name: in.Name, Limit: in.Limit, Cursor: in.Cursor})
		if err != nil {
			return nil, "", err
		}
		what := "tasks"
		if in.State != "" {
			what = string(in.State) + " tasks"
		}
		summary := fmt.Sprintf("%d %s in %s/%s", len(page.Tasks), what, in.Instance, in.Queue)
		if page.Cursor != nil {
			summary += fmt.Sprintf("; more: call again with cursor %q", *page.Cursor)
		} else {
			summary += "; this is the last page"
		}
		return page, summary, nil
	}),
	define(spec{
		name: "tasks_get", title: "Get a task", need: errandapi.RoleRead, readOnly: true, idempotent: true,
		desc: "Get one task with its payload, result, and every attempt with its status, HTTP status and error. " +
			"With waitSeconds (1–30) the answer waits until the task has ended (succeeded, failed or cancelled) or the wait runs out; read its state to tell which, and call again to wait longer.",
		shape: func(s *jsonschema.Schema) { bounds(s, "waitSeconds", 0, 30) },
	}, oneTask(func(ctx context.Context, c *client.Client, in getTaskIn) (*errandapi.Task, error) {
		return c.GetTaskWait(ctx, in.Instance, in.ID, time.Duration(in.WaitSeconds)*time.Second)
	}, "")),
	define(spec{
		name: "tasks_run", title: "Run a task now", need: errandapi.RoleWrite, idempotent: true,
		desc: "Make a scheduled or retrying task due now, without waiting for its delay or backoff. A finished task answers NOT_RUNNABLE.",
	}, oneTask(func(ctx context.Context, c *client.Client, in taskArg) (*errandapi.Task, error) {
		return c.RunTask(ctx, in.Instance, in.ID)
	}, "due now: ")),
	define(spec{
		name: "tasks_set_priority", title: "Change a task's priority", need: errandapi.RoleWrite, idempotent: true,
		desc: "Change a task's priority (0–9): a queue's due tasks of a higher priority are delivered (or leased) first, each priority in runAt order. " +
			"It applies whenever the task waits: at once for a scheduled or retrying task, from its next retry for a running or leased one, after tasks_retry for a failed one.",
		shape: func(s *jsonschema.Schema) { shapePriority(s.Properties["priority"]) },
	}, oneTask(func(ctx context.Context, c *client.Client, in setPriorityIn) (*errandapi.Task, error) {
		return c.UpdateTask(ctx, in.Instance, in.ID, errandapi.TaskPatchRequest{Priority: &in.Priority})
	}, "priority changed: ")),
	define(spec{
		name: "tasks_reschedule", title: "Move a waiting task's due time", need: errandapi.RoleWrite, idempotent: true,
		desc: "Move a scheduled or retrying task's due time: later, or (runAt in the past) due now. A retrying task stays retrying until then. " +
			"A running or leased task (its next wait is its backoff's) and a finished one answer NOT_RUNNABLE.",
		shape: func(s *jsonschema.Schema) { bounds(s, "delay", 0, 365*86400) },
	}, oneTask(func(ctx context.Context, c *client.Client, in rescheduleIn) (*errandapi.Task, error) {
		if in.Delay == nil && in.RunAt == nil {
			return nil, refuse(errandapi.CodeInvalidArgument, "delay: send delay or runAt: when the task is due")
		}
		return c.UpdateTask(ctx, in.Instance, in.ID, errandapi.TaskPatchRequest{Delay: in.Delay, RunAt: in.RunAt})
	}, "rescheduled: ")),
	define(spec{
		name: "tasks_cancel", title: "Cancel a task", need: errandapi.RoleWrite, idempotent: true,
		desc: "Cancel a task that is scheduled or waiting to retry: it will not run. A task whose attempt is running answers RUNNING_NOT_CANCELLABLE; a finished one NOT_CANCELLABLE.",
	}, oneTask(func(ctx context.Context, c *client.Client, in taskArg) (*errandapi.Task, error) {
		return c.CancelTask(ctx, in.Instance, in.ID)
	}, "cancelled: ")),
	define(spec{
		name: "tasks_retry", title: "Retry a failed task", need: errandapi.RoleWrite,
		desc: "Run a failed task again with a fresh budget of attempts; it is due at once. Only a failed task can be retried (NOT_RETRYABLE otherwise).",
	}, oneTask(func(ctx context.Context, c *client.Client, in taskArg) (*errandapi.Task, error) {
		return c.RetryTask(ctx, in.Instance, in.ID)
	}, "retrying: ")),
	define(spec{
		name: "tasks_delete", title: "Delete a task's record", need: errandapi.RoleFull, destructive: true,
		desc: "Remove a task's record at once, freeing its name for a new add: a scheduled or retrying task will not run; a finished one's payload, result and attempts are gone. Answers the task as it was. A task whose attempt is running answers RUNNING_NOT_CANCELLABLE and is left as it is. To stop a task but keep its record, use tasks_cancel.",
	}, oneTask(func(ctx context.Context, c *client.Client, in taskArg) (*errandapi.Task, error) {
		return c.DeleteTask(ctx, in.Instance, in.ID)
	}, "deleted: ")),
}

// oneTask is a tool over a call that answers one task.
func oneTask[In any](call func(context.Context, *client.Client, In) (*errandapi.Task, error), prefix string) func(context.Context, *client.Client, In) (*taskOut, string, error) {
	return func(ctx context.Context, c *client.Client, in In) (*taskOut, string, error) {
		t, err := call(ctx, c, in)
		if err != nil {
			return nil, "", err
		}
		if t == nil {
			return nil, "", errors.New("the server answered no task")
		}
		return &taskOut{Task: t}, prefix + taskText(t), nil
	}
}
