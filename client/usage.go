package client

import (
	"context"

	"github.com/errandhq/errand/errandapi"
)

// Usage returns the instance's usage in the current month (UTC): tasks
// added, deliveries by target kind, bytes kept, per day and in total.
func (c *Client) Usage(ctx context.Context, instance string) (*errandapi.Usage, error) {
	var out errandapi.UsageResponse
	err := c.do(ctx, call{method: "GET", path: []string{"v1", "tasks", instance, "usage"}, out: &out, repeatable: true})
	if err != nil {
		return nil, err
	}
	return &out.Usage, nil
}
