// Package jsonout appends JSON by hand, byte for byte as encoding/json
// encodes the same values, for what errand writes for every task (a
// webhook's body, a worker's frame, a lease's answer, a finished attempt):
// no reflection and no allocation of its own (but for a raw value with
// white space, which encoding/json compacts), where encoding/json's
// reflection was most of their cost. Fuzz tests hold each function equal to
// encoding/json.
package jsonout

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// AppendString appends s as a JSON string exactly as encoding/json does:
// ", \ and control characters escaped (\b \f \n \r \t short, the others
// \u00XX), U+2028 and U+2029 as \u2028 and \u2029, each byte of invalid
// UTF-8 as \ufffd, and with html <, > and & as \u003c, \u003e, \u0026
// (json.Marshal's default; an Encoder with SetEscapeHTML(false) leaves
// them).
func AppendString(b []byte, s string, html bool) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && (!html || c != '<' && c != '>' && c != '&') {
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

// AppendRaw appends raw, valid JSON as errand stores it, as encoding/json
// encodes a json.RawMessage with HTML escaping off (an Encoder's
// SetEscapeHTML(false)): null for nil, else the bytes compacted (white
// space between tokens removed; without any, as they are). ok is false,
// and b unchanged, when raw with white space is not valid JSON, or is
// empty (encoding/json fails the whole value then).
func AppendRaw(b []byte, raw json.RawMessage) (_ []byte, ok bool) {
	switch {
	case raw == nil:
		return append(b, "null"...), true
	case len(raw) == 0:
		return b, false
	case !bytes.ContainsAny(raw, " \t\n\r"):
		return append(b, raw...), true
	}
	buf := bytes.NewBuffer(b)
	if err := json.Compact(buf, raw); err != nil {
		return b, false
	}
	return buf.Bytes(), true
}
