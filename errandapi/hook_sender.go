package errandapi

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"slices"
	"strings"
)

// HookSender is a sender whose signed calls a hook with a secret reads:
// the header that marks its call and holds its signature, and what in a
// call names the task it adds, so that the sender's redelivery adds
// nothing twice.
type HookSender struct {
	// Name is the sender's (or scheme's) name: "standard", "github",
	// "stripe" …
	Name string
	// Header holds the sender's signature; a call that sends it is read as
	// this sender's.
	Header string
	// IDHeader, when not "", is the header whose value names the task
	// (webhook-id, X-GitHub-Delivery …).
	IDHeader string
	// EventID: the event id in the body names the task (HookEventID).
	EventID bool
	// BatchID, when not "", is the id field of each event of a body that
	// is a batch of them (a JSON array): the set of the batch's ids names
	// the task (HookBatchID).
	BatchID string
	// BodyID: the body itself names the task (HookBodyID), for a sender
	// that sends no id but retries with the same body, signed anew, whose
	// event carries its time to the millisecond (Calendly's created_at,
	// Zoom's event_ts, a Webflow form submission's submittedAt), so that
	// two events never send one body.
	BodyID bool
	// IDField, when not "", is the body's top-level string field that
	// names the task (a Discord interaction's id): HookBodyField.
	IDField string
}

// hookSenders are the senders in the order a hook reads them: a call that
// carries the signature headers of several is read as the first's (GitHub
// sends X-Hub-Signature-256 and the older X-Hub-Signature). Senders whose
// calls carry no id are listed too, so that their calls are read as theirs.
var hookSenders = []HookSender{
	{Name: "standard", Header: "webhook-signature", IDHeader: "webhook-id"},
	{Name: "standard", Header: "svix-signature", IDHeader: "svix-id"},
	{Name: "github", Header: "X-Hub-Signature-256", IDHeader: "X-GitHub-Delivery"},
	{Name: "shopify", Header: "X-Shopify-Hmac-Sha256", IDHeader: "X-Shopify-Webhook-Id"},
	{Name: "woocommerce", Header: "X-WC-Webhook-Signature", IDHeader: "X-WC-Webhook-Delivery-ID"},
	{Name: "linear", Header: "Linear-Signature", IDHeader: "Linear-Delivery"},
	{Name: "sentry", Header: "Sentry-Hook-Signature"},
	{Name: "typeform", Header: "Typeform-Signature", EventID: true},
	{Name: "forgejo", Header: "X-Forgejo-Signature", IDHeader: "X-Forgejo-Delivery"},
	{Name: "gitea", Header: "X-Gitea-Signature", IDHeader: "X-Gitea-Delivery"},
	{Name: "gogs", Header: "X-Gogs-Signature", IDHeader: "X-Gogs-Delivery"},
	{Name: "todoist", Header: "X-Todoist-Hmac-SHA256", IDHeader: "X-Todoist-Delivery-ID"},
	{Name: "razorpay", Header: "X-Razorpay-Signature", IDHeader: "X-Razorpay-Event-Id"},
	{Name: "cal", Header: "X-Cal-Signature-256"},
	{Name: "coinbase", Header: "X-CC-Webhook-Signature"},
	{Name: "vercel", Header: "X-Vercel-Signature"},
	{Name: "notion", Header: "X-Notion-Signature"},
	{Name: "x-signature", Header: "X-Signature", EventID: true}, // Segment's events carry their messageId
	{Name: "pagerduty", Header: "X-PagerDuty-Signature", EventID: true},
	{Name: "x-hub-signature", Header: "X-Hub-Signature", IDHeader: "X-Atlassian-Webhook-Identifier"},
	{Name: "dropbox", Header: "X-Dropbox-Signature"},
	{Name: "x", Header: "X-Twitter-Webhooks-Signature"},
	{Name: "asana", Header: "X-Hook-Signature"},
	{Name: "slack", Header: "X-Slack-Signature", EventID: true},
	{Name: "stripe", Header: "Stripe-Signature", EventID: true},
	{Name: "calendly", Header: "Calendly-Webhook-Signature", BodyID: true},
	{Name: "paddle", Header: "Paddle-Signature", EventID: true},
	{Name: "zoom", Header: "x-zm-signature", BodyID: true},
	{Name: "twilio", Header: "X-Twilio-Signature", IDHeader: "I-Twilio-Idempotency-Token"},
	{Name: "sendgrid", Header: "X-Twilio-Email-Event-Webhook-Signature", BatchID: "sg_event_id"},
	{Name: "hubspot", Header: "X-HubSpot-Signature-v3", BatchID: "eventId"},
	{Name: "discord", Header: "X-Signature-Ed25519", IDField: "id"},
	{Name: "twitch", Header: "Twitch-Eventsub-Message-Signature", IDHeader: "Twitch-Eventsub-Message-Id"},
	{Name: "webflow", Header: "X-Webflow-Signature", BodyID: true},
	{Name: "mux", Header: "Mux-Signature", IDField: "id"},
	{Name: "frameio", Header: "X-Frameio-Signature"},
	{Name: "square", Header: "X-Square-Hmacsha256-Signature", IDField: "event_id"},
	// GitLab's token is no signature: last, so that a call signed
	// otherwise is read as that.
	{Name: "gitlab", Header: "X-Gitlab-Token"},
}

// HookSenders returns the senders a hook with a secret reads, in the
// order it reads them.
func HookSenders() []HookSender {
	return append([]HookSender(nil), hookSenders...)
}

// HookSenderOf is the sender whose signature header a call sends, first in
// HookSenders' order; header reads one request header. Nil: none.
func HookSenderOf(header func(name string) string) *HookSender {
	for i := range hookSenders {
		if header(hookSenders[i].Header) != "" {
			s := hookSenders[i]
			return &s
		}
	}
	return nil
}

// HookMessageID is the sender's message id of a call to a hook with a
// secret (HookSenderOf's IDHeader, the event id in the body, a batch's
// ids: HookBatchID, the body itself: HookBodyID, a body's field:
// HookBodyField, or a Mailgun signature's
// token: HookMailgun), which
// names the task once the call's signature is checked, unless an
// Idempotency-Key does; "" for none. A Standard Webhooks call's is
// webhook-id, else svix-id.
func HookMessageID(header func(name string) string, body []byte) string {
	s := HookSenderOf(header)
	switch {
	case s == nil:
		if m := HookMailgun(header, body); m != nil {
			return m.Token
		}
		return ""
	case s.Name == "standard":
		if id := header("webhook-id"); id != "" {
			return id
		}
		return header("svix-id")
	case s.IDHeader != "":
		return header(s.IDHeader)
	case s.EventID:
		return HookEventID(body)
	case s.BatchID != "":
		return HookBatchID(body, s.BatchID)
	case s.BodyID:
		return HookBodyID(body)
	case s.IDField != "":
		return HookBodyField(body, s.IDField)
	}
	return ""
}

// HookBodyField is the string in a JSON object body's top-level field;
// "" when the body is no such object or the field no string.
func HookBodyField(body []byte, field string) string {
	var v map[string]json.RawMessage
	var text string
	if json.Unmarshal(body, &v) != nil || json.Unmarshal(v[field], &text) != nil {
		return ""
	}
	return text
}

// HookBodyID names a call by its body: "body-" and the first 16 bytes of
// the body's SHA-256 in hex; "" for an empty body.
func HookBodyID(body []byte) string {
	if len(body) == 0 {
		return ""
	}
	sum := sha256.Sum256(body)
	return "body-" + hex.EncodeToString(sum[:16])
}

// HookBatchID names a batch of events — a JSON array of objects, each
// with its id (a string or a number) in field — by the set of their ids,
// sorted and joined with ","; "" when the body is no such array or an
// event has no id. SendGrid and HubSpot send their events so, with no
// delivery id: their retry of the same events names the same task,
// whatever else it changed (HubSpot's attemptNumber).
func HookBatchID(body []byte, field string) string {
	var events []map[string]json.RawMessage
	if json.Unmarshal(body, &events) != nil || len(events) == 0 {
		return ""
	}
	ids := make([]string, len(events))
	for i, ev := range events {
		raw := ev[field]
		var text string
		var num json.Number
		switch {
		case json.Unmarshal(raw, &text) == nil:
			ids[i] = text
		case json.Unmarshal(raw, &num) == nil:
			ids[i] = num.String()
		}
		if ids[i] == "" {
			return ""
		}
	}
	slices.Sort(ids)
	return strings.Join(slices.Compact(ids), ",")
}

// HookNamesTask reports whether a call to a hook with a secret, with
// these headers (header reads one) and body, names its task (an
// Idempotency-Key or HookMessageID), so that sending it again adds nothing
// twice.
func HookNamesTask(header func(name string) string, body []byte) bool {
	return header("Idempotency-Key") != "" || HookMessageID(header, body) != ""
}

// HookEventID is the event id a Stripe, Slack, Paddle, Typeform,
// PagerDuty or Segment call carries in its body rather than a header: a Stripe
// event's ({"object": "event", "id": "evt_…"}), a Slack Events API
// callback's ({"type": "event_callback", "event_id": "Ev…"}), a Paddle
// notification's ({"event_id": "evt_…", "event_type": …,
// "notification_id": …}), a Typeform response's ({"event_id": "01H…",
// "event_type": "form_response"}, or "form_response_partial") or a
// PagerDuty v3 webhook's ({"event": {"id": "01…", "event_type": …,
// "resource_type": …}}) or a Segment event's ({"type": "track",
// "messageId": "…"}, or identify, page, screen, group or alias, which
// Segment retries with the same messageId); "" for any other body. A
// hook with a secret names the task of a call signed by that sender by it
// (when no Idempotency-Key does), so the sender's redelivery of an event
// adds nothing twice.
func HookEventID(body []byte) string {
	var v struct {
		Object         string `json:"object"`
		ID             string `json:"id"`
		Type           string `json:"type"`
		EventID        string `json:"event_id"`
		EventType      string `json:"event_type"`
		NotificationID string `json:"notification_id"`
		MessageID      string `json:"messageId"`
		// Event is a PagerDuty event (elsewhere a string, or Slack's
		// event, which has no id): read on its own, below.
		Event json.RawMessage `json:"event"`
	}
	if json.Unmarshal(body, &v) != nil {
		return ""
	}
	var pd struct {
		ID           string `json:"id"`
		EventType    string `json:"event_type"`
		ResourceType string `json:"resource_type"`
	}
	if len(v.Event) > 0 && v.Event[0] == '{' && json.Unmarshal(v.Event, &pd) == nil && pd.EventType != "" && pd.ResourceType != "" {
		return pd.ID
	}
	switch {
	case v.Object == "event":
		return v.ID
	case v.Type == "event_callback", v.EventType != "" && v.NotificationID != "",
		v.EventType == "form_response", v.EventType == "form_response_partial":
		return v.EventID
	case segmentTypes[v.Type]:
		return v.MessageID
	}
	return ""
}

// segmentTypes are the types of Segment's events (its Spec's calls).
var segmentTypes = map[string]bool{"track": true, "identify": true, "page": true, "screen": true, "group": true, "alias": true}

// MailgunSignature is the signature Mailgun puts in a webhook's body
// rather than a header: the hex HMAC-SHA256, keyed with the HTTP webhook
// signing key, of Timestamp (seconds since the epoch) followed by Token (a
// random string, new for every call). It does not cover the event. Parent
// is a subaccount's call's signature with its primary account's key ("" if
// none).
type MailgunSignature struct {
	Timestamp, Token, Signature, Parent string
}

// HookMailgun is the Mailgun signature a call's body carries — a JSON
// body's {"signature": {"timestamp", "token", "signature"}, "event-data":
// …}, or a form's timestamp, token and signature fields (header reads the
// call's Content-Type) — or nil when it carries none. A hook with a secret
// reads a call without any sender's signature header as Mailgun's when its
// body has one, and names its task by the token, so that a signature seen
// once adds one task at most.
func HookMailgun(header func(name string) string, body []byte) *MailgunSignature {
	var m MailgunSignature
	if ct, _, _ := strings.Cut(header("Content-Type"), ";"); strings.EqualFold(strings.TrimSpace(ct), "application/x-www-form-urlencoded") {
		f, err := url.ParseQuery(string(body))
		if err != nil {
			return nil
		}
		m = MailgunSignature{Timestamp: f.Get("timestamp"), Token: f.Get("token"), Signature: f.Get("signature")}
	} else {
		var v struct {
			Signature *struct {
				Timestamp json.RawMessage `json:"timestamp"`
				Token     string          `json:"token"`
				Signature string          `json:"signature"`
				Parent    string          `json:"parent-signature"`
			} `json:"signature"`
		}
		if json.Unmarshal(body, &v) != nil || v.Signature == nil {
			return nil
		}
		ts := string(v.Signature.Timestamp) // a number, or the string Mailgun sends
		var quoted string
		if json.Unmarshal(v.Signature.Timestamp, &quoted) == nil {
			ts = quoted
		}
		m = MailgunSignature{Timestamp: ts, Token: v.Signature.Token, Signature: v.Signature.Signature, Parent: v.Signature.Parent}
	}
	if m.Timestamp == "" || m.Token == "" || m.Signature == "" {
		return nil
	}
	return &m
}
