package client

import (
	"context"
	"net/url"

	"github.com/errandhq/errand/errandapi"
)

// confirm is the query a delete or purge needs: calling the method is the
// confirmation.
var confirm = url.Values{"confirm": {"true"}}

// ListInstances lists the instances the key has a grant on.
func (c *Client) ListInstances(ctx context.Context) ([]errandapi.Instance, error) {
	var out errandapi.InstanceList
	err := c.do(ctx, call{method: "GET", path: []string{"v1", "instances"}, out: &out, repeatable: true})
	return out.Instances, err
}

// CreateInstance creates an instance (with its queue default). It answers
// INSTANCE_EXISTS if the name is taken: also when a retry follows a try
// that created it and whose answer was lost.
func (c *Client) CreateInstance(ctx context.Context, name string) (*errandapi.Instance, error) {
	var out errandapi.InstanceResponse
	err := c.do(ctx, call{method: "POST", path: []string{"v1", "instances"}, body: errandapi.InstanceRequest{Name: name},
		out: &out, repeatable: true})
	if err != nil {
		return nil, err
	}
	return &out.Instance, nil
}

// DeleteInstance deletes an instance with every queue and task in it (the
// call is the confirmation the API asks for). It is not retried once it
// may have reached the server.
func (c *Client) DeleteInstance(ctx context.Context, name string) error {
	return c.do(ctx, call{method: "DELETE", path: []string{"v1", "instances", name}, query: confirm,
		out: &errandapi.InstanceDeleteResponse{}})
}

// Settings returns an instance's settings.
func (c *Client) Settings(ctx context.Context, instance string) (*errandapi.Settings, error) {
	var out errandapi.SettingsResponse
	err := c.do(ctx, call{method: "GET", path: []string{"v1", "tasks", instance, "settings"}, out: &out, repeatable: true})
	if err != nil {
		return nil, err
	}
	return &out.Settings, nil
}

// UpdateSettings changes the settings sent and returns them all.
func (c *Client) UpdateSettings(ctx context.Context, instance string, patch errandapi.SettingsRequest) (*errandapi.Settings, error) {
	var out errandapi.SettingsResponse
	err := c.do(ctx, call{method: "PATCH", path: []string{"v1", "tasks", instance, "settings"}, body: patch,
		out: &out, repeatable: true})
	if err != nil {
		return nil, err
	}
	return &out.Settings, nil
}

// WebhookKey reveals the instance's webhook signing key (whsec_…).
func (c *Client) WebhookKey(ctx context.Context, instance string) (string, error) {
	var out errandapi.WebhookKeyResponse
	err := c.do(ctx, call{method: "GET", path: []string{"v1", "tasks", instance, "settings", "webhook-key"}, out: &out, repeatable: true})
	return out.WebhookKey, err
}

// RotateWebhookKey replaces the instance's webhook signing key and returns
// the new one; the next delivery is signed with it. It is not retried once
// it may have reached the server.
func (c *Client) RotateWebhookKey(ctx context.Context, instance string) (string, error) {
	var out errandapi.WebhookKeyResponse
	err := c.do(ctx, call{method: "POST", path: []string{"v1", "tasks", instance, "settings", "webhook-key", "rotate"}, out: &out})
	return out.WebhookKey, err
}
