package deliver

import (
	"encoding/json"
	"strconv"

	"github.com/errandhq/errand/internal/jsonout"
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
	return appendBody(make([]byte, 0, bodySize(t)), t)
}

// bodySize is the length of t's body when no string needs escaping.
func bodySize(t *task.Task) int {
	return 256 + len(t.ID) + len(t.Queue) + len(t.Name) + len(t.Source) + len(t.DeadLetterOf) +
		len(t.Payload) + len(t.Params)
}

// appendBody appends t's body, as Body returns it, to b. Its strings are
// encoded by hand, byte for byte as encoding/json encodes them (a fuzz test
// holds the two equal), which costs no reflection and no allocation.
func appendBody(b []byte, t *task.Task) []byte {
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

// appendString appends s as a JSON string exactly as encoding/json's
// Marshal does (<, > and & escaped).
func appendString(b []byte, s string) []byte {
	return jsonout.AppendString(b, s, true)
}
