package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/errandhq/errand/client"
	"github.com/errandhq/errand/errandapi"
)

func newTriggersCmd() *cobra.Command {
	return group(&cobra.Command{
		Use:     "triggers",
		Aliases: []string{"trigger", "rules"},
		Short:   "List, create, change and delete trigger rules (schedules, hooks, chains)",
		Long: `A trigger rule adds tasks to a queue by itself: on a cron schedule (--cron), when
an HTTP request reaches its hook URL (--hook), or when a task of another queue ends
(--on-queue). Its tasks carry no target of their own: the queue needs one, or is a pull
queue. Every subcommand acts in one instance, given with --instance or ERRAND_INSTANCE.`,
		Example: `  errand triggers create -i jobs --queue reports --cron '0 6 * * 1-5' --time-zone Europe/Paris
  errand triggers create -i jobs --queue inbound --hook --secret whsec_…
  errand triggers create -i jobs --queue receipts --on-queue orders --on succeeded
  errand triggers list -i jobs
  errand triggers update RULE -i jobs --enabled=false
  errand triggers delete RULE -i jobs --yes`,
	}, newTriggersListCmd(), newTriggersGetCmd(), newTriggersCreateCmd(), newTriggersUpdateCmd(), newTriggersDeleteCmd())
}

func newTriggersListCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "list",
		Short: "List an instance's trigger rules",
		Long: `List an instance's rules, oldest first: kind, the queue they add to, whether they
are enabled, when they fire, how often they fired and failed. With --json:
{"triggers": [...]}, as the API answers.`,
		Example: `  errand triggers list -i jobs`,
		Args:    noArgs,
	}
	f := apiCmd(c, true, false)
	c.RunE = f.run(func(c *cobra.Command, cl *client.Client, _ []string) error {
		trs, err := cl.ListTriggers(c.Context(), f.instance)
		if err != nil {
			return err
		}
		if f.json {
			return printJSON(c.OutOrStdout(), errandapi.TriggerList{Triggers: trs})
		}
		if len(trs) == 0 {
			c.PrintErrf("no trigger rules in instance %s\n", f.instance)
			return nil
		}
		t := newTable(c.OutOrStdout(), "ID", "KIND", "QUEUE", "ENABLED", "FIRES", "FIRED", "ERRORS")
		for i := range trs {
			tr := &trs[i]
			t.row(tr.ID, tr.Kind, tr.Queue, tr.Enabled, fires(tr, f.url), tr.Fired, tr.ErrorCount)
		}
		return t.flush()
	})
	return c
}

// fires says when a rule adds a task: its schedule (and next tick), its
// hook's URL (on the node at base), or the queue and outcomes it watches.
func fires(tr *errandapi.Trigger, base string) string {
	switch {
	case tr.Schedule != nil:
		s := tr.Schedule.Cron + " " + tr.Schedule.TimeZone
		if tr.Schedule.NextTickAt != nil {
			s += ", next " + whenPtr(tr.Schedule.NextTickAt)
		}
		return s
	case tr.Hook != nil:
		if tr.Hook.Path == "" {
			return "POST to its hook (the path needs the write grant)"
		}
		return "POST " + strings.TrimSuffix(base, "/") + tr.Hook.Path
	case tr.Task != nil:
		return "a task of " + tr.Task.Queue + " " + strings.Join(tr.Task.On, " or ")
	}
	return "-"
}

func newTriggersGetCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "get ID",
		Short: "Show one trigger rule",
		Long: `Show one rule: its kind and queue, when it fires, its payload template and params,
how often it fired and its last error. With --json: {"trigger": {...}} as the API answers.`,
		Example: `  errand triggers get RULE -i jobs`,
		Args:    exactArgs("ID"),
	}
	f := apiCmd(c, true, false)
	c.RunE = f.run(func(c *cobra.Command, cl *client.Client, args []string) error {
		tr, err := cl.GetTrigger(c.Context(), f.instance, args[0])
		return showTrigger(c, f, tr, err)
	})
	return c
}

// showTrigger prints the rule a call answered, or returns its error.
func showTrigger(c *cobra.Command, f *apiFlags, tr *errandapi.Trigger, err error) error {
	if err != nil {
		return err
	}
	if f.json {
		return printJSON(c.OutOrStdout(), errandapi.TriggerResponse{Trigger: tr})
	}
	t := newTable(c.OutOrStdout(), "id", tr.ID)
	t.row("kind", tr.Kind)
	t.row("queue", tr.Queue)
	t.row("enabled", tr.Enabled)
	t.row("fires", fires(tr, f.url))
	if tr.Schedule != nil {
		t.row("lastTick", whenPtr(tr.Schedule.LastTickAt))
	}
	if tr.Hook != nil {
		secret := map[bool]string{true: "set (signed calls required: Standard Webhooks, GitHub, Slack, Stripe …)", false: "none"}[tr.Hook.HasSecret]
		if tr.Hook.HasSecret && tr.Hook.Signature != nil {
			secret = "set (signed calls required: the hook's own signature, below)"
		}
		t.row("hook secret", secret)
		t.row("hook headers", strings.Join(tr.Hook.Headers, ", "))
		if s := tr.Hook.Signature; s != nil {
			t.row("hook signature", hookSignatureWords(s))
		}
	}
	t.row("payload template", rawOr(tr.Payload, "-"))
	t.row("params", rawOr(tr.Params, "-"))
	t.row("priority", tr.Priority)
	t.row("fired", tr.Fired)
	t.row("errors", tr.ErrorCount)
	t.row("lastError", strPtr(tr.LastError))
	t.row("lastErrorAt", whenPtr(tr.LastErrorAt))
	t.row("created", when(tr.CreatedAt))
	return t.flush()
}

// rawOr is raw JSON as text, or none when it is absent or null.
func rawOr(raw json.RawMessage, none string) string {
	if len(raw) == 0 || string(raw) == "null" {
		return none
	}
	return string(raw)
}

func newTriggersCreateCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "create --queue QUEUE (--cron EXPR | --hook | --on-queue QUEUE)",
		Short: "Create a trigger rule",
		Long: `Create a rule that adds tasks to --queue (a queue of --instance): on a schedule
(--cron, 5 fields or @every 30s / @hourly …, in --time-zone, default UTC), on each POST to
its hook URL (--hook; with --secret the calls must be signed: Standard Webhooks, GitHub's
X-Hub-Signature-256, Slack's X-Slack-Signature, Stripe's Stripe-Signature, Calendly's,
Paddle's, Zoom's x-zm-signature, Twilio's X-Twilio-Signature, Shopify's X-Shopify-Hmac-Sha256,
SendGrid's, HubSpot's X-HubSpot-Signature-v3, Discord's X-Signature-Ed25519 (its public
key as --secret), Twitch's EventSub signature, Webflow's X-Webflow-Signature, Mux's,
Frame.io's, Square's, GitLab's X-Gitlab-Token, Mailgun's (in the
body), or WooCommerce's, Linear's, Sentry's, Typeform's, Forgejo's, Gitea's, Gogs's,
Todoist's, Razorpay's, Cal.com's, Coinbase Commerce's, Vercel's, Notion's, X-Signature's
(ClickUp, Lemon Squeezy, Segment), PagerDuty's, Dropbox's, X's or X-Hub-Signature's: Jira's,
Bitbucket's, Intercom's; Asana's (a hook without --secret takes the secret of Asana's
handshake); or Microsoft Graph's clientState; or, with --signature, the hook's own scheme alone: a header holding the HMAC of
the body (or of a template of it with the call's time and id) in hex or base64, after a prefix), or
when a task of --on-queue ends (--on succeeded, failed or both). Its tasks take --payload
as their payload (default: the request body, or the ended task's result), --params, and
--priority (0–9, default 0: a queue's due tasks of a higher priority go first). The node
checks every value and names the one it refuses. With --json: {"trigger": {...}}.`,
		Example: `  errand triggers create -i jobs --queue reports --cron '0 6 * * 1-5' --time-zone Europe/Paris --payload '{"report":"daily"}'
  errand triggers create -i jobs --queue inbound --hook --header X-GitHub-Event --priority 5
  errand triggers create -i jobs --queue receipts --on-queue orders --on succeeded`,
		Args: noArgs,
	}
	tf := addTriggerFlags(c, false)
	f := apiCmd(c, true, false)
	f.fields = triggerFields
	c.RunE = f.run(func(c *cobra.Command, cl *client.Client, _ []string) error {
		req, err := tf.request(c, f.instance)
		if err != nil {
			return err
		}
		if req.Queue == nil {
			return usageErrorf("--queue is required: the queue the rule adds tasks to")
		}
		if req.Schedule == nil && req.Hook == nil && req.Task == nil {
			return usageErrorf("give the rule's kind: --cron EXPR, --hook or --on-queue QUEUE")
		}
		tr, err := cl.CreateTrigger(c.Context(), f.instance, req)
		if err != nil {
			return err
		}
		if f.json {
			return printJSON(c.OutOrStdout(), errandapi.TriggerResponse{Trigger: tr})
		}
		return printf(c, "created %s rule %s adding to %s; it fires on: %s\n", tr.Kind, tr.ID, tr.Queue, fires(tr, f.url))
	})
	return c
}

func newTriggersUpdateCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "update ID",
		Short: "Change a trigger rule",
		Long: `Change only what is given; the kind never changes (a schedule's flags on a
schedule, a hook's on a hook, a chain's on a chain). --payload, --params and --secret are
cleared with "none", --header with "none". --enabled=false stops the rule, --enabled
starts it again. With --json: {"trigger": {...}} as the API answers.`,
		Example: `  errand triggers update RULE -i jobs --cron '@every 10m'
  errand triggers update RULE -i jobs --enabled=false
  errand triggers update RULE -i jobs --payload none`,
		Args: exactArgs("ID"),
	}
	tf := addTriggerFlags(c, true)
	f := apiCmd(c, true, false)
	f.fields = triggerFields
	c.RunE = f.run(func(c *cobra.Command, cl *client.Client, args []string) error {
		req, err := tf.request(c, f.instance)
		if err != nil {
			return err
		}
		if isEmptyTriggerRequest(req) {
			return usageErrorf("nothing to change: give at least one flag (see --help)")
		}
		tr, err := cl.UpdateTrigger(c.Context(), f.instance, args[0], req)
		return showTrigger(c, f, tr, err)
	})
	return c
}

func newTriggersDeleteCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "delete ID --yes",
		Short: "Delete a trigger rule",
		Long: `Delete a rule: it adds no task from then on (the tasks it added stay). It cannot
be undone, so --yes is required.`,
		Example: `  errand triggers delete RULE -i jobs --yes`,
		Args:    exactArgs("ID"),
	}
	yes := confirmFlag(c)
	f := apiCmd(c, true, false)
	c.RunE = f.run(func(c *cobra.Command, cl *client.Client, args []string) error {
		if !*yes {
			return needYes("delete of rule " + args[0])
		}
		if err := cl.DeleteTrigger(c.Context(), f.instance, args[0]); err != nil {
			return err
		}
		if f.json {
			return printJSON(c.OutOrStdout(), map[string]bool{"deleted": true})
		}
		return printf(c, "deleted rule %s\n", args[0])
	})
	return c
}

// triggerFlags are the fields of triggers create and update; every value
// is checked by the node, which names the field it refuses.
type triggerFlags struct {
	id, queue, cron, timeZone, secret, onQueue, payload, params string
	signature                                                   string
	headers, on                                                 []string
	hook, enabled                                               bool
	priority                                                    int
}

func addTriggerFlags(c *cobra.Command, update bool) *triggerFlags {
	t := &triggerFlags{}
	fs := c.Flags()
	clear := ""
	if update {
		clear = `; "none" clears it`
	} else {
		fs.StringVar(&t.id, "id", "", "the rule's id (default: a new one)")
		fs.BoolVar(&t.hook, "hook", false, "a hook rule: each POST to its URL adds a task")
	}
	fs.StringVar(&t.queue, "queue", "", "the queue the rule adds tasks to (a queue of --instance)")
	fs.StringVar(&t.cron, "cron", "", "a schedule rule's cron: 5 fields, or @every 30s, @hourly …")
	fs.StringVar(&t.timeZone, "time-zone", "", "the schedule's IANA time zone (default UTC)")
	fs.StringVar(&t.secret, "secret", "", "a hook's secret (whsec_…, or 16–256 characters for GitHub or Slack): its calls must be signed"+clear)
	fs.StringSliceVar(&t.headers, "header", nil, "a request header a hook copies into the task's params (repeat for more)"+clear)
	fs.StringVar(&t.signature, "signature", "", "a hook's own signature scheme, for a sender errand does not read by name (needs --secret): "+
		"header=NAME[,hash=sha1|sha256|sha384|sha512][,encoding=hex|base64][,prefix=TEXT][,id-header=NAME]"+
		"[,timestamp-header=NAME][,signed=TEMPLATE of {timestamp}, {id} and {body}, default {timestamp}.{body} with a timestamp header], "+
		"e.g. header=X-Acme-Signature,prefix=sha256=,id-header=X-Acme-Delivery or header=X-Acme-Signature,prefix=v0=,timestamp-header=X-Acme-Timestamp,signed=v0:{timestamp}:{body}"+clear)
	fs.StringVar(&t.onQueue, "on-queue", "", "a chain rule: the queue whose tasks' ends fire it")
	fs.StringSliceVar(&t.on, "on", nil, "a chain rule's outcomes: succeeded, failed or both (default succeeded)")
	fs.StringVar(&t.payload, "payload", "", "the payload template of the tasks it adds, any JSON"+clear)
	fs.StringVar(&t.params, "params", "", "the params of the tasks it adds, a JSON object"+clear)
	fs.IntVar(&t.priority, "priority", 0, "the priority of the tasks it adds, 0–9 (higher goes first)")
	fs.BoolVar(&t.enabled, "enabled", true, "whether the rule fires (--enabled=false stops it)")
	return t
}

// request is the body of the create or PATCH: only the flags given.
func (t *triggerFlags) request(c *cobra.Command, instance string) (errandapi.TriggerRequest, error) {
	var r errandapi.TriggerRequest
	set := c.Flags().Changed
	r.ID = t.id
	queueRef := func(q string) *string {
		if !strings.Contains(q, "/") {
			q = instance + "/" + q
		}
		return &q
	}
	if set("queue") {
		r.Queue = queueRef(t.queue)
	}
	if set("cron") || set("time-zone") {
		r.Schedule = &errandapi.TriggerScheduleSpec{}
		if set("cron") {
			r.Schedule.Cron = &t.cron
		}
		if set("time-zone") {
			r.Schedule.TimeZone = &t.timeZone
		}
	}
	if t.hook || set("secret") || set("header") || set("signature") {
		r.Hook = &errandapi.TriggerHookSpec{}
		if set("signature") {
			sig, err := parseHookSignature(t.signature)
			if err != nil {
				return r, err
			}
			r.Hook.Signature = sig
		}
		if set("secret") {
			r.Hook.Secret = nullableString(t.secret)
		}
		if set("header") {
			h := t.headers
			if len(h) == 1 && h[0] == "none" {
				h = []string{}
			}
			r.Hook.Headers = &h
		}
	}
	if set("on-queue") || set("on") {
		r.Task = &errandapi.TriggerTaskSpec{}
		if set("on-queue") {
			r.Task.Queue = queueRef(t.onQueue)
		}
		if set("on") {
			r.Task.On = &t.on
		}
	}
	if kinds := countTrue(r.Schedule != nil, r.Hook != nil, r.Task != nil); kinds > 1 {
		return r, usageErrorf("a rule has one kind: give the flags of a schedule (--cron, --time-zone), a hook (--hook, --secret, --header, --signature) or a chain (--on-queue, --on), not of several")
	}
	for _, js := range []struct {
		flag, val string
		dst       *json.RawMessage
	}{{"payload", t.payload, &r.Payload}, {"params", t.params, &r.Params}} {
		if !set(js.flag) {
			continue
		}
		switch {
		case js.val == "none":
			*js.dst = json.RawMessage("null")
		case !json.Valid([]byte(js.val)):
			return r, usageErrorf("--%s is not JSON: %s", js.flag, short(js.val, 40))
		default:
			*js.dst = json.RawMessage(js.val)
		}
	}
	if set("priority") {
		r.Priority = &t.priority
	}
	if set("enabled") {
		r.Enabled = &t.enabled
	}
	return r, nil
}

// parseHookSignature reads --signature: "none" removes the scheme, else
// comma-separated key=value pairs (header, hash, encoding, prefix,
// id-header, timestamp-header, signed); the node checks the values.
func parseHookSignature(v string) (errandapi.Nullable[errandapi.HookSignature], error) {
	if v == "none" {
		return errandapi.Null[errandapi.HookSignature](), nil
	}
	var s errandapi.HookSignature
	for _, kv := range strings.Split(v, ",") {
		k, val, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			return errandapi.Nullable[errandapi.HookSignature]{}, usageErrorf("--signature: %q is not key=value (keys: %s)", short(kv, 40), signatureKeys)
		}
		switch k {
		case "header":
			s.Header = val
		case "hash":
			s.Hash = val
		case "encoding":
			s.Encoding = val
		case "prefix":
			s.Prefix = val
		case "id-header", "idHeader":
			s.IDHeader = val
		case "timestamp-header", "timestampHeader":
			s.TimestampHeader = val
		case "signed":
			s.Signed = val
		default:
			return errandapi.Nullable[errandapi.HookSignature]{}, usageErrorf("--signature: unknown key %q (keys: %s)", short(k, 40), signatureKeys)
		}
	}
	return errandapi.Value(s), nil
}

// signatureKeys are --signature's keys.
const signatureKeys = "header, hash, encoding, prefix, id-header, timestamp-header, signed"

// hookSignatureWords is a hook's own signature scheme in words.
func hookSignatureWords(s *errandapi.HookSignature) string {
	what := "the body"
	if s.Signed != "" {
		what = fmt.Sprintf("%q", s.Signed)
	}
	w := fmt.Sprintf("%s: %s HMAC-%s of %s", s.Header, s.Encoding, strings.ToUpper(s.Hash), what)
	if s.Prefix != "" {
		w += fmt.Sprintf(" after %q", s.Prefix)
	}
	if s.TimestampHeader != "" {
		w += "; the time in " + s.TimestampHeader
	}
	if s.IDHeader != "" {
		w += "; " + s.IDHeader + " names the task"
	}
	return w
}

// nullableString is a flag's value, "none" being null.
func nullableString(s string) errandapi.Nullable[string] {
	if s == "none" {
		return errandapi.Null[string]()
	}
	return errandapi.Value(s)
}

func countTrue(bs ...bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

// isEmptyTriggerRequest reports whether r changes nothing.
func isEmptyTriggerRequest(r errandapi.TriggerRequest) bool {
	return r.Queue == nil && r.Schedule == nil && r.Hook == nil && r.Task == nil &&
		r.Payload == nil && r.Params == nil && r.Priority == nil && r.Enabled == nil
}

// triggerFields names the flags of triggers create and update that set the
// API's fields (see fieldFlags).
var triggerFields = fieldFlags{
	"id": {"id"}, "queue": {"queue"}, "schedule": {"cron", "time-zone"}, "schedule.cron": {"cron"},
	"schedule.timeZone": {"time-zone"}, "hook": {"hook", "secret", "header", "signature"}, "hook.secret": {"secret"},
	"hook.signature": {"signature"}, "hook.signature.header": {"signature"}, "hook.signature.hash": {"signature"},
	"hook.signature.encoding": {"signature"}, "hook.signature.prefix": {"signature"}, "hook.signature.idHeader": {"signature"},
	"hook.headers": {"header"}, "task": {"on-queue", "on"}, "task.queue": {"on-queue"}, "task.on": {"on"},
	"payload": {"payload"}, "params": {"params"}, "priority": {"priority"}, "enabled": {"enabled"},
}
