package deliver

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"

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
// Marshal does: ", \ and control characters escaped (\b \f \n \r \t
// short, the others \u00XX), <, > and & as \u003c, \u003e, \u0026,
// U+2028 and U+2029 as \u2028 and \u2029, and each byte of invalid UTF-8
// as \ufffd.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

const hexDigits = "0123456789abcdef"
