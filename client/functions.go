package client

import (
	"context"

	"github.com/errandhq/errand/errandapi"
)

// Functions lists the instance's functions, ordered by name: each one a
// connected worker (or an embedded program) serves now, with its slots
// summed over the nodes, and each one a queue targets, served or not
// (Slots 0: its tasks wait, no attempt used), with those queues.
func (c *Client) Functions(ctx context.Context, instance string) ([]errandapi.Function, error) {
	var out errandapi.FunctionList
	err := c.do(ctx, call{method: "GET", path: []string{"v1", "tasks", instance, "functions"}, out: &out, repeatable: true})
	if err != nil {
		return nil, err
	}
	return out.Functions, nil
}
