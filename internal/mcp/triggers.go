package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/errandhq/errand/client"
	"github.com/errandhq/errand/errandapi"
)

// The trigger tools: CRUD of trigger rules (docs/triggers.md) over the
// client's ListTriggers, GetTrigger, CreateTrigger, UpdateTrigger and
// DeleteTrigger.

// triggerArg names one rule; tools embed it.
type triggerArg struct {
	Instance string `json:"instance" jsonschema:"The tasks instance the rule belongs to, e.g. \"jobs\"."`
	ID       string `json:"id" jsonschema:"The rule's id, as tasks_create_trigger or tasks_list_triggers returned it."`
}

type scheduleIn struct {
	Cron     *string `json:"cron,omitempty" jsonschema:"5 fields (minute hour day-of-month month day-of-week, e.g. \"0 9 * * 1-5\") or a descriptor: @yearly, @monthly, @weekly, @daily, @hourly, or @every <Go duration ≥ 1s> such as \"@every 30s\". No seconds field. Each tick adds exactly one task."`
	TimeZone *string `json:"timeZone,omitempty" jsonschema:"The IANA time zone the cron runs in, e.g. \"Europe/Paris\"; default UTC."`
}

type hookIn struct {
	Secret  errandapi.Nullable[string] `json:"secret,omitzero" jsonschema:"Optional secret: calls must then be signed. A Standard Webhooks key (\"whsec_\" + base64 of 24–64 bytes) checks Standard Webhooks signatures (webhook-id, webhook-timestamp, webhook-signature) and the others; any other 16–256 printable characters (a secret given to GitHub, Slack's signing secret, Twilio's auth token, a Shopify app's client secret) check GitHub's X-Hub-Signature-256, Slack's X-Slack-Signature, Stripe's Stripe-Signature (give Stripe's whsec_ signing secret here), Calendly's Calendly-Webhook-Signature, Paddle's Paddle-Signature, Zoom's x-zm-signature, Twilio's X-Twilio-Signature, Shopify's X-Shopify-Hmac-Sha256, SendGrid's and HubSpot's signatures, Discord's X-Signature-Ed25519 (give the application's public key here), Twitch's Twitch-Eventsub-Message-Signature, Webflow's X-Webflow-Signature, Mux's Mux-Signature, Frame.io's X-Frameio-Signature, Square's X-Square-Hmacsha256-Signature, Mailgun's signature in the body, GitLab's X-Gitlab-Token (the token itself) and the body signatures of WooCommerce, Linear, Sentry, Typeform, Forgejo, Gitea, Gogs, Todoist, Razorpay, Cal.com, Coinbase Commerce, Vercel, Notion, X-Signature (ClickUp, Lemon Squeezy; Segment's SHA-1), PagerDuty's X-PagerDuty-Signature, Dropbox's X-Dropbox-Signature, X's X-Twitter-Webhooks-Signature and X-Hub-Signature (Jira's and Bitbucket's sha256, Intercom's sha1); Microsoft Graph's notifications carry it as their clientState. Asana's handshake gives a hook without a secret its secret (Asana's X-Hook-Signature). Never shown again; null removes it."`
	Headers *[]string                  `json:"headers,omitempty" jsonschema:"Request headers (up to 20, e.g. \"X-GitHub-Event\") copied into the task's params as params.headers."`
	// Signature's schema is hookSignatureDoc's (typeSchemas).
	Signature errandapi.Nullable[errandapi.HookSignature] `json:"signature,omitzero"`
}

// hookSignatureDoc describes errandapi.HookSignature for the tools'
// schemas: a hook's own signature scheme, for a sender errand does not
// read by name.
type hookSignatureDoc struct {
	Header   string `json:"header" jsonschema:"The hook's own signature scheme (needs secret; null removes it): the header holding the HMAC of the raw body keyed with the whole secret string. With it a call is checked by this scheme alone."`
	Hash     string `json:"hash,omitempty" jsonschema:"The HMAC's hash: sha1, sha256 (default), sha384 or sha512."`
	Encoding string `json:"encoding,omitempty" jsonschema:"The digest's encoding: hex (default, either case) or base64 (standard or URL alphabet, padded or not)."`
	Prefix   string `json:"prefix,omitempty" jsonschema:"What comes before the digest, e.g. \"sha256=\" (matched in any case); none by default."`
	IDHeader string `json:"idHeader,omitempty" jsonschema:"The header whose value (the sender's delivery id) names the task, so a redelivery adds nothing twice; none by default."`
	// TimestampHeader and Signed: a scheme that signs the call's time.
	TimestampHeader string `json:"timestampHeader,omitempty" jsonschema:"The header holding the call's time, Unix seconds or milliseconds; a call more than 5 minutes off is refused. With it the signed content is \"{timestamp}.{body}\" unless signed says otherwise. None by default."`
	Signed          string `json:"signed,omitempty" jsonschema:"What is signed: a template of {timestamp} (needs timestampHeader), {id} (needs idHeader) and {body}, ending with {body}, each placeholder but {body} followed by a separator character (one the id may not hold), e.g. \"v0:{timestamp}:{body}\"; the body alone by default."`
}

type onTaskIn struct {
	Queue *string   `json:"queue,omitempty" jsonschema:"The watched queue, \"<instance>/<queue>\" (a bare queue name means this instance's)."`
	On    *[]string `json:"on,omitempty" jsonschema:"The outcomes that fire the rule: \"succeeded\", \"failed\" (its attempts spent, not a retry) or both; default [\"succeeded\"]."`
}

// ruleFields are the fields of a rule a create sets and an update changes.
type ruleFields struct {
	Params   json.RawMessage `json:"params,omitempty" jsonschema:"A JSON object the rule's tasks receive as their params (beside a hook's copied headers); null clears it."`
	Payload  json.RawMessage `json:"payload,omitempty" jsonschema:"The payload template: a schedule rule's tasks carry it as their payload; a hook's empty call gets it; a task rule puts it in its payload as template. Any JSON; null clears it."`
	Priority *int            `json:"priority,omitempty" jsonschema:"The priority of the tasks the rule adds, 0–9 (default 0): a queue's due tasks of a higher priority are delivered or leased first."`
	Enabled  *bool           `json:"enabled,omitempty" jsonschema:"A disabled rule adds nothing (a disabled hook answers NOT_FOUND). Default true."`
	Schedule *scheduleIn     `json:"schedule,omitempty" jsonschema:"A schedule rule: cron and time zone. Exactly one of schedule, hook and task on create; an update may change only the rule's own kind."`
	Hook     *hookIn         `json:"hook,omitempty" jsonschema:"A hook rule: POST <errand>/v1/hooks/{instance}/{token} (the rule's hook.path, no API key needed) adds a task whose payload is the JSON body (or, for a form sent as application/x-www-form-urlencoded, {\"field\": [\"value\"]}). Give {} for a hook without secret or headers."`
	Task     *onTaskIn       `json:"task,omitempty" jsonschema:"A task (chain) rule: when a task of the watched queue finishes in one of the outcomes, a task is added whose payload describes the finished one ({task, result or lastError, payload, template}). Chains stop at depth 8 (DEPTH_EXCEEDED, recorded on the rule)."`
}

type createTriggerIn struct {
	Instance string `json:"instance" jsonschema:"The tasks instance of the rule, e.g. \"jobs\"."`
	Queue    string `json:"queue" jsonschema:"The queue the rule adds tasks to, \"<instance>/<queue>\" of this instance (a bare queue name means this instance's). It must exist and be a pull queue or have a target (else NO_TARGET)."`
	ruleFields
}

type updateTriggerIn struct {
	triggerArg
	Queue string `json:"queue,omitempty" jsonschema:"Move the rule to another queue of the instance, \"<instance>/<queue>\" (a bare queue name means this instance's)."`
	ruleFields
}

type deleteTriggerIn struct {
	triggerArg
	Confirm bool `json:"confirm,omitempty" jsonschema:"Must be true: the rule is gone for good (a hook rule's URL stops adding tasks at once). Ask the user before setting it."`
}

// shapeRule limits task.on to the two outcomes.
func shapeRule(s *jsonschema.Schema) {
	if on := s.Properties["task"].Properties["on"]; on != nil && on.Items != nil {
		on.Items.Enum = []any{"succeeded", "failed"}
	}
	shapePriority(s.Properties["priority"])
}

// shapePriority bounds a task priority's schema to 0–MaxPriority.
func shapePriority(p *jsonschema.Schema) {
	lo, hi := 0.0, float64(errandapi.MaxPriority)
	p.Minimum, p.Maximum = &lo, &hi
}

var triggerTools = []tool{
	define(spec{
		name: "tasks_list_triggers", title: "List trigger rules", need: errandapi.RoleRead, readOnly: true, idempotent: true,
		desc: "List an instance's trigger rules, oldest first: schedules (cron), hooks (inbound HTTP) and task rules (chains), each with what it did (fired, errorCount, lastError).",
	}, func(ctx context.Context, c *client.Client, in instanceArg) (*errandapi.TriggerList, string, error) {
		ts, err := c.ListTriggers(ctx, in.Instance)
		if err != nil {
			return nil, "", err
		}
		parts := make([]string, len(ts))
		for i := range ts {
			parts[i] = triggerText(&ts[i])
		}
		summary := fmt.Sprintf("%d trigger rules in %s", len(ts), in.Instance)
		if len(ts) > 0 {
			summary += ": " + strings.Join(parts, "; ")
		}
		return &errandapi.TriggerList{Triggers: ts}, summary, nil
	}),
	define(spec{
		name: "tasks_get_trigger", title: "Get a trigger rule", need: errandapi.RoleRead, readOnly: true, idempotent: true,
		desc: "Get one trigger rule: its kind and settings, what it did (fired, errorCount, lastError, lastErrorAt), a schedule's lastTickAt and nextTickAt, a hook's path.",
	}, oneTrigger(func(ctx context.Context, c *client.Client, in triggerArg) (*errandapi.Trigger, error) {
		return c.GetTrigger(ctx, in.Instance, in.ID)
	}, "")),
	define(spec{
		name: "tasks_create_trigger", title: "Create a trigger rule", need: errandapi.RoleFull,
		desc:  "Create a rule that adds tasks to a queue as things happen: exactly one of schedule (a cron tick), hook (a call of its URL) or task (a task of a watched queue finishing). Needs the full grant. A hook rule's URL is a capability: anyone who has it can add tasks, so show it only to the user.",
		shape: shapeRule,
	}, oneTrigger(func(ctx context.Context, c *client.Client, in createTriggerIn) (*errandapi.Trigger, error) {
		req := in.ruleFields.request(in.Instance)
		req.Queue = qualified(in.Instance, in.Queue)
		return c.CreateTrigger(ctx, in.Instance, req)
	}, "created ")),
	define(spec{
		name: "tasks_update_trigger", title: "Change a trigger rule", need: errandapi.RoleFull, idempotent: true, patch: true,
		desc:    "Change a trigger rule: only the fields given change; the kind never does. Disable a rule with enabled: false. Needs the full grant.",
		shape:   shapeRule,
		refused: otherKindFirst,
	}, oneTrigger(func(ctx context.Context, c *client.Client, in updateTriggerIn) (*errandapi.Trigger, error) {
		req := in.ruleFields.request(in.Instance)
		if in.Queue != "" {
			req.Queue = qualified(in.Instance, in.Queue)
		}
		return c.UpdateTrigger(ctx, in.Instance, in.ID, req)
	}, "changed ")),
	define(spec{
		name: "tasks_delete_trigger", title: "Delete a trigger rule", need: errandapi.RoleFull, destructive: true,
		desc: "Delete a trigger rule for good: a schedule stops, a hook's URL answers NOT_FOUND, a task rule's pending chain events go with it. Tasks it added stay. Needs confirm: true and the full grant.",
	}, func(ctx context.Context, c *client.Client, in deleteTriggerIn) (*errandapi.TriggerDeleteResponse, string, error) {
		if !in.Confirm {
			return nil, "", refuse(errandapi.CodeConfirmRequired, "deleting trigger rule %s of %s cannot be undone: confirm must be true", errandapi.Quote(in.ID), errandapi.Quote(in.Instance))
		}
		if err := c.DeleteTrigger(ctx, in.Instance, in.ID); err != nil {
			return nil, "", err
		}
		return &errandapi.TriggerDeleteResponse{Deleted: true}, fmt.Sprintf("deleted trigger rule %s of %s", in.ID, in.Instance), nil
	}),
}

// otherKindFirst answers a change refused for a field inside a kind's
// block ({"task": {"on": null}}) as the API answers it: when the rule is
// of another kind, the refusal is that the block has no place in this
// rule, whatever it holds. The rule is read only for such a refusal, and
// the API's own words come from the API: the block sent empty, which a
// rule of another kind refuses and which changes nothing.
func otherKindFirst(ctx context.Context, c *client.Client, args json.RawMessage, err error) error {
	var e *errandapi.Error
	if !errors.As(err, &e) || e.Code != errandapi.CodeInvalidArgument {
		return err
	}
	field, _, _ := strings.Cut(e.Message, ": ")
	block, _, _ := strings.Cut(field, ".")
	block, _, _ = strings.Cut(block, "[")
	kind := errandapi.TriggerKind(block)
	var req errandapi.TriggerRequest // the block, empty
	switch kind {
	case errandapi.KindSchedule:
		req.Schedule = &errandapi.TriggerScheduleSpec{}
	case errandapi.KindHook:
		req.Hook = &errandapi.TriggerHookSpec{}
	case errandapi.KindTask:
		req.Task = &errandapi.TriggerTaskSpec{}
	default:
		return err
	}
	var ref struct{ Instance, ID string }
	if json.Unmarshal(args, &ref) != nil || ref.Instance == "" || ref.ID == "" {
		return err
	}
	if tr, gerr := c.GetTrigger(ctx, ref.Instance, ref.ID); gerr != nil || tr.Kind == kind {
		return err
	}
	if _, perr := c.UpdateTrigger(ctx, ref.Instance, ref.ID, req); perr != nil {
		return perr
	}
	return err
}

// request is the API body of f; queues are qualified with instance.
func (f ruleFields) request(instance string) errandapi.TriggerRequest {
	req := errandapi.TriggerRequest{Params: f.Params, Payload: f.Payload, Priority: f.Priority, Enabled: f.Enabled}
	if f.Schedule != nil {
		req.Schedule = &errandapi.TriggerScheduleSpec{Cron: f.Schedule.Cron, TimeZone: f.Schedule.TimeZone}
	}
	if f.Hook != nil {
		req.Hook = &errandapi.TriggerHookSpec{Secret: f.Hook.Secret, Headers: f.Hook.Headers, Signature: f.Hook.Signature}
	}
	if f.Task != nil {
		req.Task = &errandapi.TriggerTaskSpec{On: f.Task.On}
		if f.Task.Queue != nil {
			req.Task.Queue = qualified(instance, *f.Task.Queue)
		}
	}
	return req
}

// qualified is a rule's queue as the API takes it, "<instance>/<queue>":
// a bare queue name is taken as the instance's own (a name with a slash
// goes as is, for the API to check).
func qualified(instance, queue string) *string {
	if !strings.Contains(queue, "/") {
		queue = instance + "/" + queue
	}
	return &queue
}

// oneTrigger is a tool over a call that answers one rule.
func oneTrigger[In any](call func(context.Context, *client.Client, In) (*errandapi.Trigger, error), prefix string) func(context.Context, *client.Client, In) (*errandapi.TriggerResponse, string, error) {
	return func(ctx context.Context, c *client.Client, in In) (*errandapi.TriggerResponse, string, error) {
		tr, err := call(ctx, c, in)
		if err != nil {
			return nil, "", err
		}
		if tr == nil {
			return nil, "", fmt.Errorf("the server answered no trigger rule")
		}
		return &errandapi.TriggerResponse{Trigger: tr}, prefix + triggerText(tr), nil
	}
}

// triggerText is one rule in a sentence: id, kind and what fires it,
// queue, state, counts, last error.
func triggerText(tr *errandapi.Trigger) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s rule %s → %s", tr.Kind, tr.ID, tr.Queue)
	switch {
	case tr.Schedule != nil:
		fmt.Fprintf(&b, " (cron %q %s", tr.Schedule.Cron, tr.Schedule.TimeZone)
		if tr.Schedule.NextTickAt != nil {
			fmt.Fprintf(&b, ", next tick %s", when(*tr.Schedule.NextTickAt))
		}
		b.WriteString(")")
	case tr.Hook != nil:
		if tr.Hook.Path == "" {
			b.WriteString(" (a hook whose URL only keys with write on the instance see")
		} else {
			fmt.Fprintf(&b, " (POST %s on the errand server, no API key", tr.Hook.Path)
		}
		if tr.Hook.HasSecret {
			b.WriteString(", signed")
		}
		if s := tr.Hook.Signature; s != nil {
			fmt.Fprintf(&b, " with %s", s.Header)
		}
		b.WriteString(")")
	case tr.Task != nil:
		fmt.Fprintf(&b, " (when a task of %s is %s)", tr.Task.Queue, strings.Join(tr.Task.On, " or "))
	}
	if !tr.Enabled {
		b.WriteString(", disabled")
	}
	fmt.Fprintf(&b, ", fired %d", tr.Fired)
	if tr.ErrorCount > 0 {
		fmt.Fprintf(&b, ", %d errors", tr.ErrorCount)
		if tr.LastError != nil {
			fmt.Fprintf(&b, ", last: %s", *tr.LastError)
		}
	}
	return b.String()
}
