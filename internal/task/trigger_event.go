package task

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"
	"strings"
)

// MaxHookKeyLen bounds a hook call's Idempotency-Key: with the rule's id
// before it, it names the task (at most MaxNameLen).
const MaxHookKeyLen = 400

// ScheduleInput is the task a schedule rule adds for one tick: named by the
// tick (so no second node, restart or retry adds it twice), due at the
// tick, with the rule's payload template as its payload.
func (tr *Trigger) ScheduleInput(tick int64) AddInput {
	return AddInput{
		Name:     TickName(tr.ID, tick),
		Payload:  tr.Payload,
		Params:   tr.Params,
		RunAt:    &tick,
		Priority: tr.priority(),
		Source:   SourceSchedule,
	}
}

// priority is the priority of the tasks tr adds, as AddInput takes it.
func (tr *Trigger) priority() *int {
	if tr.Priority == 0 {
		return nil
	}
	p := tr.Priority
	return &p
}

// HookInput is the task a hook call adds: the request body is the payload
// (the rule's template when the body is empty or null; a form, sent as one,
// as an object of its fields: see hookPayload), the rule's params gain
// "headers" with the selected request headers, and the sender's key (its
// Idempotency-Key, or else msgID: the signed webhook-id, GitHub's
// X-GitHub-Delivery, or a Stripe or Slack event's id) names the task within the rule: "<rule id>-<key>", so a
// sender's retry adds nothing twice while another rule's sender with the
// same key adds its own (unless one rule's id is the other's and "-" and
// more, or an API add takes the prefix: triggers.md says so). A webhook-id
// that is not a task name (a ':' in it, say) is named by its SHA-256. header
// reads one request header.
func (tr *Trigger) HookInput(body []byte, header func(name string) string, key, msgID string) (AddInput, error) {
	// A body of only white space (a sender's trailing newline) is empty;
	// an empty one, or null, takes the rule's template when it has one.
	payload := tr.Payload
	if len(bytes.TrimSpace(body)) > 0 && (!IsJSONNull(body) || tr.Payload == nil) {
		var err error
		if payload, err = hookPayload(body, header("Content-Type")); err != nil {
			return AddInput{}, err
		}
	}
	name := ""
	switch {
	case key != "":
		if len(key) > MaxHookKeyLen {
			return AddInput{}, FieldErrorf(CodeInvalidArgument, "Idempotency-Key", "must be 1–%d characters", MaxHookKeyLen)
		}
		if err := ValidateName(key, "Idempotency-Key"); err != nil {
			return AddInput{}, err
		}
		name = ruleTaskName(tr.ID, key)
	case msgID != "":
		if len(msgID) <= MaxHookKeyLen && ValidateName(msgID, "webhook-id") == nil {
			name = ruleTaskName(tr.ID, msgID)
		} else {
			sum := sha256.Sum256([]byte(msgID))
			name = ruleTaskName(tr.ID, "webhook-id-"+hex.EncodeToString(sum[:16]))
		}
	}
	params := tr.Params
	if len(tr.HookHeaders) > 0 {
		m := map[string]json.RawMessage{}
		if len(params) > 0 {
			if err := json.Unmarshal(params, &m); err != nil {
				return AddInput{}, Errorf(CodeInternal, "rule params: %v", err)
			}
		}
		hs := map[string]string{}
		for _, k := range tr.HookHeaders {
			if v := header(k); v != "" {
				hs[k] = v
			}
		}
		b, _ := json.Marshal(hs)
		m["headers"] = b
		params, _ = json.Marshal(m)
		if err := ValidateJSONBytes(params, "params"); err != nil {
			return AddInput{}, err
		}
	}
	return AddInput{Name: name, Payload: payload, Params: params, Priority: tr.priority(), Source: SourceHook}, nil
}

// Fires reports whether a task rule fires for a task of its watched queue
// that finished in state s.
func (tr *Trigger) Fires(s State) bool {
	return tr.Kind == TriggerTask && (s == Succeeded && tr.OnSucceeded || s == Failed && tr.OnFailed)
}

// chainTask is the finished task as a chained task's payload shows it.
type chainTask struct {
	ID          string  `json:"id"`
	Queue       string  `json:"queue"`
	Name        *string `json:"name"` // null for an unnamed task, as a webhook's body has it
	State       string  `json:"state"`
	Attempt     int     `json:"attempt"`
	MaxAttempts int     `json:"maxAttempts"`
	Source      string  `json:"source"`
	Depth       int     `json:"depth"`
	CreatedAt   int64   `json:"createdAt"`
	FinishedAt  int64   `json:"finishedAt"`
}

// chainPayload is the payload of a task added by a task rule.
type chainPayload struct {
	Task      chainTask       `json:"task"`
	Result    json.RawMessage `json:"result,omitempty"`
	LastError *string         `json:"lastError,omitempty"`
	Payload   json.RawMessage `json:"payload"`
	Template  json.RawMessage `json:"template,omitempty"`
}

// leftOut stands, in a chained task's payload, for the finished task's
// payload and result when the whole would pass MaxPayloadBytes.
var leftOut = json.RawMessage(`"(left out: over 64 KiB with the rest)"`)

// maxChainTemplate bounds a task rule's payload (its template): a chained
// task's payload holds it beside the finished task's fields, its
// lastError (500 bytes, each escaped to six at worst) and leftOut for its
// payload and result, and must fit in MaxPayloadBytes, or the rule could
// never add a task.
var maxChainTemplate = func() int {
	long := func(n int) string { return strings.Repeat("x", n) }
	name, lastError := long(MaxNameLen), strings.Repeat("\x01", 500)
	worst := chainPayload{
		Task: chainTask{ID: long(MaxIDLen), Queue: long(100), Name: &name, State: long(20), Attempt: math.MaxInt, MaxAttempts: math.MaxInt,
			Source: long(20), Depth: math.MaxInt, CreatedAt: math.MaxInt64, FinishedAt: math.MaxInt64},
		Result: leftOut, LastError: &lastError, Payload: leftOut,
	}
	b, err := json.Marshal(worst)
	if err != nil {
		panic(err)
	}
	return MaxPayloadBytes - len(b) - len(`,"template":`)
}()

// ChainInput is the task a task rule adds for parent, which finished in
// state s: its payload is {task: {id, queue, name, state, attempt, …},
// result (succeeded) or lastError (failed), payload (the parent's), and the
// rule's template when it has one}; its depth is the parent's + 1, which
// NewTask refuses past MaxDepth with DEPTH_EXCEEDED.
func (tr *Trigger) ChainInput(parent *Task, s State) (AddInput, error) {
	p := chainPayload{
		Task: chainTask{
			ID: parent.ID, Queue: parent.Queue, State: s.V1(parent.Pull),
			Attempt: parent.Attempt, MaxAttempts: parent.MaxAttempts, Source: parent.Source,
			Depth: parent.Depth, CreatedAt: parent.CreatedAt, FinishedAt: parent.FinishedAt,
		},
		Payload:  parent.Payload,
		Template: tr.Payload,
	}
	if parent.Name != "" {
		p.Task.Name = &parent.Name
	}
	if p.Payload == nil {
		p.Payload = json.RawMessage("null")
	}
	if s == Succeeded {
		p.Result = parent.Result
		if p.Result == nil {
			p.Result = json.RawMessage("null")
		}
	} else {
		msg := parent.LastError
		p.LastError = &msg
	}
	b, err := json.Marshal(p)
	if err != nil {
		return AddInput{}, Errorf(CodeInternal, "chain payload: %v", err)
	}
	if len(b) > MaxPayloadBytes {
		// The parent's payload and result may each be 64 KiB: the chained
		// task keeps what fits and says what it left out.
		p.Payload, p.Result = leftOut, nil
		if s == Succeeded {
			p.Result = leftOut
		}
		if b, err = json.Marshal(p); err != nil {
			return AddInput{}, Errorf(CodeInternal, "chain payload: %v", err)
		}
	}
	return AddInput{Payload: b, Params: tr.Params, Priority: tr.priority(), Source: SourceTask, Depth: parent.Depth + 1}, nil
}
