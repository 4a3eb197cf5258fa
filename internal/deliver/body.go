package deliver

import (
	"encoding/json"
	"strconv"

	"github.com/errandhq/errand/internal/task"
)

// Body returns the JSON body a webhook or function target receives:
//
//	{"task":{"id","queue","name","attempt","maxAttempts","runAt","createdAt",
//	 "deadlineAt","source","depth","params","deadLetterOf"},"payload":…}
//
// name, params and deadLetterOf are null when empty; times are epoch
// milliseconds. The payload and params bytes are copied as stored, not
// re-encoded, so a receiver sees exactly what was added.
func Body(t *task.Task) []byte {
	b := make([]byte, 0, 256+len(t.Payload)+len(t.Params))
	b = append(b, `{"task":{"id":`...)
	b = appendString(b, t.ID)
	b = append(b, `,"queue":`...)
	b = appendString(b, t.Queue)
	b = append(b, `,"name":`...)
	b = appendStringOrNull(b, t.Name)
	b = append(b, `,"attempt":`...)
	b = strconv.AppendInt(b, int64(t.Attempt), 10)
	b = append(b, `,"maxAttempts":`...)
	b = strconv.AppendInt(b, int64(t.MaxAttempts), 10)
	b = append(b, `,"runAt":`...)
	b = strconv.AppendInt(b, t.RunAt, 10)
	b = append(b, `,"createdAt":`...)
	b = strconv.AppendInt(b, t.CreatedAt, 10)
	b = append(b, `,"deadlineAt":`...)
	b = strconv.AppendInt(b, t.DeadlineAt, 10)
	b = append(b, `,"source":`...)
	b = appendString(b, t.Source)
	b = append(b, `,"depth":`...)
	b = strconv.AppendInt(b, int64(t.Depth), 10)
	b = append(b, `,"params":`...)
	b = appendRaw(b, t.Params)
	b = append(b, `,"deadLetterOf":`...)
	b = appendStringOrNull(b, t.DeadLetterOf)
	b = append(b, `},"payload":`...)
	b = appendRaw(b, t.Payload)
	return append(b, '}')
}

// appendRaw appends stored JSON as it is, or null for none.
func appendRaw(b []byte, raw json.RawMessage) []byte {
	if task.IsJSONNull(raw) {
		return append(b, "null"...)
	}
	return append(b, raw...)
}

func appendStringOrNull(b []byte, s string) []byte {
	if s == "" {
		return append(b, "null"...)
	}
	return appendString(b, s)
}

// appendString appends s as a JSON string: plain printable ASCII directly,
// anything else through encoding/json.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
