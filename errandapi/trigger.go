package errandapi

import "encoding/json"

// TriggerKind is what makes a rule fire.
type TriggerKind string

// The three kinds of trigger rule.
const (
	KindSchedule TriggerKind = "schedule"
	KindHook     TriggerKind = "hook"
	KindTask     TriggerKind = "task"
)

// TriggerRequest is the body of a rule create (Queue and exactly one of
// Schedule, Hook, Task required) or PATCH (only the fields sent change; the
// kind never does). Queue is "<instance>/<queue>" of the rule's instance.
type TriggerRequest struct {
	// ID, on create only, is the rule's id (default: a new one); errand
	// import sends it so that a rule keeps its id across hosts and a second
	// import finds it. An id the instance already has is INVALID_ARGUMENT.
	ID       string               `json:"id,omitempty"`
	Queue    *string              `json:"queue,omitempty"`
	Params   json.RawMessage      `json:"params,omitempty"`   // a JSON object, or null to clear
	Payload  json.RawMessage      `json:"payload,omitempty"`  // the template, or null to clear
	Priority *int                 `json:"priority,omitempty"` // of the tasks the rule adds, 0–MaxPriority
	Enabled  *bool                `json:"enabled,omitempty"`
	Schedule *TriggerScheduleSpec `json:"schedule,omitempty"`
	Hook     *TriggerHookSpec     `json:"hook,omitempty"`
	Task     *TriggerTaskSpec     `json:"task,omitempty"`
}

// TriggerScheduleSpec is a schedule rule's cron expression (5 fields or a
// descriptor such as @hourly, @every 30s) and IANA time zone (default UTC).
type TriggerScheduleSpec struct {
	Cron     *string `json:"cron,omitempty"`
	TimeZone *string `json:"timeZone,omitempty"`
}

// TriggerHookSpec is a hook rule's optional secret (a Standard Webhooks
// key, "whsec_…", or 16–256 characters for GitHub's or Slack's signatures;
// null removes it), the request headers copied into params, and its own
// signature scheme (null removes it).
type TriggerHookSpec struct {
	Secret    Nullable[string]        `json:"secret,omitzero"`
	Headers   *[]string               `json:"headers,omitempty"`
	Signature Nullable[HookSignature] `json:"signature,omitzero"`
}

// HookSignature is a hook's own signature scheme, for a sender errand does
// not read by name: Header holds the HMAC of the raw body (or of Signed)
// keyed with the hook's whole secret string, after Prefix (matched in any
// case), in Encoding. With one, a call is checked by it alone. IDHeader,
// when set, names the task (as a sender's delivery id does), so a
// redelivery adds nothing twice. TimestampHeader, when set, holds the
// call's time (Unix seconds or milliseconds), which must be within 5
// minutes of the node's; Signed is then what is signed, "{timestamp}.{body}"
// unless set.
type HookSignature struct {
	Header          string `json:"header"`
	Hash            string `json:"hash,omitempty"`            // sha1, sha256 (the default), sha384 or sha512
	Encoding        string `json:"encoding,omitempty"`        // hex (the default) or base64
	Prefix          string `json:"prefix,omitempty"`          // e.g. "sha256="; none by default
	IDHeader        string `json:"idHeader,omitempty"`        // none by default
	TimestampHeader string `json:"timestampHeader,omitempty"` // none by default
	// Signed is a template of {timestamp}, {id} and {body}, ending with
	// {body}: "v0:{timestamp}:{body}"; none (the body alone) by default.
	Signed string `json:"signed,omitempty"`
}

// TriggerTaskSpec is a task rule's watched queue ("<instance>/<queue>")
// and the outcomes that fire it ("succeeded", "failed").
type TriggerTaskSpec struct {
	Queue *string   `json:"queue,omitempty"`
	On    *[]string `json:"on,omitempty"`
}

// Trigger is a rule in v1 JSON. A hook's secret is never shown: HasSecret
// says whether it has one.
type Trigger struct {
	ID          string           `json:"id"`
	Kind        TriggerKind      `json:"kind"`
	Queue       string           `json:"queue"`
	Params      json.RawMessage  `json:"params"`
	Payload     json.RawMessage  `json:"payload"`
	Priority    int              `json:"priority"` // of the tasks it adds
	Enabled     bool             `json:"enabled"`
	Schedule    *TriggerSchedule `json:"schedule,omitempty"`
	Hook        *TriggerHook     `json:"hook,omitempty"`
	Task        *TriggerOnTask   `json:"task,omitempty"`
	Fired       int64            `json:"fired"`
	ErrorCount  int64            `json:"errorCount"`
	LastError   *string          `json:"lastError"`
	LastErrorAt *int64           `json:"lastErrorAt"`
	CreatedAt   int64            `json:"createdAt"`
	UpdatedAt   int64            `json:"updatedAt"`
}

// TriggerSchedule is a schedule rule's state: the last tick fired and the
// next one it waits for (null while disabled).
type TriggerSchedule struct {
	Cron       string `json:"cron"`
	TimeZone   string `json:"timeZone"`
	LastTickAt *int64 `json:"lastTickAt"`
	NextTickAt *int64 `json:"nextTickAt"`
}

// TriggerHook is a hook rule's URL path (POST it, no key needed: the path
// is the capability), whether it has a secret, and its copied headers.
// Path is left out for a caller without the write grant on the instance:
// it adds tasks, which read does not allow.
type TriggerHook struct {
	Path      string   `json:"path,omitempty"`
	HasSecret bool     `json:"hasSecret"`
	Headers   []string `json:"headers"`
	// Signature is the hook's own signature scheme, with its defaults
	// filled in; nil (null) for the senders errand reads by name.
	Signature *HookSignature `json:"signature"`
}

// TriggerOnTask is a task rule's watched queue and outcomes.
type TriggerOnTask struct {
	Queue string   `json:"queue"`
	On    []string `json:"on"`
}

// TriggerResponse is the answer of a rule create, get or patch.
type TriggerResponse struct {
	Trigger *Trigger `json:"trigger"`
}

// TriggerList is the answer of listing an instance's rules, oldest first.
type TriggerList struct {
	Triggers []Trigger `json:"triggers"`
}

// TriggerDeleteResponse is the answer of a rule delete.
type TriggerDeleteResponse struct {
	Deleted bool `json:"deleted"`
}

// HookResponse is the answer (202) of POST /v1/hooks/{instance}/{hook}:
// the task added, or with Duplicate the one an earlier call with the same
// Idempotency-Key (or the same signed message id: webhook-id, a sender's
// delivery id, a Stripe or Slack event's id) added.
type HookResponse struct {
	ID        string `json:"id"`
	Duplicate bool   `json:"duplicate"`
}

// HookChallenge is the answer (200) of a hook with a secret to Slack's
// url_verification request, signed with that secret: Slack's challenge
// echoed, as Slack's Events API asks of a URL before it sends events to
// it. No task is added.
type HookChallenge struct {
	Challenge string `json:"challenge"`
}

// HookOktaVerification is a hook's answer (200) to Okta's one-time check
// of an event hook's URL, a GET carrying X-Okta-Verification-Challenge:
// its value echoed. No task is added.
type HookOktaVerification struct {
	Verification string `json:"verification"`
}

// HookDiscordResponse is a hook's answer (200) to a call of Discord's
// interactions endpoint, signed with the hook's key (Discord's Ed25519
// signature): to its PING (type 1) a PONG (Type 1), nothing added; to an
// application command or a modal's submit, added, a deferred message
// (Type 5), and to a message component's use, added, a deferred update
// (Type 6), which the task follows up through Discord's API with the
// interaction's token; to an autocomplete, nothing added, no choices
// (Type 8 with Data), since its choices must be the answer itself.
type HookDiscordResponse struct {
	Type int                      `json:"type"`
	Data *HookDiscordResponseData `json:"data,omitempty"`
}

// HookDiscordResponseData is an autocomplete's answer: no choices.
type HookDiscordResponseData struct {
	Choices []struct{} `json:"choices"`
}

// HookZoomValidation is the answer (200) of a hook with a secret to Zoom's
// endpoint.url_validation request, signed with that secret: the plain
// token echoed and its hex HMAC-SHA256 keyed with the secret (Zoom's
// secret token), as Zoom asks of a URL before it sends events to it. No
// task is added.
type HookZoomValidation struct {
	PlainToken     string `json:"plainToken"`
	EncryptedToken string `json:"encryptedToken"`
}
