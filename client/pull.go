package client

import (
	"context"
	"errors"

	"github.com/errandhq/errand/errandapi"
)

// Lease leases due tasks of a pull queue (req.Count, default 1) for
// req.LeaseSeconds (default 60); with req.WaitSeconds it waits up to that
// long (at most 30) for one to come due. It is not retried once it may
// have reached the server: tasks leased by a lost answer would sit out
// their lease and count it as a failed attempt.
func (c *Client) Lease(ctx context.Context, instance, queue string, req errandapi.LeaseRequest) ([]errandapi.LeasedTask, error) {
	var out errandapi.LeaseResponse
	err := c.do(ctx, call{method: "POST", path: []string{"v1", "tasks", instance, "queues", queue, "lease"}, body: req, out: &out,
		decode: out.UnmarshalJSON})
	return out.Tasks, err
}

// Ack finishes a leased task with its result. The lease fences it, so it
// is retried; a retry after a try that landed answers as that try did
// (the server knows its own ack by the lease: the task, succeeded).
func (c *Client) Ack(ctx context.Context, instance, id string, req errandapi.AckRequest) (*errandapi.Task, error) {
	return c.leaseCall(ctx, instance, id, "ack", req)
}

// Extend makes the lease last req.LeaseSeconds from now. It is retried.
func (c *Client) Extend(ctx context.Context, instance, id string, req errandapi.ExtendRequest) (*errandapi.Task, error) {
	return c.leaseCall(ctx, instance, id, "extend", req)
}

// Release gives a leased task back: with req.Error it is a failed attempt,
// retried after req.DelaySeconds when set, else after the queue's backoff;
// without, it goes back unharmed after req.DelaySeconds. The lease fences
// it, so it is retried (LEASE_LOST after a try that landed).
func (c *Client) Release(ctx context.Context, instance, id string, req errandapi.ReleaseRequest) (*errandapi.Task, error) {
	return c.leaseCall(ctx, instance, id, "release", req)
}

func (c *Client) leaseCall(ctx context.Context, instance, id, op string, body any) (*errandapi.Task, error) {
	return c.taskCall(ctx, call{method: "POST", path: []string{"v1", "tasks", instance, "tasks", id, op}, body: body, repeatable: true})
}

// AckMany acknowledges 1–1,000 leased tasks of a queue in one call and
// returns one result per ack, in order (BatchAckResult.Err() is its
// refusal, LEASE_LOST or NOT_FOUND). When none was stored the results come
// with an error too: the first refusal, as the server's 409. Each ack is
// fenced by its lease, so the call is retried (an ack a lost try stored
// answers OK again).
func (c *Client) AckMany(ctx context.Context, instance, queue string, acks []errandapi.BatchAck) ([]errandapi.BatchAckResult, error) {
	var out errandapi.BatchAckResponse
	err := c.do(ctx, call{method: "POST", path: []string{"v1", "tasks", instance, "queues", queue, "ack"},
		body: errandapi.BatchAckRequest{Acks: acks}, out: &out, repeatable: true, conflictOut: true,
		decode: out.UnmarshalJSON})
	var e *Error
	if err != nil && !errors.As(err, &e) {
		return nil, err
	}
	return out.Results, err
}
