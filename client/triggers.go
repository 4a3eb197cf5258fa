package client

import (
	"context"

	"github.com/errandhq/errand/errandapi"
)

// ListTriggers lists an instance's trigger rules, oldest first.
func (c *Client) ListTriggers(ctx context.Context, instance string) ([]errandapi.Trigger, error) {
	var out errandapi.TriggerList
	err := c.do(ctx, call{method: "GET", path: []string{"v1", "tasks", instance, "triggers"}, out: &out, repeatable: true})
	return out.Triggers, err
}

// CreateTrigger creates a rule (req.Queue and exactly one of Schedule,
// Hook and Task). It is not retried once it may have reached the server: a
// second try would create a second rule.
func (c *Client) CreateTrigger(ctx context.Context, instance string, req errandapi.TriggerRequest) (*errandapi.Trigger, error) {
	return c.triggerCall(ctx, call{method: "POST", path: []string{"v1", "tasks", instance, "triggers"}, body: req})
}

// GetTrigger returns one rule.
func (c *Client) GetTrigger(ctx context.Context, instance, id string) (*errandapi.Trigger, error) {
	return c.triggerCall(ctx, call{method: "GET", path: []string{"v1", "tasks", instance, "triggers", id}, repeatable: true})
}

// UpdateTrigger changes only the fields sent (never the kind) and returns
// the rule.
func (c *Client) UpdateTrigger(ctx context.Context, instance, id string, patch errandapi.TriggerRequest) (*errandapi.Trigger, error) {
	return c.triggerCall(ctx, call{method: "PATCH", path: []string{"v1", "tasks", instance, "triggers", id}, body: patch, repeatable: true})
}

// DeleteTrigger deletes a rule (a hook rule's URL stops working). It is
// not retried once it may have reached the server.
func (c *Client) DeleteTrigger(ctx context.Context, instance, id string) error {
	return c.do(ctx, call{method: "DELETE", path: []string{"v1", "tasks", instance, "triggers", id}, out: &errandapi.TriggerDeleteResponse{}})
}

func (c *Client) triggerCall(ctx context.Context, cl call) (*errandapi.Trigger, error) {
	var out errandapi.TriggerResponse
	cl.out = &out
	if err := c.do(ctx, cl); err != nil {
		return nil, err
	}
	return out.Trigger, nil
}
