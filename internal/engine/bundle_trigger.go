package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/task"
)

// BundleTrigger is a trigger rule of a bundle's instance, in v1 names, with
// its id (an import finds the rule again by it). A hook rule carries neither
// its token (the {hook} of its URL) nor its secret: a bundle is safe to
// keep in a repository, so it holds no capability. HasSecret says whether
// the rule had a secret.
type BundleTrigger struct {
	ID       string                   `json:"id"`
	Queue    string                   `json:"queue"` // "<instance>/<queue>"
	Params   json.RawMessage          `json:"params"`
	Payload  json.RawMessage          `json:"payload"`
	Priority int                      `json:"priority,omitempty"` // bundles made before priorities hold none
	Enabled  bool                     `json:"enabled"`
	Schedule *BundleSchedule          `json:"schedule,omitempty"`
	Hook     *BundleHook              `json:"hook,omitempty"`
	Task     *errandapi.TriggerOnTask `json:"task,omitempty"`
}

// BundleSchedule is a schedule rule's cron expression and time zone.
type BundleSchedule struct {
	Cron     string `json:"cron"`
	TimeZone string `json:"timeZone"`
}

// BundleHook is a hook rule's copied headers, whether it has a secret
// (the secret itself never leaves the store in a bundle), and its own
// signature scheme (no secret: kept).
type BundleHook struct {
	Headers   []string                 `json:"headers"`
	HasSecret bool                     `json:"hasSecret"`
	Signature *errandapi.HookSignature `json:"signature,omitempty"`
}

// bundleTrigger is tr as a bundle holds it; instance is its instance's name.
func bundleTrigger(tr *task.Trigger, instance string) BundleTrigger {
	bt := BundleTrigger{ID: tr.ID, Queue: tr.Target(instance), Params: normRaw(tr.Params), Payload: normRaw(tr.Payload),
		Priority: tr.Priority, Enabled: tr.Enabled}
	switch tr.Kind {
	case task.TriggerSchedule:
		bt.Schedule = &BundleSchedule{Cron: tr.Cron, TimeZone: tr.TimeZone}
	case task.TriggerHook:
		bt.Hook = &BundleHook{Headers: append([]string{}, tr.HookHeaders...), HasSecret: tr.HookSecret != "", Signature: HookSignatureJSON(tr.HookSignature)}
	case task.TriggerTask:
		bt.Task = &errandapi.TriggerOnTask{Queue: instance + "/" + tr.OnQueue, On: tr.OnStates()}
	}
	return bt
}

// BundleTriggerOf is a rule of the v1 API in the bundle's shape (what
// errand import compares a bundle's rule with).
func BundleTriggerOf(tr errandapi.Trigger) BundleTrigger {
	bt := BundleTrigger{ID: tr.ID, Queue: tr.Queue, Params: normRaw(tr.Params), Payload: normRaw(tr.Payload),
		Priority: tr.Priority, Enabled: tr.Enabled}
	switch {
	case tr.Schedule != nil:
		bt.Schedule = &BundleSchedule{Cron: tr.Schedule.Cron, TimeZone: tr.Schedule.TimeZone}
	case tr.Hook != nil:
		bt.Hook = &BundleHook{Headers: append([]string{}, tr.Hook.Headers...), HasSecret: tr.Hook.HasSecret, Signature: tr.Hook.Signature}
	case tr.Task != nil:
		bt.Task = &errandapi.TriggerOnTask{Queue: tr.Task.Queue, On: append([]string{}, tr.Task.On...)}
	}
	return bt
}

// normRaw is raw JSON compacted, nil for none or null, so two rules compare
// equal whatever whitespace their JSON was sent with.
func normRaw(raw json.RawMessage) json.RawMessage {
	if task.IsJSONNull(raw) {
		return nil
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}

// Request is bt as the v1 request that sets every field of the rule but
// its secret; create adds the id.
func (bt BundleTrigger) Request(create bool) errandapi.TriggerRequest {
	q := bt.Queue
	enabled, priority := bt.Enabled, bt.Priority
	r := errandapi.TriggerRequest{Queue: &q, Params: orNull(bt.Params), Payload: orNull(bt.Payload), Priority: &priority,
		Enabled: &enabled}
	if create {
		r.ID = bt.ID
	}
	switch {
	case bt.Schedule != nil:
		cron, tz := bt.Schedule.Cron, bt.Schedule.TimeZone
		r.Schedule = &errandapi.TriggerScheduleSpec{Cron: &cron, TimeZone: &tz}
	case bt.Hook != nil:
		hs := append([]string{}, bt.Hook.Headers...)
		r.Hook = &errandapi.TriggerHookSpec{Headers: &hs, Signature: errandapi.Null[errandapi.HookSignature]()}
		if bt.Hook.Signature != nil {
			r.Hook.Signature = errandapi.Value(*bt.Hook.Signature)
		}
	case bt.Task != nil:
		wq, on := bt.Task.Queue, append([]string{}, bt.Task.On...)
		r.Task = &errandapi.TriggerTaskSpec{Queue: &wq, On: &on}
	}
	return r
}

// patch is bt as the domain's patch (the same fields as Request).
func (bt BundleTrigger) patch(create bool) *task.TriggerPatch {
	r := bt.Request(create)
	p := &task.TriggerPatch{ID: r.ID, Queue: r.Queue, Params: &r.Params, Payload: &r.Payload, Priority: r.Priority,
		Enabled: r.Enabled}
	switch {
	case r.Schedule != nil:
		p.Schedule = &task.SchedulePatch{Cron: r.Schedule.Cron, TimeZone: r.Schedule.TimeZone}
	case r.Hook != nil:
		p.Hook = &task.HookPatch{Headers: r.Hook.Headers, Signature: hookSignaturePatch(r.Hook.Signature)}
	case r.Task != nil:
		p.Task = &task.TaskOnPatch{Queue: r.Task.Queue, On: r.Task.On}
	}
	return p
}

func orNull(raw json.RawMessage) json.RawMessage {
	if raw == nil {
		return json.RawMessage("null")
	}
	return raw
}

// check checks one rule of bundle instance bi: its id, every field as a
// create would, and that the queues it names are queues of bi, the one it
// adds to with a target or pull.
func (bt BundleTrigger) check(bi *BundleInstance, field string, seen map[string]bool) error {
	if !task.ValidID(bt.ID) {
		return task.IDError(field + ".id")
	}
	if seen[bt.ID] {
		return task.FieldErrorf(task.CodeInvalidArgument, field+".id", "%s is the id of another rule of the instance", task.Quote(bt.ID))
	}
	seen[bt.ID] = true
	tr := &task.Trigger{}
	if bt.hadSecret() {
		bt.Enabled = false // as an import creates it (PlanTrigger)
	}
	if err := bt.patch(true).Apply(tr, bi.Name, true); err != nil {
		return prefixed(err, field)
	}
	var q *BundleQueue
	for i := range bi.Queues {
		if bi.Queues[i].Name == tr.Queue {
			q = &bi.Queues[i]
		}
	}
	switch {
	case q == nil:
		return task.FieldErrorf(task.CodeInvalidArgument, field+".queue", "names %s, which the bundle does not hold", task.Quote(bt.Queue))
	case !(&task.Queue{Mode: q.Mode, Target: q.Target}).DeliversUntargeted():
		return task.FieldErrorf(task.CodeNoTarget, field+".queue", "%s", ruleNoTargetWords(tr.Queue))
	}
	if tr.Kind == task.TriggerTask {
		found := false
		for _, bq := range bi.Queues {
			found = found || bq.Name == tr.OnQueue
		}
		if !found {
			return task.FieldErrorf(task.CodeInvalidArgument, field+".task.queue", "names %s, which the bundle does not hold", task.Quote(bt.Task.Queue))
		}
	}
	return nil
}

// TriggerImport is what an import does with one rule of a bundle.
type TriggerImport struct {
	// Action is "created", "changed" or "left".
	Action string
	// Want is the rule to create or the fields to set.
	Want BundleTrigger
	// Note, when set, says what the operator must still do (a hook whose
	// secret the bundle could not carry).
	Note string
}

// PlanTrigger decides what importing want over cur (nil: no rule with its
// id) does. An import never sets or removes a hook's secret. A hook rule
// that had a secret is created (or kept) disabled until the rule has one
// again: it would otherwise take unsigned calls its origin refused.
func PlanTrigger(instance string, want BundleTrigger, cur *BundleTrigger) (TriggerImport, error) {
	want.Params, want.Payload = normRaw(want.Params), normRaw(want.Payload)
	if want.Hook != nil && want.Hook.Headers == nil {
		w := *want.Hook
		w.Headers = []string{}
		want.Hook = &w
	}
	item := "trigger " + instance + "/" + want.ID
	if cur != nil && (cur.Schedule == nil) != (want.Schedule == nil) || cur != nil && (cur.Hook == nil) != (want.Hook == nil) {
		return TriggerImport{}, task.Errorf(task.CodeInvalidArgument, "%s exists as a %s rule; a rule's kind cannot change", item, cur.kind())
	}
	needsSecret := want.hadSecret() && (cur == nil || !cur.hadSecret())
	note := ""
	if needsSecret {
		if want.Enabled {
			note = fmt.Sprintf("%s: a hook with a secret, which a bundle does not carry; it stays disabled until you set hook.secret and enable it (PATCH /v1/tasks/%s/triggers/%s)", item, instance, want.ID)
		}
		want.Enabled = false
	}
	if cur == nil {
		return TriggerImport{Action: "created", Want: want, Note: note}, nil
	}
	if want.Hook != nil && cur.Hook != nil {
		w := *want.Hook
		w.HasSecret = cur.Hook.HasSecret
		want.Hook = &w
	}
	if reflect.DeepEqual(want, *cur) {
		return TriggerImport{Action: "left", Want: want, Note: note}, nil
	}
	return TriggerImport{Action: "changed", Want: want, Note: note}, nil
}

// hadSecret reports whether bt is a hook rule that had a secret, which a
// bundle does not carry: an import creates it disabled until it has one.
func (bt *BundleTrigger) hadSecret() bool { return bt.Hook != nil && bt.Hook.HasSecret }

func (bt *BundleTrigger) kind() task.TriggerKind {
	switch {
	case bt.Schedule != nil:
		return task.TriggerSchedule
	case bt.Hook != nil:
		return task.TriggerHook
	}
	return task.TriggerTask
}
