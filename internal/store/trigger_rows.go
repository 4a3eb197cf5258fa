package store

import (
	"database/sql"
	"encoding/json"

	"github.com/errandhq/errand/internal/task"
)

// TriggerColumns are the columns of a rule, in the order TriggerArgs writes
// them and ScanTrigger reads them, in every backend.
var TriggerColumns = []string{
	"instance_id", "id", "kind", "queue", "enabled", "params", "payload", "cron", "time_zone",
	"last_tick_at", "next_tick_at", "hook_token", "hook_secret", "hook_headers", "on_queue",
	"on_succeeded", "on_failed", "fired", "error_count", "last_error", "last_error_at",
	"created_at", "updated_at", "priority", "hook_signature",
}

// TriggerArgs returns tr's values in TriggerColumns' order.
func TriggerArgs(tr *task.Trigger) ([]any, error) {
	headers := "[]"
	if len(tr.HookHeaders) > 0 {
		b, err := json.Marshal(tr.HookHeaders)
		if err != nil {
			return nil, task.Errorf(task.CodeInternal, "store: encode hook headers: %v", err)
		}
		headers = string(b)
	}
	signature := ""
	if tr.HookSignature != nil {
		b, err := json.Marshal(tr.HookSignature)
		if err != nil {
			return nil, task.Errorf(task.CodeInternal, "store: encode hook signature: %v", err)
		}
		signature = string(b)
	}
	return []any{
		tr.InstanceID, tr.ID, string(tr.Kind), tr.Queue, tr.Enabled, nilIfEmpty(tr.Params), nilIfEmpty(tr.Payload),
		tr.Cron, tr.TimeZone, tr.LastTickAt, tr.NextTickAt, nullString(tr.HookToken), tr.HookSecret, headers,
		nullString(tr.OnQueue), tr.OnSucceeded, tr.OnFailed, tr.Fired, tr.ErrorCount, tr.LastError,
		tr.LastErrorAt, tr.CreatedAt, tr.UpdatedAt, tr.Priority, signature,
	}, nil
}

// ScanTrigger reads one rule in TriggerColumns' order with scan (a row's
// Scan). scan's own error is returned as it is, for the backend to
// interpret.
func ScanTrigger(scan func(dest ...any) error) (*task.Trigger, error) {
	tr := &task.Trigger{}
	var (
		kind, headers   string
		signature       string
		token, onQueue  sql.NullString
		params, payload []byte
	)
	if err := scan(&tr.InstanceID, &tr.ID, &kind, &tr.Queue, &tr.Enabled, &params, &payload, &tr.Cron,
		&tr.TimeZone, &tr.LastTickAt, &tr.NextTickAt, &token, &tr.HookSecret, &headers, &onQueue,
		&tr.OnSucceeded, &tr.OnFailed, &tr.Fired, &tr.ErrorCount, &tr.LastError, &tr.LastErrorAt,
		&tr.CreatedAt, &tr.UpdatedAt, &tr.Priority, &signature); err != nil {
		return nil, err
	}
	tr.Kind = task.TriggerKind(kind)
	tr.HookToken, tr.OnQueue = token.String, onQueue.String
	if len(params) > 0 {
		tr.Params = json.RawMessage(params)
	}
	if len(payload) > 0 {
		tr.Payload = json.RawMessage(payload)
	}
	if headers != "" && headers != "[]" {
		if err := json.Unmarshal([]byte(headers), &tr.HookHeaders); err != nil {
			return nil, task.Errorf(task.CodeInternal, "store: rule %s: unreadable hook headers: %v", tr.ID, err)
		}
	}
	if signature != "" {
		tr.HookSignature = &task.HookSignature{}
		if err := json.Unmarshal([]byte(signature), tr.HookSignature); err != nil {
			return nil, task.Errorf(task.CodeInternal, "store: rule %s: unreadable hook signature: %v", tr.ID, err)
		}
	}
	return tr, nil
}

// ChainState reports whether a finish in state s may fire task rules
// (SUCCEEDED or FAILED): the states a backend writes chain events for.
func ChainState(s task.State) bool { return s == task.Succeeded || s == task.Failed }

func nilIfEmpty(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return b
}

func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// TriggerEventColumns are the columns of a chain event, in the order
// ScanTriggerEvent reads them.
const TriggerEventColumns = "instance_id, seq, rule_id, task_id, state, finished_at"

// ScanTriggerEvent reads one chain event in TriggerEventColumns' order with
// scan; scan's own error is returned as it is.
func ScanTriggerEvent(scan func(dest ...any) error) (*TriggerEvent, error) {
	ev := &TriggerEvent{}
	var st string
	if err := scan(&ev.InstanceID, &ev.Seq, &ev.RuleID, &ev.TaskID, &st, &ev.FinishedAt); err != nil {
		return nil, err
	}
	ev.State = task.State(st)
	return ev, nil
}

// MaxRecordedError is how many bytes of a refusal a rule keeps as its
// last error.
const MaxRecordedError = 500

// TruncateMsg cuts a refusal to MaxRecordedError bytes at a character's
// boundary, as a rule keeps it.
func TruncateMsg(s string) string { return task.CutUTF8(s, MaxRecordedError) }
