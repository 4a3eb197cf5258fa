package client

import (
	"context"

	"github.com/errandhq/errand/errandapi"
)

// ListQueues lists an instance's queues with their settings and counts.
func (c *Client) ListQueues(ctx context.Context, instance string) ([]errandapi.Queue, error) {
	var out errandapi.QueueList
	err := c.do(ctx, call{method: "GET", path: []string{"v1", "tasks", instance, "queues"}, out: &out, repeatable: true})
	return out.Queues, err
}

// CreateQueue creates the queue name with the settings sent (settings.Name
// is set to name; Mode defaults to push). It answers QUEUE_EXISTS if the
// name is taken: also when a retry follows a try that created it and
// whose answer was lost.
func (c *Client) CreateQueue(ctx context.Context, instance, name string, settings errandapi.QueueRequest) (*errandapi.Queue, error) {
	settings.Name = &name
	return c.queueCall(ctx, call{method: "POST", path: []string{"v1", "tasks", instance, "queues"}, body: settings, repeatable: true})
}

// GetQueue returns one queue with its counts by state.
func (c *Client) GetQueue(ctx context.Context, instance, queue string) (*errandapi.Queue, error) {
	return c.queueCall(ctx, call{method: "GET", path: []string{"v1", "tasks", instance, "queues", queue}, repeatable: true})
}

// UpdateQueue changes only the settings sent (errandapi.Null clears a
// nullable one) and returns the queue.
func (c *Client) UpdateQueue(ctx context.Context, instance, queue string, patch errandapi.QueueRequest) (*errandapi.Queue, error) {
	return c.queueCall(ctx, call{method: "PATCH", path: []string{"v1", "tasks", instance, "queues", queue}, body: patch, repeatable: true})
}

func (c *Client) queueCall(ctx context.Context, cl call) (*errandapi.Queue, error) {
	var out errandapi.QueueResponse
	cl.out = &out
	if err := c.do(ctx, cl); err != nil {
		return nil, err
	}
	return out.Queue, nil
}

// DeleteQueue deletes a queue and its tasks (the call is the confirmation
// the API asks for) and returns how many tasks it removed. It is not
// retried once it may have reached the server.
func (c *Client) DeleteQueue(ctx context.Context, instance, queue string) (int, error) {
	var out errandapi.DeleteResponse
	err := c.do(ctx, call{method: "DELETE", path: []string{"v1", "tasks", instance, "queues", queue}, query: confirm, out: &out})
	return out.Deleted, err
}

// PurgeQueue removes every task of a queue (the call is the confirmation)
// and returns how many. It is not retried once it may have reached the
// server: a second purge would remove tasks added in between.
func (c *Client) PurgeQueue(ctx context.Context, instance, queue string) (int, error) {
	var out errandapi.DeleteResponse
	err := c.do(ctx, call{method: "POST", path: []string{"v1", "tasks", instance, "queues", queue, "purge"}, query: confirm, out: &out})
	return out.Deleted, err
}

// QueueActivity returns a queue's tasks added, succeeded and failed per
// minute over the last hour.
func (c *Client) QueueActivity(ctx context.Context, instance, queue string) (*errandapi.QueueActivity, error) {
	var out errandapi.QueueActivity
	err := c.do(ctx, call{method: "GET", path: []string{"v1", "tasks", instance, "queues", queue, "activity"}, out: &out, repeatable: true})
	if err != nil {
		return nil, err
	}
	return &out, nil
}
