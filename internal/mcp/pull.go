package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/errandhq/errand/client"
	"github.com/errandhq/errand/errandapi"
)

type leaseIn struct {
	queueArg
	Count        *int `json:"count,omitempty" jsonschema:"How many due tasks to lease at most, 1–1000; default 1. Fewer come back once their payloads and params together would pass 32 MiB."`
	LeaseSeconds *int `json:"leaseSeconds,omitempty" jsonschema:"How long the lease lasts, in seconds, 1–86,400; default 60. Finish (tasks_ack) or extend (tasks_extend) before it ends: an expired lease is a failed attempt and the task is retried with backoff."`
	WaitSeconds  int  `json:"waitSeconds,omitempty" jsonschema:"When no task is due, wait up to this many seconds (0–30) for one; default 0: answer at once, possibly with no task."`
}

type ackIn struct {
	leaseArg
	Result json.RawMessage `json:"result,omitempty" jsonschema:"The task's result: any JSON value, at most 64 KiB, stored with the task (tasks_get shows it)."`
}

type extendIn struct {
	leaseArg
	LeaseSeconds int `json:"leaseSeconds" jsonschema:"The lease lasts this many seconds from now, 1–86,400."`
}

type releaseIn struct {
	leaseArg
	Error        string  `json:"error,omitempty" jsonschema:"Why the work failed. With an error, the release is a failed attempt: the task is retried with backoff, or fails for good when its attempts are spent. Without, the task goes back unharmed and the attempt is not counted."`
	DelaySeconds float64 `json:"delaySeconds,omitempty" jsonschema:"Seconds before the task is due again (fractions allowed). Without an error default 0; with one, default the queue's backoff."`
}

var pullTools = []tool{
	define(spec{
		name: "tasks_lease", title: "Lease tasks (pull)", need: errandapi.RoleWrite,
		desc: "Lease due tasks of a pull queue, to do their work yourself: each comes with its payload, a leaseId and a deliveryToken. Then call tasks_ack with the result when done, tasks_release to give it back (with an error when it failed), or tasks_extend for more time; pass the deliveryToken to tasks_add for tasks the work causes. A push queue answers WRONG_MODE.",
		shape: func(s *jsonschema.Schema) {
			bounds(s, "count", 1, 1000)
			bounds(s, "leaseSeconds", 1, 86400)
			bounds(s, "waitSeconds", 0, 30)
		},
	}, func(ctx context.Context, c *client.Client, in leaseIn) (*errandapi.LeaseResponse, string, error) {
		ts, err := c.Lease(ctx, in.Instance, in.Queue, errandapi.LeaseRequest{Count: in.Count, LeaseSeconds: in.LeaseSeconds,
			WaitSeconds: in.WaitSeconds, DeliveryTokens: true})
		if err != nil {
			return nil, "", err
		}
		if len(ts) == 0 {
			return &errandapi.LeaseResponse{Tasks: []errandapi.LeasedTask{}}, fmt.Sprintf("no task of %s/%s is due now", in.Instance, in.Queue), nil
		}
		parts := make([]string, len(ts))
		for i, t := range ts {
			parts[i] = fmt.Sprintf("%s (leaseId %s, attempt %d)", t.ID, t.LeaseID, t.Attempts)
		}
		return &errandapi.LeaseResponse{Tasks: ts}, fmt.Sprintf("leased %d tasks of %s/%s until %s: %s. Do the work, then tasks_ack each with its leaseId; tasks the work causes are added with its deliveryToken.",
			len(ts), in.Instance, in.Queue, when(ts[0].LeaseExpiresAt), strings.Join(parts, ", ")), nil
	}),
	define(spec{
		name: "tasks_ack", title: "Finish a leased task", need: errandapi.RoleWrite, idempotent: true,
		desc: "Finish a leased task: it succeeds with the result given. Answers LEASE_LOST if the lease is over (then another worker may hold the task: do not report it done).",
	}, oneTask(func(ctx context.Context, c *client.Client, in ackIn) (*errandapi.Task, error) {
		return c.Ack(ctx, in.Instance, in.ID, errandapi.AckRequest{LeaseID: in.LeaseID, Result: in.Result})
	}, "acked: ")),
	define(spec{
		name: "tasks_extend", title: "Extend a lease", need: errandapi.RoleWrite, idempotent: true,
		desc:  "Lengthen a lease still held, for work that takes longer than planned: it then lasts leaseSeconds from now.",
		shape: func(s *jsonschema.Schema) { bounds(s, "leaseSeconds", 1, 86400) },
	}, oneTask(func(ctx context.Context, c *client.Client, in extendIn) (*errandapi.Task, error) {
		return c.Extend(ctx, in.Instance, in.ID, errandapi.ExtendRequest{LeaseID: in.LeaseID, LeaseSeconds: &in.LeaseSeconds})
	}, "extended: ")),
	define(spec{
		name: "tasks_release", title: "Give back a leased task", need: errandapi.RoleWrite, idempotent: true,
		desc: "Give back a leased task without finishing it. With error it counts as a failed attempt, retried after delaySeconds if given, else after the queue's backoff; without, it is due again after delaySeconds and the attempt is not counted.",
	}, oneTask(func(ctx context.Context, c *client.Client, in releaseIn) (*errandapi.Task, error) {
		return c.Release(ctx, in.Instance, in.ID, errandapi.ReleaseRequest{LeaseID: in.LeaseID, Error: in.Error, DelaySeconds: in.DelaySeconds})
	}, "released: ")),
}
