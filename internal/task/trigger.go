package task

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/textproto"
	"slices"
	"strings"
)

// TriggerKind is what makes a trigger rule fire.
type TriggerKind string

// The three kinds of rule (docs/triggers.md).
const (
	// TriggerSchedule fires on a cron schedule.
	TriggerSchedule TriggerKind = "schedule"
	// TriggerHook fires on POST /v1/hooks/{instance}/{hook}.
	TriggerHook TriggerKind = "hook"
	// TriggerTask fires when a task of a watched queue finishes.
	TriggerTask TriggerKind = "task"
)

// Sources of the tasks that rules add (Task.Source).
const (
	SourceSchedule = "schedule"
	SourceHook     = "hook"
	SourceTask     = "task"
)

// Trigger limits.
const (
	MaxHookHeaders   = 20
	DefaultTimeZone  = "UTC"
	MaxCronLen       = 200
	minSecretBytes   = 24
	maxSecretBytes   = 64
	hookSecretPrefix = "whsec_"
	// A secret in another form (GitHub's, Slack's) is 16–256 characters.
	minPlainSecret = 16
	maxPlainSecret = 256
)

// Trigger is one rule of an instance: when its event happens it adds a task
// to Queue (a queue of the same instance) with Params, at the depth and with
// the payload its kind defines. Times are epoch milliseconds.
type Trigger struct {
	InstanceID string
	ID         string
	Kind       TriggerKind
	Queue      string          // the target queue, in the rule's instance
	Params     json.RawMessage // a JSON object or nil; reaches the task as params
	Payload    json.RawMessage // the payload template, nil for none
	Priority   int             // the priority of the tasks it adds (0–MaxPriority)
	Enabled    bool

	// schedule
	Cron     string
	TimeZone string // IANA name; "UTC" by default
	// LastTickAt is the last tick a task was added for; NextTickAt the next
	// one due (0 while disabled or for other kinds).
	LastTickAt int64
	NextTickAt int64

	// hook
	HookToken   string   // the {hook} path segment: the hook's capability
	HookSecret  string   // whsec_… Standard Webhooks key; "" for none
	HookHeaders []string // canonical header names copied into params.headers
	// HookSignature is the rule's own signature scheme (with a secret);
	// nil: the senders errand reads by name.
	HookSignature *HookSignature

	// task
	OnQueue     string // the watched queue
	OnSucceeded bool
	OnFailed    bool

	// What the rule did: tasks added, and the last refusal.
	Fired       int64
	ErrorCount  int64
	LastError   string
	LastErrorAt int64
	CreatedAt   int64
	UpdatedAt   int64
}

// OnStates names the final states a chain rule fires on, in the API's
// words ("succeeded", "failed"); an empty list, never nil, for none.
func (tr *Trigger) OnStates() []string {
	on := []string{}
	if tr.OnSucceeded {
		on = append(on, "succeeded")
	}
	if tr.OnFailed {
		on = append(on, "failed")
	}
	return on
}

// TriggerPatch is what a create or PATCH sends; nil fields stay as they are.
// Exactly one of Schedule, Hook and Task names the kind on create; a PATCH
// may change only the block of the rule's own kind.
type TriggerPatch struct {
	// ID is the rule's id on create ("": a new one); a PATCH may not send
	// it. errand import sends it to keep a rule's id across hosts.
	ID       string
	Queue    *string // "<instance>/<queue>"
	Params   *json.RawMessage
	Payload  *json.RawMessage
	Priority *int
	Enabled  *bool
	Schedule *SchedulePatch
	Hook     *HookPatch
	Task     *TaskOnPatch
}

// SchedulePatch holds a schedule rule's fields.
type SchedulePatch struct {
	Cron     *string
	TimeZone *string
}

// HookPatch holds a hook rule's fields. Secret and Signature use a double
// pointer so that `"secret": null` and `"signature": null` remove them.
type HookPatch struct {
	Secret    **string
	Headers   *[]string
	Signature **HookSignature // as sent: checked and completed by Apply
}

// TaskOnPatch holds a task rule's fields: the watched queue and the
// outcomes ("succeeded", "failed") that fire it.
type TaskOnPatch struct {
	Queue *string
	On    *[]string
}

// Apply validates p and applies it to tr. instance is the name of the rule's
// instance (a queue must be "<instance>/<queue>" of that one). It does not
// check that queues exist: the engine does, against the store. It leaves
// NextTickAt to the caller (NextTick needs now).
func (p *TriggerPatch) Apply(tr *Trigger, instance string, create bool) error {
	var kinds []string // the kinds' blocks sent, in the order of the contract
	for _, k := range []struct {
		name string
		set  bool
	}{{"schedule", p.Schedule != nil}, {"hook", p.Hook != nil}, {"task", p.Task != nil}} {
		if k.set {
			kinds = append(kinds, k.name)
		}
	}
	if p.ID != "" && !(p.ID == tr.ID && !create) { // a PATCH may send the rule's own id
		if !create {
			return FieldErrorf(CodeInvalidArgument, "id", "a rule's id cannot change")
		}
		if !ValidID(p.ID) {
			return IDError("id")
		}
		tr.ID = p.ID
	}
	if create {
		switch len(kinds) {
		case 0:
			return FieldErrorf(CodeInvalidArgument, "schedule", "send exactly one of schedule, hook or task: the rule's kind")
		case 1:
		default: // the second block sent is the one too many
			return FieldErrorf(CodeInvalidArgument, kinds[1], "send exactly one of schedule, hook or task; %s is sent too", kinds[0])
		}
		switch {
		case p.Schedule != nil:
			tr.Kind = TriggerSchedule
			tr.TimeZone = DefaultTimeZone
		case p.Hook != nil:
			tr.Kind = TriggerHook
		default:
			tr.Kind = TriggerTask
			tr.OnSucceeded = true
		}
		tr.Enabled = true
		if p.Queue == nil {
			return FieldErrorf(CodeInvalidArgument, "queue", "is required, as \"<instance>/<queue>\"")
		}
	} else {
		// A field of another kind is named as sent.
		for _, k := range []struct {
			field string
			sent  bool
		}{{"schedule", p.Schedule != nil}, {"hook", p.Hook != nil}, {"task", p.Task != nil}} {
			if !k.sent {
				continue
			}
			if err := tr.OtherKind(k.field); err != nil {
				return err
			}
		}
	}
	if p.Queue != nil {
		q, err := RuleQueue(*p.Queue, instance, "queue")
		if err != nil {
			return err
		}
		tr.Queue = q
	}
	if p.Params != nil {
		if IsJSONNull(*p.Params) {
			tr.Params = nil
		} else {
			if err := ValidateJSONBytes(*p.Params, "params"); err != nil {
				return err
			}
			if !isJSONObject(*p.Params) {
				return FieldErrorf(CodeInvalidArgument, "params", "must be a JSON object")
			}
			tr.Params = *p.Params
		}
	}
	if p.Payload != nil {
		if IsJSONNull(*p.Payload) {
			tr.Payload = nil
		} else {
			if err := ValidateJSONBytes(*p.Payload, "payload"); err != nil {
				return err
			}
			tr.Payload = *p.Payload
		}
	}
	if p.Priority != nil {
		if *p.Priority < 0 || *p.Priority > MaxPriority {
			return FieldErrorf(CodeInvalidArgument, "priority", "must be 0–%d: the priority of the tasks the rule adds (higher is claimed first; 0 by default)", MaxPriority)
		}
		tr.Priority = *p.Priority
	}
	if p.Enabled != nil {
		tr.Enabled = *p.Enabled
	}
	var err error
	switch {
	case p.Schedule != nil:
		err = p.Schedule.apply(tr)
	case p.Hook != nil:
		err = p.Hook.apply(tr)
	case p.Task != nil:
		err = p.Task.apply(tr, instance)
	}
	if err != nil {
		return err
	}
	if err := tr.checkOwnSignature(p); err != nil {
		return err
	}
	if tr.Kind == TriggerTask && len(tr.Payload) > maxChainTemplate {
		return FieldErrorf(CodePayloadTooLarge, "payload", "is %d bytes; a task rule's template is at most %d: its tasks' payload holds it beside the finished task's fields, within %d",
			len(tr.Payload), maxChainTemplate, MaxPayloadBytes)
	}
	// Checked when the call sets either side, so that a rule stored
	// before the check can still be changed (or disabled) otherwise.
	switch {
	case p.Params != nil:
		return tr.checkCopiedHeaders("params.headers")
	case p.Hook != nil && p.Hook.Headers != nil:
		return tr.checkCopiedHeaders("hook.headers")
	}
	return nil
}

// checkOwnSignature refuses an enabled hook rule with its own signature
// scheme but no secret (the HMAC's key), naming what p changed: the
// scheme, the secret, or enabled. A disabled one may wait for its secret
// (an import creates a rule so: a bundle carries no secret).
func (tr *Trigger) checkOwnSignature(p *TriggerPatch) error {
	if tr.Kind != TriggerHook || tr.HookSignature == nil || tr.HookSecret != "" || !tr.Enabled {
		return nil
	}
	field := "enabled"
	switch {
	case p.Hook != nil && p.Hook.Signature != nil:
		field = "hook.signature"
	case p.Hook != nil && p.Hook.Secret != nil:
		field = "hook.secret"
	}
	return FieldErrorf(CodeInvalidArgument, field, "a hook's own signature needs its secret (the HMAC's key): send hook.secret, or remove hook.signature with null, or keep the rule disabled")
}

// OtherKind refuses field when it is, or lies inside, the block of a kind
// other than tr's ("task", "task.on" on a hook rule): a rule's kind
// cannot change, so such a field has no place in its PATCH, whatever its
// value. It is nil for any other field. The refusal names the block.
func (tr *Trigger) OtherKind(field string) error {
	block, _, _ := strings.Cut(field, ".")
	block, _, _ = strings.Cut(block, "[")
	switch k := TriggerKind(block); k {
	case TriggerSchedule, TriggerHook, TriggerTask:
		if k != tr.Kind {
			return FieldErrorf(CodeInvalidArgument, block, "a rule's kind cannot change; this rule is a %s rule", tr.Kind)
		}
	}
	return nil
}

// checkCopiedHeaders refuses a hook rule that copies headers into
// params.headers while its own params hold a headers member, which the
// copy would replace on every call; field is the side the call set.
func (tr *Trigger) checkCopiedHeaders(field string) error {
	if tr.Kind != TriggerHook || len(tr.HookHeaders) == 0 || len(tr.Params) == 0 {
		return nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(tr.Params, &m) == nil && m["headers"] != nil {
		return FieldErrorf(CodeInvalidArgument, field, "the hook copies headers into params.headers, which the rule's own params hold too (the copy would replace them): rename that member of params")
	}
	return nil
}

func (p *SchedulePatch) apply(tr *Trigger) error {
	if p.Cron != nil {
		tr.Cron = strings.TrimSpace(*p.Cron)
	}
	if p.TimeZone != nil {
		tr.TimeZone = *p.TimeZone
		if tr.TimeZone == "" {
			tr.TimeZone = DefaultTimeZone
		}
	}
	_, err := ParseSchedule(tr.Cron, tr.TimeZone)
	return err
}

func (p *HookPatch) apply(tr *Trigger) error {
	if p.Secret != nil {
		tr.HookSecret = ""
		if *p.Secret != nil {
			if err := ValidateHookSecret(**p.Secret); err != nil {
				return err
			}
			tr.HookSecret = **p.Secret
		}
	}
	if p.Signature != nil {
		tr.HookSignature = nil
		if *p.Signature != nil {
			s, err := (*p.Signature).build()
			if err != nil {
				return err
			}
			tr.HookSignature = s
		}
	}
	if p.Headers != nil {
		hs := *p.Headers
		if len(hs) > MaxHookHeaders {
			return FieldErrorf(CodeInvalidArgument, "hook.headers", "at most %d headers", MaxHookHeaders)
		}
		out := make([]string, 0, len(hs))
		for i, h := range hs {
			field := fmt.Sprintf("hook.headers[%d]", i)
			if h == "" || len(h) > 100 || !headerToken(h) {
				return FieldErrorf(CodeInvalidArgument, field, "%s is not a header name", Quote(h))
			}
			h = textproto.CanonicalMIMEHeaderKey(h)
			switch {
			case credentialHeaders[h]:
				// Kept in params, which every read key sees: a caller's
				// credentials copied there by mistake would leak.
				return FieldErrorf(CodeInvalidArgument, field, "%s carries credentials; it is never copied into a task", h)
			case h == "Host":
				return FieldErrorf(CodeInvalidArgument, field, "Host is the request's authority, not a header a hook can copy")
			case slices.Contains(out, h):
				return FieldErrorf(CodeInvalidArgument, field, "%s is named twice", h)
			}
			out = append(out, h)
		}
		tr.HookHeaders = out
	}
	return nil
}

// headerToken reports whether h is a header field name: an HTTP token
// (RFC 9110: letters, digits and !#$%&'*+-.^_`|~).
func headerToken(h string) bool {
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// credentialHeaders are the request headers a hook never copies into its
// tasks' params.
var credentialHeaders = map[string]bool{"Authorization": true, "Cookie": true, "Proxy-Authorization": true}

func (p *TaskOnPatch) apply(tr *Trigger, instance string) error {
	if p.Queue != nil {
		q, err := RuleQueue(*p.Queue, instance, "task.queue")
		if err != nil {
			return err
		}
		tr.OnQueue = q
	}
	if tr.OnQueue == "" {
		return FieldErrorf(CodeInvalidArgument, "task.queue", "is required, as \"<instance>/<queue>\"")
	}
	if p.On != nil {
		tr.OnSucceeded, tr.OnFailed = false, false
		for i, o := range *p.On {
			// Each item is named by its place, as hook.headers[i] is.
			field := fmt.Sprintf("task.on[%d]", i)
			var on *bool
			switch o {
			case "succeeded":
				on = &tr.OnSucceeded
			case "failed":
				on = &tr.OnFailed
			default:
				return FieldErrorf(CodeInvalidArgument, field, "must be succeeded or failed, not %s", Quote(o))
			}
			if *on {
				return FieldErrorf(CodeInvalidArgument, field, "%s is named twice", o)
			}
			*on = true
		}
		if !tr.OnSucceeded && !tr.OnFailed {
			return FieldErrorf(CodeInvalidArgument, "task.on", "name succeeded, failed or both")
		}
	}
	return nil
}

// RuleQueue checks a rule's "<instance>/<queue>" against the rule's own
// instance and returns the queue name. Another instance is INVALID_ARGUMENT:
// a rule adds only to its own instance.
func RuleQueue(ref, instance, field string) (string, error) {
	inst, q, ok := strings.Cut(ref, "/")
	if !ok {
		return "", FieldErrorf(CodeInvalidArgument, field, "must be \"<instance>/<queue>\", e.g. %q", instance+"/default")
	}
	if inst != instance {
		return "", FieldErrorf(CodeInvalidArgument, field, "names instance %s; a rule adds only to queues of its own instance %q", Quote(inst), instance)
	}
	if err := ValidateQueueName(q, field); err != nil {
		return "", err
	}
	return q, nil
}

// ValidateHookSecret checks a hook's secret: a Standard Webhooks key
// ("whsec_" and the base64 of 24–64 bytes: HookSecretKey), which every
// signature a hook takes can use; or any other string of 16–256 printable
// ASCII characters without spaces (a secret GitHub was given, Slack's
// signing secret, Twilio's auth token, a Shopify app's client secret),
// which every other signature a hook takes uses whole, Standard Webhooks'
// cannot.
func ValidateHookSecret(secret string) error {
	if strings.HasPrefix(secret, hookSecretPrefix) {
		_, err := HookSecretKey(secret)
		return err
	}
	if len(secret) < minPlainSecret || len(secret) > maxPlainSecret {
		return FieldErrorf(CodeInvalidArgument, "hook.secret", "must be \"whsec_\" and base64 (Standard Webhooks), or %d–%d characters "+
			"(a secret for GitHub's or Slack's signatures); it has %d", minPlainSecret, maxPlainSecret, len(secret))
	}
	for _, c := range []byte(secret) {
		if c <= ' ' || c > '~' {
			return FieldErrorf(CodeInvalidArgument, "hook.secret", "must be printable ASCII without spaces")
		}
	}
	return nil
}

// HookSecretKey checks a Standard Webhooks secret ("whsec_" and the base64
// of 24–64 random bytes) and returns the HMAC key it carries.
func HookSecretKey(secret string) ([]byte, error) {
	b64, ok := strings.CutPrefix(secret, hookSecretPrefix)
	if !ok {
		return nil, FieldErrorf(CodeInvalidArgument, "hook.secret", "must be \"whsec_\" and base64 (Standard Webhooks)")
	}
	key, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, FieldErrorf(CodeInvalidArgument, "hook.secret", "the part after whsec_ is not base64")
	}
	if len(key) < minSecretBytes || len(key) > maxSecretBytes {
		return nil, FieldErrorf(CodeInvalidArgument, "hook.secret", "must carry %d–%d bytes; it carries %d", minSecretBytes, maxSecretBytes, len(key))
	}
	return key, nil
}

// Target returns the rule's "<instance>/<queue>" form of its target queue.
func (tr *Trigger) Target(instance string) string { return instance + "/" + tr.Queue }

// RecordError notes a refused event on the rule: the count, the message and
// when.
func (tr *Trigger) RecordError(msg string, now int64) {
	tr.ErrorCount++
	tr.LastError = truncate(msg, 500)
	tr.LastErrorAt = now
}

func isJSONObject(raw []byte) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '{'
}
