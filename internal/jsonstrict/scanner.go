package jsonstrict

import (
	"encoding/json"
	"unicode/utf8"
)

// Scanner reads JSON of a shape its caller knows, in one pass and without
// reflection: the fast path of a decoding whose general path is Decode
// (a batch ack's body, for one). Each method reads one thing after any
// white space and reports whether it was there and valid; a false leaves
// the scanner anywhere, and its caller gives the input to Decode, so a
// request's result and any refusal are always Decode's. Strings are read
// only when json.Unmarshal would keep their bytes as they are (no escape,
// no control character, valid UTF-8).
//
// The Go SDK reads a lease's answer with a scanner of its own
// (errandapi/decode.go): the SDK and its wire types import nothing
// internal.
type Scanner struct {
	b      []byte
	i      int
	failed bool // Open did not find what it was to open
}

// NewScanner returns a Scanner of b.
func NewScanner(b []byte) *Scanner { return &Scanner{b: b} }

// Failed reports whether an Open did not find its bracket.
func (s *Scanner) Failed() bool { return s.failed }

// ws skips white space.
func (s *Scanner) ws() { s.i = skipSpace(s.b, s.i) }

// eat reads c.
func (s *Scanner) eat(c byte) bool {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// End reports whether only white space is left.
func (s *Scanner) End() bool {
	s.ws()
	return s.i == len(s.b)
}

// Open reads c, '{' or '[', and reports whether members follow: false
// for an empty object or array, or when c is not there (then Failed).
func (s *Scanner) Open(c byte) bool {
	if !s.eat(c) {
		s.failed = true
		return false
	}
	return !s.eat(c + 2) // '}' is '{'+2, ']' is '['+2
}

// Next reads what follows a member of an object or an array closed by
// end: a comma (more) or end.
func (s *Scanner) Next(end byte) (more, ok bool) {
	if s.eat(',') {
		return true, true
	}
	return false, s.eat(end)
}

// Object reads an object whose keys are each one of keys (at most 64),
// none twice, reading each member's value with value(i), i the key's index
// in keys. It reports whether the object was all that and each value was
// read: another key (which json.Unmarshal would match to a field in
// another case, or refuse) or a repeated one is a false, for the caller's
// general path.
func (s *Scanner) Object(keys []string, value func(i int) bool) bool {
	var seen uint64
	for more := s.Open('{'); more; {
		key, ok := s.Key()
		if !ok {
			return false
		}
		i := -1
		for j, k := range keys {
			if string(key) == k {
				i = j
				break
			}
		}
		if i < 0 || seen&(1<<i) != 0 || !value(i) {
			return false
		}
		seen |= 1 << i
		if more, ok = s.Next('}'); !ok {
			return false
		}
	}
	return !s.failed
}

// Key reads an object's key, a plain string (see Str), and its colon.
func (s *Scanner) Key() ([]byte, bool) {
	k, ok := s.plain()
	return k, ok && s.eat(':')
}

// Str reads a string json.Unmarshal would keep byte for byte: no escape,
// no control character, valid UTF-8.
func (s *Scanner) Str() (string, bool) {
	v, ok := s.plain()
	return string(v), ok
}

// plain is Str's bytes, not copied.
func (s *Scanner) plain() ([]byte, bool) {
	if !s.eat('"') {
		return nil, false
	}
	start := s.i
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			v := s.b[start:s.i]
			s.i++
			return v, utf8.Valid(v)
		case c == '\\' || c < 0x20:
			return nil, false
		}
		s.i++
	}
	return nil, false
}

// Raw reads any valid JSON value and returns a copy of its bytes, as
// json.RawMessage keeps it.
func (s *Scanner) Raw() (json.RawMessage, bool) {
	s.ws()
	start := s.i
	if !s.value(0) {
		return nil, false
	}
	return append(json.RawMessage(nil), s.b[start:s.i]...), true
}

// maxScanDepth bounds the nesting Raw follows (encoding/json's is 10,000);
// deeper values are left to Decode.
const maxScanDepth = 1000

// value reads one valid JSON value at depth.
func (s *Scanner) value(depth int) bool {
	if depth > maxScanDepth {
		return false
	}
	s.ws()
	if s.i == len(s.b) {
		return false
	}
	switch c := s.b[s.i]; {
	case c == '{':
		for more := s.Open('{'); more; {
			if !s.anyKey() || !s.value(depth+1) {
				return false
			}
			var ok bool
			if more, ok = s.Next('}'); !ok {
				return false
			}
		}
		return true
	case c == '[':
		for more := s.Open('['); more; {
			var ok bool
			if !s.value(depth + 1) {
				return false
			}
			if more, ok = s.Next(']'); !ok {
				return false
			}
		}
		return true
	case c == '"':
		return s.anyString()
	case c == '-' || c >= '0' && c <= '9':
		return s.number()
	default:
		for _, lit := range [...]string{"true", "false", "null"} {
			if len(s.b)-s.i >= len(lit) && string(s.b[s.i:s.i+len(lit)]) == lit {
				s.i += len(lit)
				return true
			}
		}
		return false
	}
}

// anyKey reads a key of any valid string and its colon.
func (s *Scanner) anyKey() bool {
	s.ws()
	if s.i == len(s.b) || s.b[s.i] != '"' {
		return false
	}
	return s.anyString() && s.eat(':')
}

// anyString reads a valid string at s.b[s.i] == '"', escapes included.
func (s *Scanner) anyString() bool {
	s.i++ // the opening quote
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			return true
		case c < 0x20:
			return false
		case c == '\\':
			if s.i+1 >= len(s.b) {
				return false
			}
			switch s.b[s.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i += 2
			case 'u':
				if s.i+6 > len(s.b) {
					return false
				}
				for _, h := range s.b[s.i+2 : s.i+6] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return false
					}
				}
				s.i += 6
			default:
				return false
			}
		default:
			s.i++
		}
	}
	return false
}

// number reads a valid JSON number.
func (s *Scanner) number() bool {
	if s.b[s.i] == '-' {
		s.i++
	}
	switch {
	case s.i < len(s.b) && s.b[s.i] == '0':
		s.i++
	case s.i < len(s.b) && s.b[s.i] >= '1' && s.b[s.i] <= '9':
		s.digits()
	default:
		return false
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if s.digits() == 0 {
			return false
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if s.digits() == 0 {
			return false
		}
	}
	return true
}

// digits reads digits and returns how many.
func (s *Scanner) digits() int {
	start := s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	return s.i - start
}
