package engine

// The v1 API's shapes to and from the domain's: one conversion each, for
// the HTTP handlers and the embedded engine alike.

import (
	"encoding/json"

	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/task"
)

// TargetOf is a v1 API target in the domain's shape (nil for none).
func TargetOf(t *errandapi.Target) *task.Target {
	if t == nil {
		return nil
	}
	return &task.Target{Webhook: t.Webhook, Function: t.Function, Channel: t.Channel, Headers: t.Headers}
}

// QueuePatchOf is a v1 API queue request (a create's or a PATCH's body)
// in the domain's shape, for the API and the embedded engine alike.
// Fields absent stay as they are; null clears a nullable setting.
func QueuePatchOf(b *errandapi.QueueRequest) *task.QueuePatch {
	p := &task.QueuePatch{
		RatePerSecond: b.RatePerSecond.Ptr(), MaxConcurrent: b.MaxConcurrent.Ptr(), MaxAttempts: b.MaxAttempts,
		MinBackoffSeconds: b.MinBackoffSeconds, MaxBackoffSeconds: b.MaxBackoffSeconds, MaxDoublings: b.MaxDoublings,
		MaxAgeSeconds: b.MaxAgeSeconds.Ptr(), DeadlineSeconds: b.DeadlineSeconds, DeadLetterQueue: b.DeadLetterQueue.Ptr(),
		TargetControl: b.TargetControl, Paused: b.Paused,
	}
	if b.Mode != nil {
		m := task.Mode(*b.Mode)
		p.Mode = &m
	}
	if b.Target.Set {
		t := TargetOf(&b.Target.Value)
		if b.Target.Null {
			t = nil
		}
		p.Target = &t
	}
	return p
}

// QueuePatchFor is QueuePatchOf of a PATCH of the queue named queue: a
// Name other than queue is refused, since a queue cannot be renamed.
func QueuePatchFor(b *errandapi.QueueRequest, queue string) (*task.QueuePatch, error) {
	if b.Name != nil && *b.Name != queue {
		return nil, task.FieldErrorf(task.CodeInvalidArgument, "name", "a queue cannot be renamed")
	}
	return QueuePatchOf(b), nil
}

// TargetJSON is the domain's target in the contract's shape, as answers
// show it: header values masked (task.Target.Masked).
func TargetJSON(t *task.Target) *errandapi.Target {
	if t == nil {
		return nil
	}
	m := t.Masked()
	return &errandapi.Target{Webhook: m.Webhook, Function: m.Function, Channel: m.Channel, Headers: m.Headers}
}

// QueueJSON renders q with its counts (nil: none, as after a create or a
// patch), as the v1 API answers a queue.
func QueueJSON(q *task.Queue, counts map[task.State]int) *errandapi.Queue {
	j := &errandapi.Queue{
		Name: q.Name, Mode: errandapi.Mode(q.Mode), Target: TargetJSON(q.Target), MaxConcurrent: nonZero(q.MaxConcurrent),
		MaxAttempts: q.MaxAttempts, MinBackoffSeconds: q.MinBackoffSeconds, MaxBackoffSeconds: q.MaxBackoffSeconds,
		MaxDoublings: q.MaxDoublings, MaxAgeSeconds: nonZero(q.MaxAgeSeconds), DeadlineSeconds: q.DeadlineSeconds,
		DeadLetterQueue: nonZero(q.DeadLetterQueue), TargetControl: q.TargetControl, Paused: q.Paused, CreatedAt: q.CreatedAt,
		RatePerSecond: nonZero(q.RatePerSecond),
	}
	j.Capped = []errandapi.State{} // always a list, also without counts
	if counts != nil {
		j.Counts = map[errandapi.State]int{}
		for _, s := range task.States {
			name := errandapi.State(s.V1(q.Mode == task.ModePull))
			j.Counts[name] = counts[s]
			if counts[s] >= CountLimit {
				j.Capped = append(j.Capped, name)
			}
		}
	}
	return j
}

// nonZero is a pointer to v, or nil for its type's zero (a setting the
// answer shows as null).
func nonZero[T comparable](v T) *T {
	var zero T
	if v == zero {
		return nil
	}
	return &v
}

// HookPathPrefix begins every hook URL's path: /v1/hooks/{instance}/{hook}.
const HookPathPrefix = "/v1/hooks/"

// TriggerPatchOf is a v1 API rule request (a create's or a PATCH's body)
// in the domain's shape.
func TriggerPatchOf(b *errandapi.TriggerRequest) *task.TriggerPatch {
	p := &task.TriggerPatch{ID: b.ID, Queue: b.Queue, Priority: b.Priority, Enabled: b.Enabled}
	if b.Params != nil {
		p.Params = &b.Params
	}
	if b.Payload != nil {
		p.Payload = &b.Payload
	}
	if b.Schedule != nil {
		p.Schedule = &task.SchedulePatch{Cron: b.Schedule.Cron, TimeZone: b.Schedule.TimeZone}
	}
	if b.Hook != nil {
		p.Hook = &task.HookPatch{Secret: b.Hook.Secret.Ptr(), Headers: b.Hook.Headers, Signature: hookSignaturePatch(b.Hook.Signature)}
	}
	if b.Task != nil {
		p.Task = &task.TaskOnPatch{Queue: b.Task.Queue, On: b.Task.On}
	}
	return p
}

// hookSignaturePatch is a request's hook.signature as the domain's patch:
// nil when absent, a pointer to nil when null.
func hookSignaturePatch(n errandapi.Nullable[errandapi.HookSignature]) **task.HookSignature {
	if !n.Set {
		return nil
	}
	var p *task.HookSignature
	if !n.Null {
		v := n.Value
		p = &task.HookSignature{Header: v.Header, Hash: v.Hash, Encoding: v.Encoding, Prefix: v.Prefix, IDHeader: v.IDHeader,
			TimestampHeader: v.TimestampHeader, Signed: v.Signed}
	}
	return &p
}

// HookSignatureJSON is a hook's own signature scheme in v1 JSON; nil for
// none.
func HookSignatureJSON(s *task.HookSignature) *errandapi.HookSignature {
	if s == nil {
		return nil
	}
	return &errandapi.HookSignature{Header: s.Header, Hash: s.Hash, Encoding: s.Encoding, Prefix: s.Prefix, IDHeader: s.IDHeader,
		TimestampHeader: s.TimestampHeader, Signed: s.Signed}
}

// TriggerJSON renders a rule of the instance named instance as the v1 API
// answers it; a hook rule's path only withPath (its caller may add tasks
// to the instance: the path does).
func TriggerJSON(tr *task.Trigger, instance string, withPath bool) *errandapi.Trigger {
	out := &errandapi.Trigger{
		ID: tr.ID, Kind: errandapi.TriggerKind(tr.Kind), Queue: tr.Target(instance), Params: nullRaw(tr.Params),
		Payload: nullRaw(tr.Payload), Priority: tr.Priority, Enabled: tr.Enabled, Fired: tr.Fired, ErrorCount: tr.ErrorCount,
		CreatedAt: tr.CreatedAt, UpdatedAt: tr.UpdatedAt, LastError: nonZero(tr.LastError),
	}
	if tr.LastError != "" {
		out.LastErrorAt = &tr.LastErrorAt
	}
	switch tr.Kind {
	case task.TriggerSchedule:
		out.Schedule = &errandapi.TriggerSchedule{Cron: tr.Cron, TimeZone: tr.TimeZone, LastTickAt: nonZero(tr.LastTickAt), NextTickAt: nonZero(tr.NextTickAt)}
	case task.TriggerHook:
		out.Hook = &errandapi.TriggerHook{HasSecret: tr.HookSecret != "", Headers: tr.HookHeaders, Signature: HookSignatureJSON(tr.HookSignature)}
		if withPath {
			out.Hook.Path = HookPathPrefix + instance + "/" + tr.HookToken
		}
		if out.Hook.Headers == nil {
			out.Hook.Headers = []string{}
		}
	case task.TriggerTask:
		out.Task = &errandapi.TriggerOnTask{Queue: instance + "/" + tr.OnQueue, On: tr.OnStates()}
	}
	return out
}

// nullRaw is b, or JSON null for none.
func nullRaw(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("null")
	}
	return b
}

// SettingsJSON renders an instance's settings as the v1 API answers them.
func SettingsJSON(s task.Settings) errandapi.SettingsResponse {
	return errandapi.SettingsResponse{Settings: errandapi.Settings{RetentionDays: s.RetentionDays, MaxInFlight: s.MaxInFlight,
		RateLimit: nonZero(s.RateLimit)}}
}
