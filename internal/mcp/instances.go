package mcp

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/errandhq/errand/client"
	"github.com/errandhq/errand/errandapi"
)

type createInstanceIn struct {
	Name string `json:"name" jsonschema:"The new instance's name: 1–100 letters, digits, '-' or '_', starting with a letter or digit, e.g. \"jobs\"."`
}

type settingsIn struct {
	instanceArg
	RetentionDays *int                        `json:"retentionDays,omitempty" jsonschema:"Days a finished task's record is kept (its name stays taken as long), 1–3650; default 7."`
	RateLimit     errandapi.Nullable[float64] `json:"rateLimit,omitzero" jsonschema:"Most API calls per second on the instance (past it calls answer RATE_LIMITED). Default unlimited; null removes the limit."`
	MaxInFlight   *int                        `json:"maxInFlight,omitempty" jsonschema:"Most deliveries in flight at once across all the instance's queues, 1–100,000; default 50."`
}

type webhookKeyIn struct {
	instanceArg
}

type usageIn struct {
	instanceArg
}

type functionsIn struct {
	instanceArg
}

var instanceTools = []tool{
	define(spec{
		name: "create_instance", title: "Create a tasks instance", need: errandapi.RoleFull,
		desc: "Create a tasks instance: a namespace of queues, created with its queue named default. Needs the full grant on the new name. (errand dev also creates an instance on first use.)",
	}, func(ctx context.Context, c *client.Client, in createInstanceIn) (*errandapi.InstanceResponse, string, error) {
		inst, err := c.CreateInstance(ctx, in.Name)
		if err != nil {
			return nil, "", err
		}
		return &errandapi.InstanceResponse{Instance: *inst}, fmt.Sprintf("created instance %s with its queue default", inst.Name), nil
	}),
	define(spec{
		name: "patch_instance_config", title: "Change instance settings", need: errandapi.RoleFull, idempotent: true, patch: true,
		desc: "Change an instance's settings: only those given change. With none given, it returns the current settings. Needs the full grant.",
		shape: func(s *jsonschema.Schema) {
			bounds(s, "retentionDays", 1, 3650)
			bounds(s, "maxInFlight", 1, 100000)
		},
	}, func(ctx context.Context, c *client.Client, in settingsIn) (*errandapi.SettingsResponse, string, error) {
		var (
			s   *errandapi.Settings
			err error
		)
		if in.RetentionDays == nil && !in.RateLimit.Set && in.MaxInFlight == nil {
			s, err = c.Settings(ctx, in.Instance)
		} else {
			s, err = c.UpdateSettings(ctx, in.Instance, errandapi.SettingsRequest{RetentionDays: in.RetentionDays, RateLimit: in.RateLimit, MaxInFlight: in.MaxInFlight})
		}
		if err != nil {
			return nil, "", err
		}
		rate := "unlimited"
		if s.RateLimit != nil {
			rate = fmt.Sprintf("%g/s", *s.RateLimit)
		}
		return &errandapi.SettingsResponse{Settings: *s}, fmt.Sprintf("settings of %s: retentionDays %d, rateLimit %s, maxInFlight %d",
			in.Instance, s.RetentionDays, rate, s.MaxInFlight), nil
	}),
	define(spec{
		name: "tasks_usage", title: "Show an instance's usage this month", need: errandapi.RoleRead, readOnly: true, idempotent: true,
		desc: "Show what an instance used in the current calendar month (UTC): tasks added, deliveries by target kind (webhook, function, channel, and pull for tasks handed out by leases; every attempt counts) and the bytes its tasks keep, per day from the 1st to today, with the month's totals and average of bytes kept. Needs the read grant.",
	}, func(ctx context.Context, c *client.Client, in usageIn) (*errandapi.UsageResponse, string, error) {
		u, err := c.Usage(ctx, in.Instance)
		if err != nil {
			return nil, "", err
		}
		return &errandapi.UsageResponse{Usage: *u}, fmt.Sprintf("%s in %s: %d tasks added, %d deliveries (webhook %d, function %d, channel %d, pull %d), %d bytes kept now, %d on average",
			in.Instance, u.Month, u.TasksAdded, u.Deliveries.Total, u.Deliveries.Webhook, u.Deliveries.Function, u.Deliveries.Channel, u.Deliveries.Pull, u.BytesKept, u.AverageBytesKept), nil
	}),
	define(spec{
		name: "tasks_list_functions", title: "List the functions workers serve", need: errandapi.RoleRead, readOnly: true, idempotent: true,
		desc: "List an instance's functions (targets {\"function\": \"group/name\"}): each one a connected worker (or an embedded program) serves now, with slots (attempts at once, summed over every node), and each one a queue targets, with those queues. slots 0 means no worker serves it: its tasks wait, no attempt used, until one connects — the first thing to check when function tasks do not run. Needs the read grant.",
	}, func(ctx context.Context, c *client.Client, in functionsIn) (*errandapi.FunctionList, string, error) {
		fs, err := c.Functions(ctx, in.Instance)
		if err != nil {
			return nil, "", err
		}
		var unserved []string
		for _, f := range fs {
			if f.Slots == 0 {
				unserved = append(unserved, f.Function)
			}
		}
		sum := fmt.Sprintf("%d functions of %s, %d served now", len(fs), in.Instance, len(fs)-len(unserved))
		if len(unserved) > 0 {
			sum += "; no worker serves " + strings.Join(unserved, ", ") + " (their tasks wait)"
		}
		return &errandapi.FunctionList{Functions: fs}, sum, nil
	}),
	define(spec{
		name: "tasks_reveal_webhook_secret", title: "Reveal the webhook signing key", need: errandapi.RoleFull, readOnly: true, idempotent: true,
		desc: "Reveal the instance's webhook signing key (whsec_…). Every webhook delivery carries x-errand-timestamp (ms) and x-errand-signature: v1=<hex HMAC-SHA256 keyed with the whole key over \"<timestamp>.<raw body>\">. It is a secret: show it only to the user who asked. Needs the full grant.",
	}, func(ctx context.Context, c *client.Client, in webhookKeyIn) (*errandapi.WebhookKeyResponse, string, error) {
		k, err := c.WebhookKey(ctx, in.Instance)
		if err != nil {
			return nil, "", err
		}
		return &errandapi.WebhookKeyResponse{WebhookKey: k}, "the webhook signing key of " + in.Instance + " is in webhookKey", nil
	}),
	define(spec{
		name: "tasks_rotate_webhook_secret", title: "Rotate the webhook signing key", need: errandapi.RoleFull,
		desc: "Replace the instance's webhook signing key with a new one and return it. The next delivery is signed with the new key, so webhook receivers must be updated at once. Needs the full grant.",
	}, func(ctx context.Context, c *client.Client, in webhookKeyIn) (*errandapi.WebhookKeyResponse, string, error) {
		k, err := c.RotateWebhookKey(ctx, in.Instance)
		if err != nil {
			return nil, "", err
		}
		return &errandapi.WebhookKeyResponse{WebhookKey: k}, "rotated the webhook signing key of " + in.Instance + "; the new key is in webhookKey: update the receivers now", nil
	}),
}
