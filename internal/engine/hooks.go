package engine

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/deliver"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// maxHookBatch bounds one group commit of hook calls' tasks (at most 64
// KiB of payload each).
const maxHookBatch = 100

// HookReplayWindow is how far a signed hook call's timestamp may be from now
// (Standard Webhooks): an older (or newer) call is refused as a replay.
const HookReplayWindow = 5 * time.Minute

// Hook is a hook rule found by its URL, with its instance.
type Hook struct {
	Rule     *task.Trigger
	Instance *task.Instance
}

// HookFind finds the enabled hook rule of instance (a name) with token. The
// token is the capability: the URL alone lets a caller add tasks, unless
// the hook has a secret. Anything else (no such hook, a hook of another
// instance, a disabled one) is NOT_FOUND.
func (e *Engine) HookFind(ctx context.Context, instance, token string) (*Hook, error) {
	missing := task.Errorf(task.CodeNotFound, "no enabled hook of instance %s has this URL", task.Quote(instance))
	if !task.ValidID(token) { // no token errand makes: not worth a read
		return nil, missing
	}
	tr, err := e.store.TriggerGetHook(ctx, store.HookRef{Token: token})
	if task.IsCode(err, task.CodeNotFound) {
		return nil, missing
	}
	if err != nil {
		return nil, err
	}
	inst, err := e.store.InstanceGetByID(ctx, tr.InstanceID)
	if err != nil {
		return nil, err
	}
	if inst.Name != instance || tr.Kind != task.TriggerHook || !tr.Enabled {
		return nil, missing
	}
	return &Hook{Rule: tr, Instance: inst}, nil
}

// HookCall is one inbound call of a hook.
type HookCall struct {
	Body []byte
	// Header reads one request header (its first value): the protocol's
	// headers (Idempotency-Key, webhook-id, -timestamp, -signature).
	Header func(name string) string
	// Copied reads a header the rule copies into params.headers: every
	// value of a header sent more than once, joined with ", ". Header
	// when nil.
	Copied func(name string) string
	// URLs returns the URLs the sender may have called, query included,
	// as the request's Host and X-Forwarded-* headers allow (a proxy in
	// front changes them): Twilio signs the URL it called. Nil: none.
	URLs func() []string
}

// urls is c.URLs(), or none when the call has no way to say them.
func (c HookCall) urls() []string {
	if c.URLs == nil {
		return nil
	}
	return c.URLs()
}

// HookAdded is the outcome of a hook call: the task added, or the one an
// earlier call with the same Idempotency-Key (or signed message id: see
// verifyHook) added.
type HookAdded struct {
	TaskID    string
	Duplicate bool
	// Reply is set, and nothing added, when the call was a sender's check
	// of the URL, signed with the hook's secret (Slack's url_verification,
	// Zoom's endpoint.url_validation): the answer (200) is Reply.
	Reply any
	// Ack: the sender takes only a bare 200 as success, and the task was
	// added (TaskID, Duplicate) — a Slack-signed form (a slash command, an
	// interactive component's payload), for which Slack shows its user an
	// error on any other answer, and posts a body it gets as a message.
	Ack bool
	// Answer, when set, is the body of a 200 answer to a call whose task
	// was added (TaskID, Duplicate), for a sender that takes only its own
	// answer as received: a Discord interaction's deferred response.
	Answer any
	// OK: the task was added and the answer is the usual body with 200,
	// not 202, as a sender that takes only a 200 as received wants (Meta's
	// notifications, Dropbox's, X's).
	OK bool
	// Empty: the answer is 204 with no body, whether a task was added or
	// not (Discord's webhook events).
	Empty bool
	// EchoSecret, when set, answers Asana's handshake: 200 with it as
	// X-Hook-Secret and no body; nothing was added.
	EchoSecret string
	// Text, when set, answers a sender's signed check of the URL with it
	// as plain text (200); nothing was added (Twitch's challenge).
	Text string
}

// HookFire turns a call into a task of the hook's queue. With a secret the
// call must carry a valid signature (Standard Webhooks or a sender's own:
// verifyHook), else UNAUTHENTICATED. The body is the payload; the rule's
// selected headers join its params; Idempotency-Key (or, signed, the
// sender's message id: verifyHook) names the task within the rule
// (task.Trigger.HookInput), so a sender's retry adds nothing twice. Each
// task added counts on the rule's Fired (a duplicate does not). Slack's
// url_verification and Zoom's endpoint.url_validation, signed, add
// nothing: HookAdded.Reply answers them, as it answers Discord's PING
// (and Text Twitch's verification); a Slack-signed form is added and
// answered bare (HookAdded.Ack); Asana's handshake (asanaHandshake) adds
// nothing either. Senders that take only their own answer, or a 200, are
// answered so (HookAdded.Answer, OK, Empty).
func (e *Engine) HookFire(ctx context.Context, h *Hook, c HookCall) (*HookAdded, error) {
	tr := h.Rule
	if secret := c.Header(asanaSecretHeader); secret != "" {
		return e.asanaHandshake(ctx, h, secret)
	}
	var msgID string
	var ack bool
	var answer *HookAdded // how a sender's own call is answered once added
	if own := tr.HookSignature; tr.HookSecret != "" && own != nil {
		// The rule's own scheme alone: no sender's header is read.
		if err := verifyOwnSignature(tr.HookSecret, own, c, e.clock.Now()); err != nil {
			return nil, err
		}
		if own.IDHeader != "" {
			msgID = c.Header(own.IDHeader)
		}
	} else if tr.HookSecret != "" {
		var form string
		var err error
		if form, err = verifyHook(tr.HookSecret, c, e.clock.Now()); err != nil {
			return nil, err
		}
		msgID = errandapi.HookMessageID(c.Header, c.Body)
		switch form { // only a sender's own calls are read for its URL check
		case "slack":
			if ch := slackChallenge(c.Body); ch != "" {
				return &HookAdded{Reply: errandapi.HookChallenge{Challenge: ch}}, nil
			}
		case "zoom":
			if v := zoomValidation(tr.HookSecret, c.Body); v != nil {
				return &HookAdded{Reply: v}, nil
			}
		case "twitch":
			if ch := twitchChallenge(c); ch != "" {
				return &HookAdded{Text: ch}, nil
			}
		case "discord":
			var add bool
			if add, answer = discordCall(c.Body); !add {
				return answer, nil
			}
		case "github":
			if metaNotification(c) {
				answer = &HookAdded{OK: true}
			}
		case "dropbox", "x", "asana": // each retries any answer but a 200
			answer = &HookAdded{OK: true}
		}
		ack = form == "slack" && task.IsForm(c.Header("Content-Type"))
	}
	copied := c.Copied
	if copied == nil {
		copied = c.Header
	}
	in, err := tr.HookInput(c.Body, copied, c.Header("Idempotency-Key"), msgID)
	if err != nil {
		return nil, err
	}
	q, err := ruleQueue(ctx, e.store, tr)
	if task.IsCode(err, task.CodeNotFound) {
		return nil, e.hookRefused(ctx, h, err)
	}
	if err != nil {
		return nil, e.hookLog(h, err)
	}
	t, err := task.NewTask(q, in, e.now(), e.rules)
	if task.IsCode(err, task.CodeNoTarget) {
		// The sender cannot give the task a target: say whose the fix is.
		return nil, e.hookRefused(ctx, h, task.Errorf(task.CodeNoTarget, "the hook's queue %q has no target, so this call was not queued: "+
			"the rule's owner must give the queue a target (or make it a pull queue)", q.Name))
	}
	if err != nil {
		return nil, e.hookLog(h, err)
	}
	t.ID = e.newID()
	// The task and the rule's fired count go in one transaction, with the
	// calls of any hook that arrive while another batch is written (a
	// rule's count is one row: calls written one at a time would each wait
	// for the last one's commit); a name taken by a task that left before
	// we could read its id is tried again.
	var res store.TriggerFireResult
	for try := 0; try < 3; try++ {
		rs, errs := e.hookAdds.Do(ctx, []*store.TriggerHookAddParams{{
			Ref: store.TriggerRef{InstanceID: tr.InstanceID, ID: tr.ID}, Task: t, Now: e.now()}})
		if errs[0] != nil {
			return nil, errs[0]
		}
		if res = rs[0]; res.Err != "" || res.TaskID != "" {
			break
		}
	}
	switch {
	case res.Err != "":
		// The store recorded it on the rule, in the add's transaction.
		return nil, e.hookLog(h, task.Errorf(task.CodeNotFound, "%s", res.Err))
	case res.TaskID == "":
		return nil, task.Errorf(task.CodeUnavailable, "task name %q is being released: call again", t.Name)
	case res.TaskID != t.ID:
		return answered(answer, &HookAdded{TaskID: res.TaskID, Duplicate: true, Ack: ack}), nil
	}
	e.metrics.TasksAdded.Inc()
	e.usage.count(tr.InstanceID, usageAdded, 1)
	e.addedTo(q, []AddResult{{Task: t}})
	return answered(answer, &HookAdded{TaskID: t.ID, Ack: ack}), nil
}

// answered is added, answered as a sender's call wants (answer's Answer,
// OK and Empty; nil for the usual 202).
func answered(answer, added *HookAdded) *HookAdded {
	if answer != nil {
		added.Answer, added.OK, added.Empty = answer.Answer, answer.OK, answer.Empty
	}
	return added
}

// hookRefused records on the rule (errorCount, lastError) a call it could
// not turn into a task through no fault of the sender — its queue is gone
// or has no target — where the rule's owner, who must fix it, looks; it is
// logged and the caller is told too, even when the record fails (that is
// logged).
func (e *Engine) hookRefused(ctx context.Context, h *Hook, err error) error {
	now := e.now()
	ref := store.TriggerRef{InstanceID: h.Rule.InstanceID, ID: h.Rule.ID}
	if _, rerr := e.store.TriggerUpdate(ctx, ref, func(tr *task.Trigger) error {
		tr.RecordError(task.Recorded(err), now)
		return nil
	}); rerr != nil && !task.IsCode(rerr, task.CodeNotFound) {
		e.log.Warn("hook refusal not recorded on its rule", "instance", h.Instance.Name, "rule", h.Rule.ID, "reason", rerr)
	}
	return e.hookLog(h, err)
}

// hookLog logs a call the rule could not turn into a task.
func (e *Engine) hookLog(h *Hook, err error) error {
	e.log.Warn("hook call could not be queued", "instance", h.Instance.Name, "rule", h.Rule.ID, "queue", h.Rule.Queue, "reason", err)
	return err
}

// verifyHook checks the signature a call to a hook with a secret carries,
// in the form of the first sender whose header it sends
// (errandapi.HookSenderOf; a Standard Webhooks call by its webhook-id or
// -timestamp too), and returns the sender's name ("standard", a
// bodySignature's form, a stamped scheme's, "slack", "zoom", "frameio",
// "twilio", "sendgrid", "hubspot", "discord", "twitch", "webflow",
// "square", "gitlab", "mailgun" or "graph"). The sender's message id,
// which names the task, is errandapi.HookMessageID's:
//   - Standard Webhooks (webhook-id, webhook-timestamp, webhook-signature;
//     or svix-id, svix-timestamp, svix-signature, as Svix sends them for
//     Clerk, Resend and others): verifyStandard.
//   - A signature of the body alone (bodySignatures): GitHub's
//     X-Hub-Signature-256, "sha256=" and the hex HMAC-SHA256 of the body
//     keyed with the whole secret string (which the user gives GitHub as
//     the webhook's secret); Shopify's X-Shopify-Hmac-Sha256 (base64, the
//     app's client secret); WooCommerce's, Linear's, Sentry's, Typeform's,
//     Forgejo's, Gitea's, Gogs's, Todoist's, Razorpay's, Cal.com's,
//     Coinbase Commerce's, Vercel's (SHA-1), Notion's, X-Signature
//     (ClickUp, Lemon Squeezy; Segment's SHA-1), PagerDuty's (several, comma-separated,
//     one matching enough), and WebSub's X-Hub-Signature
//     ("<method>=<hex>": SHA-1 from Intercom, SHA-256 from Jira). None
//     carries a time, so no replay window: the sender's delivery id
//     (X-GitHub-Delivery, X-Shopify-Webhook-Id, X-Gitea-Delivery, Jira's
//     X-Atlassian-Webhook-Identifier …) names the task, so a redelivery (or
//     a replay with that id) adds nothing while the task is kept.
//   - GitLab's X-Gitlab-Token: the secret token itself, not a signature
//     (verifyGitLabToken); GitLab's Idempotency-Key names the task.
//   - Slack's X-Slack-Signature: "v0=" and the hex HMAC-SHA256 of
//     "v0:<X-Slack-Request-Timestamp>:<body>" keyed with the whole secret
//     string (the app's signing secret, given to errand), the timestamp
//     within HookReplayWindow. An Events API callback's event_id names
//     the task (errandapi.HookEventID), so Slack's retries add nothing.
//   - Stripe's Stripe-Signature: "t=<seconds>,v1=<hex>" (v1 may repeat),
//     the HMAC-SHA256 of "<t>.<body>" keyed with the whole secret string
//     (the endpoint's whsec_… signing secret, given to errand), t within
//     HookReplayWindow. The event's id in the body names the task
//     (errandapi.HookEventID): Stripe redelivers an event, newly signed,
//     for days.
//   - Calendly's Calendly-Webhook-Signature: Stripe's scheme under
//     Calendly's header name, keyed with the webhook signing key. The
//     body names the task (errandapi.HookBodyID): Calendly retries with
//     the same body.
//   - Paddle's Paddle-Signature: "ts=<seconds>;h1=<hex>", the HMAC-SHA256
//     of "<ts>:<body>" keyed with the notification destination's secret
//     key, ts within HookReplayWindow; the event_id in the body names the
//     task (errandapi.HookEventID).
//   - Zoom's x-zm-signature: Slack's scheme under Zoom's header names,
//     keyed with the app's secret token, x-zm-request-timestamp within
//     HookReplayWindow; the body names the task, as Calendly's does.
//   - Twilio's X-Twilio-Signature: the base64 HMAC-SHA1, keyed with the
//     whole secret string (the account's auth token), of the URL Twilio
//     called and a form's fields (deliver.SignTwilio), checked against
//     each of HookCall.URLs. Like GitHub's it carries no time: Twilio's
//     I-Twilio-Idempotency-Token names the task.
//   - SendGrid's X-Twilio-Email-Event-Webhook-Signature: an ECDSA
//     signature (P-256, SHA-256; base64 of its ASN.1) of
//     "<X-Twilio-Email-Event-Webhook-Timestamp><body>", checked with the
//     public key the secret holds (SendGrid's verification key: base64 of
//     its DER), the timestamp within HookReplayWindow: verifySendGrid. The
//     only scheme not keyed with a shared secret: the secret is public.
//   - HubSpot's X-HubSpot-Signature-v3: the base64 HMAC-SHA256, keyed with
//     the app's client secret, of "POST", the URL HubSpot called, the body
//     and X-HubSpot-Request-Timestamp (milliseconds, within
//     HookReplayWindow), checked against each of HookCall.URLs:
//     verifyHubSpot. A call carries a batch of events and no delivery id.
//   - Mailgun's signature, in the body rather than a header (a call with
//     no sender's header whose body has one: errandapi.HookMailgun): the
//     hex HMAC-SHA256 of the timestamp and the token, keyed with the HTTP
//     webhook signing key, the timestamp within HookReplayWindow:
//     verifyMailgun. It does not cover the event: the token names the task.
//   - Discord's X-Signature-Ed25519 (verifyDiscord: the secret is a public
//     key), Twitch's EventSub signature (verifyTwitch), Webflow's
//     (verifyWebflow), Square's (verifySquare: the URL and the body),
//     Frame.io's (Slack's scheme), Mux's (Stripe's), and Dropbox's, X's
//     and Asana's body signatures.
//   - Microsoft Graph's batch, which carries the secret as each
//     notification's clientState rather than a signature (a call with no
//     sender's header whose body is one): verifyGraph.
//
// A secret that is not a whsec_ key (task.ValidateHookSecret) checks all
// but Standard Webhooks signatures.
func verifyHook(secret string, c HookCall, now time.Time) (form string, err error) {
	if standardHeader(c, "id") != "" || standardHeader(c, "timestamp") != "" {
		// A Standard Webhooks call, its signature perhaps missing.
		return "standard", verifyStandard(secret, c, now)
	}
	s := errandapi.HookSenderOf(c.Header)
	if s == nil {
		if m := errandapi.HookMailgun(c.Header, c.Body); m != nil {
			return "mailgun", verifyMailgun(secret, m, now)
		}
		if states := graphClientStates(c.Body); states != nil {
			return "graph", verifyGraph(secret, states)
		}
		return "", task.Errorf(task.CodeUnauthenticated, "this hook is signed: send a Standard Webhooks signature (webhook-id, webhook-timestamp, webhook-signature), "+
			"GitHub's X-Hub-Signature-256, Slack's X-Slack-Signature, Stripe's Stripe-Signature, Calendly's Calendly-Webhook-Signature, Paddle's Paddle-Signature, Zoom's x-zm-signature, Twilio's X-Twilio-Signature, Shopify's X-Shopify-Hmac-Sha256, "+
			"SendGrid's X-Twilio-Email-Event-Webhook-Signature, HubSpot's X-HubSpot-Signature-v3, Discord's X-Signature-Ed25519, Twitch's Twitch-Eventsub-Message-Signature, Webflow's X-Webflow-Signature, Mux's Mux-Signature, Frame.io's X-Frameio-Signature, Square's X-Square-Hmacsha256-Signature, "+
			"GitLab's X-Gitlab-Token, Mailgun's signature in the body, "+
			"Microsoft Graph's clientState, "+
			"or the body signature of WooCommerce, Linear, Sentry, Typeform, Forgejo, Gitea, Gogs, Todoist, Razorpay, Cal.com, Coinbase Commerce, Vercel, Notion, "+
			"ClickUp, Lemon Squeezy or Segment (X-Signature), PagerDuty, Jira, Bitbucket or Intercom (X-Hub-Signature), Dropbox, X (X-Twitter-Webhooks-Signature) or Asana (X-Hook-Signature)")
	}
	switch s.Name {
	case "standard":
		err = verifyStandard(secret, c, now)
	case "slack":
		err = verifyV0(secret, c, "X-Slack-Signature", "X-Slack-Request-Timestamp", now)
	case "zoom":
		err = verifyV0(secret, c, "x-zm-signature", "x-zm-request-timestamp", now)
	case "frameio":
		err = verifyV0(secret, c, "X-Frameio-Signature", "X-Frameio-Request-Timestamp", now)
	case "twilio":
		err = verifyTwilio(secret, c)
	case "sendgrid":
		err = verifySendGrid(secret, c, now)
	case "hubspot":
		err = verifyHubSpot(secret, c, now)
	case "gitlab":
		err = verifyGitLabToken(secret, c)
	case "discord":
		err = verifyDiscord(secret, c, now)
	case "twitch":
		err = verifyTwitch(secret, c, now)
	case "webflow":
		err = verifyWebflow(secret, c, now)
	case "square":
		err = verifySquare(secret, c)
	default:
		if bs := bodySignatureNamed(s.Name); bs != nil {
			err = bs.verify(secret, c)
		} else if ss := stampedNamed(s.Name); ss != nil {
			err = ss.verify(secret, c, now)
		} else {
			err = task.Errorf(task.CodeInternal, "hook sender %q has no check", s.Name)
		}
	}
	return s.Name, err
}

// verifyTwilio checks an X-Twilio-Signature (see verifyHook) against each
// URL the call may have been made to: a form's fields are signed after
// the URL; any other body is signed by its SHA-256, which the URL carries
// as bodySHA256.
func verifyTwilio(secret string, c HookCall) error {
	var form url.Values
	if task.IsForm(c.Header("Content-Type")) {
		var err error
		if form, err = url.ParseQuery(string(c.Body)); err != nil {
			return task.Errorf(task.CodeUnauthenticated, "X-Twilio-Signature: the form does not parse: %v", err)
		}
	}
	sig := c.Header("X-Twilio-Signature")
	urls := c.urls()
	var bodyHash string // a body that is not a form is signed through it
	if form == nil {
		sum := sha256.Sum256(c.Body)
		bodyHash = hex.EncodeToString(sum[:])
	}
	for _, u := range urls {
		if form == nil {
			pu, err := url.Parse(u)
			if err != nil || !hexEqual(pu.Query().Get("bodySHA256"), bodyHash) {
				continue
			}
		}
		if hmac.Equal([]byte(deliver.SignTwilio(secret, u, form)), []byte(sig)) {
			return nil
		}
	}
	return task.Errorf(task.CodeUnauthenticated, "X-Twilio-Signature does not match this hook's secret and URL "+
		"(Twilio signs the URL it called: behind a proxy, pass on Host or X-Forwarded-Host and X-Forwarded-Proto)")
}

// slackChallenge is the challenge of Slack's url_verification request
// ({"type": "url_verification", "challenge": …}), "" for any other body.
func slackChallenge(body []byte) string {
	var v struct {
		Type      string `json:"type"`
		Challenge string `json:"challenge"`
	}
	if json.Unmarshal(body, &v) != nil || v.Type != "url_verification" {
		return ""
	}
	return v.Challenge
}

// verifyV0 checks Slack's scheme, which Zoom uses too under its own header
// names: sigHeader holds "v0=" and the hex HMAC-SHA256 of
// "v0:<ts>:<body>" keyed with the whole secret string (deliver.SignSlack),
// tsHeader the ts, seconds since the epoch, within HookReplayWindow.
func verifyV0(secret string, c HookCall, sigHeader, tsHeader string, now time.Time) error {
	sec, err := hookTime(c.Header(tsHeader), tsHeader, now)
	if err != nil {
		return err
	}
	sig, ok := strings.CutPrefix(c.Header(sigHeader), "v0=")
	if !ok || !hexEqual(sig, deliver.SignSlack(secret, sec, c.Body)[len("v0="):]) {
		return task.Errorf(task.CodeUnauthenticated, "%s does not match this hook's secret", sigHeader)
	}
	return nil
}

// zoomValidation is the answer to Zoom's endpoint.url_validation request
// ({"event": "endpoint.url_validation", "payload": {"plainToken": …}}): the
// plain token and its hex HMAC-SHA256 keyed with secret; nil for any other
// body.
func zoomValidation(secret string, body []byte) *errandapi.HookZoomValidation {
	var v struct {
		Event   string `json:"event"`
		Payload struct {
			PlainToken string `json:"plainToken"`
		} `json:"payload"`
	}
	if json.Unmarshal(body, &v) != nil || v.Event != "endpoint.url_validation" || v.Payload.PlainToken == "" {
		return nil
	}
	mac := deliver.SignBody(secret, []byte(v.Payload.PlainToken), sha256.New)
	return &errandapi.HookZoomValidation{PlainToken: v.Payload.PlainToken, EncryptedToken: hex.EncodeToString(mac)}
}

// hookTime reads a signature's time, seconds since the epoch in header
// name, and refuses one more than HookReplayWindow from now as a replay.
func hookTime(v, name string, now time.Time) (int64, error) {
	sec, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, task.Errorf(task.CodeUnauthenticated, "%s must be seconds since the epoch", name)
	}
	if err := inReplayWindow(time.Unix(sec, 0), name, now); err != nil {
		return 0, err
	}
	return sec, nil
}

// inReplayWindow refuses a signed call whose time at, read from header
// name, is more than HookReplayWindow from now either way.
func inReplayWindow(at time.Time, name string, now time.Time) error {
	if d := now.Sub(at); d > HookReplayWindow || d < -HookReplayWindow {
		return task.Errorf(task.CodeUnauthenticated, "%s is more than 5 minutes from now: refused as a replay", name)
	}
	return nil
}

// hookTimeMillis is hookTime for a header of milliseconds since the epoch
// (HubSpot's, Webflow's).
func hookTimeMillis(v, name string, now time.Time) (int64, error) {
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, task.Errorf(task.CodeUnauthenticated, "%s must be milliseconds since the epoch", name)
	}
	if err := inReplayWindow(time.UnixMilli(ms), name, now); err != nil {
		return 0, err
	}
	return ms, nil
}

// stamped is a signature scheme whose header holds a time and one or more
// signatures of it and the body: Stripe's "t=<seconds>,v1=<hex>" over
// "<t>.<body>" (Calendly's too, under its own header), Paddle's
// "ts=<seconds>;h1=<hex>" over "<ts>:<body>"; each the hex HMAC-SHA256
// keyed with the whole secret string, the time within HookReplayWindow.
type stamped struct {
	form                               string // the sender's name (errandapi.HookSender)
	header, sep, tsKey, sigKey, joiner string
}

// stampedSchemes are the stamped schemes verifyHook reads, by the sender's
// name (errandapi.HookSenders orders them).
var stampedSchemes = []stamped{
	{form: "stripe", header: "Stripe-Signature", sep: ",", tsKey: "t", sigKey: "v1", joiner: "."},
	{form: "calendly", header: "Calendly-Webhook-Signature", sep: ",", tsKey: "t", sigKey: "v1", joiner: "."},
	{form: "paddle", header: "Paddle-Signature", sep: ";", tsKey: "ts", sigKey: "h1", joiner: ":"},
	{form: "mux", header: "Mux-Signature", sep: ",", tsKey: "t", sigKey: "v1", joiner: "."},
}

// stampedNamed is the stamped scheme of the sender named form, or nil.
func stampedNamed(form string) *stamped {
	for i := range stampedSchemes {
		if stampedSchemes[i].form == form {
			return &stampedSchemes[i]
		}
	}
	return nil
}

// verify checks c's signature in the scheme (see verifyHook); any of
// several signatures may match, as while a sender rolls its secret.
func (s stamped) verify(secret string, c HookCall, now time.Time) error {
	var ts string
	var sigs []string
	for _, part := range strings.Split(c.Header(s.header), s.sep) {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case s.tsKey:
			ts = v
		case s.sigKey:
			sigs = append(sigs, v)
		}
	}
	if _, err := strconv.ParseInt(ts, 10, 64); err != nil || len(sigs) == 0 {
		return task.Errorf(task.CodeUnauthenticated, "%s must be %s=<seconds since the epoch>%s%s=<hex signature>", s.header, s.tsKey, s.sep, s.sigKey)
	}
	if _, err := hookTime(ts, s.header+"'s "+s.tsKey, now); err != nil {
		return err
	}
	want := hex.EncodeToString(deliver.SignBody(secret, append([]byte(ts+s.joiner), c.Body...), sha256.New))
	for _, sig := range sigs {
		if hexEqual(sig, want) {
			return nil
		}
	}
	return task.Errorf(task.CodeUnauthenticated, "%s does not match this hook's secret", s.header)
}

// hexEqual compares a hex signature sent (either case) with want (lower
// case) in constant time.
func hexEqual(sent, want string) bool {
	return hmac.Equal([]byte(strings.ToLower(sent)), []byte(want))
}

// standardHeader reads a Standard Webhooks header, "webhook-" and name, or
// else Svix's own name for it, "svix-" and name.
func standardHeader(c HookCall, name string) string {
	if v := c.Header("webhook-" + name); v != "" {
		return v
	}
	return c.Header("svix-" + name)
}

// verifyStandard checks a Standard Webhooks signature: HMAC-SHA256 keyed
// with the secret's bytes over "<webhook-id>.<webhook-timestamp>.<body>",
// sent base64 as one of the space-separated "v1,<sig>" of
// webhook-signature (deliver.SignStandard computes it). The svix- headers
// stand for the webhook- ones.
func verifyStandard(secret string, c HookCall, now time.Time) error {
	msgID, ts, sigs := standardHeader(c, "id"), standardHeader(c, "timestamp"), standardHeader(c, "signature")
	if msgID == "" || ts == "" || sigs == "" {
		return task.Errorf(task.CodeUnauthenticated, "this hook is signed: send webhook-id, webhook-timestamp and webhook-signature (Standard Webhooks)")
	}
	sec, err := hookTime(ts, "webhook-timestamp", now)
	if err != nil {
		return err
	}
	want, ok := deliver.SignStandard(secret, msgID, sec, c.Body)
	if !ok {
		return task.Errorf(task.CodeUnauthenticated, "this hook's secret is not a whsec_ key, so it checks the other senders' signatures (GitHub's, Stripe's, Slack's …), not Standard Webhooks'")
	}
	for _, sig := range strings.Fields(sigs) {
		if hmac.Equal([]byte(sig), []byte(want)) {
			return nil
		}
	}
	return task.Errorf(task.CodeUnauthenticated, "webhook-signature does not match this hook's secret")
}
