package mcp

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/errandhq/errand/client"
	"github.com/errandhq/errand/errandapi"
)

type setQueueIn struct {
	queueArg
	Mode              *errandapi.Mode                      `json:"mode,omitempty" jsonschema:"push (errand delivers each task to the target) or pull (workers lease tasks with tasks_lease). Fixed when the queue is created; default push."`
	Target            errandapi.Nullable[errandapi.Target] `json:"target,omitzero" jsonschema:"Where a push queue delivers: exactly one of {\"webhook\": \"https://…\"} (signed POST; it may add \"headers\": {\"Authorization\": \"Bearer …\"}, sent with every delivery, whose values answers show as \"(hidden)\" and which \"(hidden)\" keeps toward the same host), {\"function\": \"group/name\"} (a function of a connected worker) or {\"channel\": \"name\"} (pub/sub subscribers). A task may carry its own. null removes it."`
	RatePerSecond     errandapi.Nullable[float64]          `json:"ratePerSecond,omitzero" jsonschema:"Most deliveries started per second (fractions allowed). Default unlimited; null removes the limit."`
	MaxConcurrent     errandapi.Nullable[int]              `json:"maxConcurrent,omitzero" jsonschema:"Most deliveries in flight at once, still under the instance's maxInFlight (50). Default unlimited; null removes the limit."`
	MaxAttempts       *int                                 `json:"maxAttempts,omitempty" jsonschema:"Attempts before a task fails for good, the first included. 1–1000, default 10."`
	MinBackoffSeconds *float64                             `json:"minBackoffSeconds,omitempty" jsonschema:"Wait after the first failed attempt, in seconds (fractions allowed). Default 10. The wait doubles after each failure."`
	MaxBackoffSeconds *float64                             `json:"maxBackoffSeconds,omitempty" jsonschema:"Longest wait between attempts, in seconds. Default 3600."`
	MaxDoublings      *int                                 `json:"maxDoublings,omitempty" jsonschema:"How many times the wait doubles; past it it grows by the last doubled step. Default 16."`
	MaxAgeSeconds     errandapi.Nullable[int64]            `json:"maxAgeSeconds,omitzero" jsonschema:"A task older than this (seconds since it was added) is not retried again. Default none; null removes it."`
	DeadlineSeconds   *int                                 `json:"deadlineSeconds,omitempty" jsonschema:"Seconds a push target has to answer one attempt before it counts as failed. 1–840, default 600."`
	DeadLetterQueue   errandapi.Nullable[string]           `json:"deadLetterQueue,omitzero" jsonschema:"Another existing queue of the instance that gets a copy of every task that fails for good. Default none; null removes it."`
	TargetControl     *bool                                `json:"targetControl,omitempty" jsonschema:"Whether a target may defer a retry with 503 + x-task-retry: defer + retry-after. Default true."`
	Paused            *bool                                `json:"paused,omitempty" jsonschema:"A paused queue keeps its tasks and delivers or leases none. Default false."`
}

type setQueueOut struct {
	Queue   *errandapi.Queue `json:"queue"`
	Created bool             `json:"created"`
}

var queueTools = []tool{
	define(spec{
		name: "tasks_list_queues", title: "List queues", need: errandapi.RoleRead, readOnly: true, idempotent: true,
		desc: "List the queues of a tasks instance with their settings and their tasks' counts by state (scheduled, running, leased, retrying, succeeded, failed, cancelled; each count stops at 10,000, and capped lists the states that reached it).",
	}, func(ctx context.Context, c *client.Client, in instanceArg) (*errandapi.QueueList, string, error) {
		qs, err := c.ListQueues(ctx, in.Instance)
		if err != nil {
			return nil, "", err
		}
		parts := make([]string, len(qs))
		for i, q := range qs {
			parts[i] = fmt.Sprintf("%s (%s%s; %s)", q.Name, q.Mode, pausedNote(q.Paused), countsText(q.Counts))
		}
		return &errandapi.QueueList{Queues: qs}, fmt.Sprintf("%d queues in %s: %s", len(qs), in.Instance, strings.Join(parts, ", ")), nil
	}),
	define(spec{
		name: "tasks_set_queue", title: "Create or change a queue", need: errandapi.RoleFull, idempotent: true, patch: true,
		desc: "Create a queue, or change an existing one: only the settings given change, the others keep their values (or their defaults on a new queue). A push queue delivers each task to its target with retries and backoff; a pull queue holds tasks for workers to lease. Needs the full grant.",
		shape: func(s *jsonschema.Schema) {
			enum(s, "mode", "push", "pull")
			bounds(s, "maxAttempts", 1, 1000)
			bounds(s, "deadlineSeconds", 1, 840)
		},
	}, setQueue),
	confirmedQueueTool("tasks_purge_queue", "Purge a queue",
		"Remove every task of a queue, whatever its state; the queue and its settings stay. Irreversible: needs confirm: true and the full grant.",
		"purging queue %[2]s of instance %[1]s removes every task of the queue", "purged %s/%s: %d tasks removed", (*client.Client).PurgeQueue),
	confirmedQueueTool("tasks_delete_queue", "Delete a queue",
		"Delete a queue with all its tasks. Irreversible: needs confirm: true and the full grant. The queue named default cannot be deleted.",
		"deleting queue %[2]s of instance %[1]s removes the queue and every task in it", "deleted %s/%s and its %d tasks", (*client.Client).DeleteQueue),
}

type confirmQueueIn struct {
	queueArg
	Confirm bool `json:"confirm,omitempty" jsonschema:"Must be true: this removes tasks for good. Ask the user before setting it."`
}

// confirmedQueueTool is a tool that removes a queue's tasks: without
// confirm: true it answers CONFIRM_REQUIRED (what) and calls nothing;
// with it, it calls the API (which answers how many tasks went: done).
func confirmedQueueTool(name, title, desc, what, done string, call func(*client.Client, context.Context, string, string) (int, error)) tool {
	return define(spec{name: name, title: title, desc: desc, need: errandapi.RoleFull, destructive: true},
		func(ctx context.Context, c *client.Client, in confirmQueueIn) (*errandapi.DeleteResponse, string, error) {
			if !in.Confirm {
				return nil, "", refuse(errandapi.CodeConfirmRequired, what+": confirm must be true", errandapi.Quote(in.Instance), errandapi.Quote(in.Queue))
			}
			n, err := call(c, ctx, in.Instance, in.Queue)
			if err != nil {
				return nil, "", err
			}
			return &errandapi.DeleteResponse{Deleted: n}, fmt.Sprintf(done, in.Instance, in.Queue, n), nil
		})
}

// setQueue changes the queue, or creates it when it does not exist yet
// (and changes it if another caller created it in between).
func setQueue(ctx context.Context, c *client.Client, in setQueueIn) (*setQueueOut, string, error) {
	req := errandapi.QueueRequest{
		Mode: in.Mode, Target: in.Target, RatePerSecond: in.RatePerSecond, MaxConcurrent: in.MaxConcurrent,
		MaxAttempts: in.MaxAttempts, MinBackoffSeconds: in.MinBackoffSeconds, MaxBackoffSeconds: in.MaxBackoffSeconds,
		MaxDoublings: in.MaxDoublings, MaxAgeSeconds: in.MaxAgeSeconds, DeadlineSeconds: in.DeadlineSeconds,
		DeadLetterQueue: in.DeadLetterQueue, TargetControl: in.TargetControl, Paused: in.Paused,
	}
	q, err := c.UpdateQueue(ctx, in.Instance, in.Queue, req)
	created := false
	if errors.Is(err, client.ErrNotFound) {
		if q, err = c.CreateQueue(ctx, in.Instance, in.Queue, req); err == nil {
			created = true
		} else if errors.Is(err, client.ErrQueueExists) {
			q, err = c.UpdateQueue(ctx, in.Instance, in.Queue, req)
		}
		// The API's create names the queue's name "name"; this tool's
		// argument is "queue".
		err = renamed(err, "name", "queue")
	}
	if err != nil {
		return nil, "", err
	}
	verb := "changed"
	if created {
		verb = "created"
	}
	return &setQueueOut{Queue: q, Created: created}, fmt.Sprintf("%s queue %s/%s (%s%s, target %s, maxAttempts %d)",
		verb, in.Instance, in.Queue, q.Mode, pausedNote(q.Paused), targetText(q.Target), q.MaxAttempts), nil
}

// renamed is err, an INVALID_ARGUMENT naming the API's field from, naming
// the tool's argument to instead; any other error as it is.
func renamed(err error, from, to string) error {
	var e *errandapi.Error
	if !errors.As(err, &e) || e.Code != errandapi.CodeInvalidArgument || !strings.HasPrefix(e.Message, from+": ") {
		return err
	}
	cp := *e
	cp.Message = to + e.Message[len(from):]
	return &cp
}
