package errandapi

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"
)

// UnmarshalJSON decodes a lease's answer as encoding/json decodes the
// struct, faster: a lease hands a worker up to 1,000 tasks, and
// encoding/json's reflection over each task's fields was most of what a
// pull worker spent on a task it did nothing with. The answer errand sends
// (compact, its known fields, plain strings, integers) is read in one pass
// (jscan); anything else — an escape in a string, a number with a fraction,
// a field spelled in another case, null where a value was expected — is
// decoded by encoding/json, so the result, and any error, is always
// encoding/json's (TestDecodeLeasedAsUnmarshal, FuzzDecodeLeased). The
// Go SDK calls it directly: json.Unmarshal would first make a pass of its
// own over the bytes.
func (r *LeaseResponse) UnmarshalJSON(raw []byte) error {
	if tasks, ok := scanLeased(raw); ok {
		r.Tasks = tasks
		return nil
	}
	type leaseResponse LeaseResponse // the struct without this method
	return json.Unmarshal(raw, (*leaseResponse)(r))
}

// scanLeased reads an answer in the shape errand sends; ok false: it is
// not, and nothing of it is kept.
func scanLeased(raw []byte) (tasks []LeasedTask, ok bool) {
	return scanList(raw, "tasks", nil, (*jscan).leased)
}

// scanList reads an answer that holds one list of objects under name, or
// null there, each object read by read; other keys are skipped. ok false:
// it is not such an answer, or it has a key that json.Unmarshal would
// match to a field — a second list, name in another case, or one of
// others — and nothing of it is kept.
func scanList[T any](raw []byte, name string, others []string, read func(*jscan, *T) bool) (list []T, ok bool) {
	s := jscan{b: raw}
	seen := false
	for more := s.open('{'); more; {
		key, ok := s.key()
		if !ok {
			return nil, false
		}
		switch {
		case string(key) == name && !seen:
			seen = true
			if s.null() {
				break
			}
			list = []T{} // [] is an empty list, not nil
			for more := s.open('['); more; {
				list = append(list, *new(T))
				if !read(&s, &list[len(list)-1]) {
					return nil, false
				}
				if more, ok = s.next(']'); !ok {
					return nil, false
				}
			}
		case fieldLike(key, name) || fieldLike(key, others...):
			// A second list (encoding/json decodes it into the first's
			// elements), or a field's name, perhaps in another case (which
			// it matches).
			return nil, false
		default:
			if !s.skip() {
				return nil, false
			}
		}
		if more, ok = s.next('}'); !ok {
			return nil, false
		}
	}
	if s.err || !s.end() {
		return nil, false
	}
	return list, true
}

// fieldLike reports whether key is one of names but for case.
func fieldLike(key []byte, names ...string) bool {
	for _, n := range names {
		if strings.EqualFold(string(key), n) {
			return true
		}
	}
	return false
}

// object reads an object's members, each by field (which reports whether
// it knew the key and read its value); a key field does not know is
// skipped unless it is one of fields but for case, which encoding/json
// would match: then object fails.
func (s *jscan) object(fields []string, field func(key []byte) (known, ok bool)) bool {
	for more := s.open('{'); more; {
		key, ok := s.key()
		if !ok {
			return false
		}
		var known bool
		if known, ok = field(key); !known {
			ok = !fieldLike(key, fields...) && s.skip()
		}
		if !ok {
			return false
		}
		if more, ok = s.next('}'); !ok {
			return false
		}
	}
	return !s.err
}

// leasedFields are LeasedTask's JSON names: a key equal to one of them but
// for case is left to encoding/json, which matches it.
var leasedFields = []string{"id", "queue", "name", "payload", "params", "attempts", "leaseId", "leaseExpiresAt",
	"runAt", "createdAt", "source", "depth", "priority", "deadLetterOf", "deliveryToken"}

// leased reads one task object into t.
func (s *jscan) leased(t *LeasedTask) bool {
	return s.object(leasedFields, func(key []byte) (known, ok bool) {
		switch string(key) {
		case "id":
			t.ID, ok = s.str()
		case "queue":
			t.Queue, ok = s.str()
		case "name":
			t.Name, ok = s.strPtr()
		case "payload":
			t.Payload, ok = s.raw()
		case "params":
			t.Params, ok = s.raw()
		case "attempts":
			t.Attempts, ok = s.intValue()
		case "leaseId":
			t.LeaseID, ok = s.str()
		case "leaseExpiresAt":
			t.LeaseExpiresAt, ok = s.integer()
		case "runAt":
			t.RunAt, ok = s.integer()
		case "createdAt":
			t.CreatedAt, ok = s.integer()
		case "source":
			t.Source, ok = s.str()
		case "depth":
			t.Depth, ok = s.intValue()
		case "priority":
			t.Priority, ok = s.intValue()
		case "deadLetterOf":
			t.DeadLetterOf, ok = s.strPtr()
		case "deliveryToken":
			t.DeliveryToken, ok = s.str()
		default:
			return false, false
		}
		return true, ok
	})
}

// jscan reads JSON from b at i. Each method reads one thing after any
// white space and reports whether it was there and valid; a false leaves
// i anywhere (the caller gives up).
type jscan struct {
	b   []byte
	i   int
	err bool // open did not find what it was to open
}

// ws skips white space.
func (s *jscan) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// eat reads c.
func (s *jscan) eat(c byte) bool {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// peek is the next byte after white space (0 at the end).
func (s *jscan) peek() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// end reports whether only white space is left.
func (s *jscan) end() bool {
	s.ws()
	return s.i == len(s.b)
}

// null reads a null if one is next.
func (s *jscan) null() bool {
	if s.peek() == 'n' && len(s.b)-s.i >= 4 && string(s.b[s.i:s.i+4]) == "null" {
		s.i += 4
		return true
	}
	return false
}

// open reads c, '{' or '[', and reports whether members follow: false
// for an empty object or array, or when c is not there (s.err).
func (s *jscan) open(c byte) bool {
	if !s.eat(c) {
		s.err = true
		return false
	}
	return !s.eat(c + 2) // '}' is '{'+2, ']' is '['+2
}

// next reads what follows a member of an object or an array closed by
// end: a comma (more) or end.
func (s *jscan) next(end byte) (more, ok bool) {
	if s.eat(',') {
		return true, true
	}
	return false, s.eat(end)
}

// key reads an object's key and its colon.
func (s *jscan) key() ([]byte, bool) {
	k, ok := s.plain()
	return k, ok && s.eat(':')
}

// plain reads a string without escapes, control characters or invalid
// UTF-8 (json.Unmarshal would change those: they are left to it) and
// returns its bytes.
func (s *jscan) plain() ([]byte, bool) {
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

// str reads a plain string (see plain).
func (s *jscan) str() (string, bool) {
	v, ok := s.plain()
	return string(v), ok
}

// strPtr reads a string or null.
func (s *jscan) strPtr() (*string, bool) {
	if s.null() {
		return nil, true
	}
	v, ok := s.str()
	if !ok {
		return nil, false
	}
	return &v, true
}

// integer reads an integer as json.Unmarshal takes one into an int64: a
// number without fraction or exponent, in range.
func (s *jscan) integer() (int64, bool) {
	s.ws()
	start := s.i
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	digits := s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	n := s.i - digits
	if n == 0 || n > 1 && s.b[digits] == '0' {
		return 0, false
	}
	if s.i < len(s.b) {
		switch s.b[s.i] {
		case '.', 'e', 'E':
			return 0, false
		}
	}
	v, err := strconv.ParseInt(string(s.b[start:s.i]), 10, 64)
	return v, err == nil
}

// intValue reads an integer as json.Unmarshal takes one into an int.
func (s *jscan) intValue() (int, bool) {
	v, ok := s.integer()
	if !ok || int64(int(v)) != v {
		return 0, false
	}
	return int(v), true
}

// raw reads any valid JSON value and returns a copy of its bytes, as
// json.RawMessage keeps it.
func (s *jscan) raw() (json.RawMessage, bool) {
	s.ws()
	start := s.i
	if !s.skip() {
		return nil, false
	}
	return append(json.RawMessage(nil), s.b[start:s.i]...), true
}

// skip reads one valid JSON value, whatever it holds.
func (s *jscan) skip() bool {
	return s.value(0)
}

// maxDepth bounds the nesting skip follows (encoding/json's is 10,000);
// deeper values are left to json.Unmarshal.
const maxDepth = 1000

func (s *jscan) value(depth int) bool {
	if depth > maxDepth {
		return false
	}
	switch c := s.peek(); {
	case c == '{':
		for more := s.open('{'); more; {
			var ok bool
			if _, ok = s.key(); !ok || !s.value(depth+1) {
				return false
			}
			if more, ok = s.next('}'); !ok {
				return false
			}
		}
		return true
	case c == '[':
		for more := s.open('['); more; {
			var ok bool
			if !s.value(depth + 1) {
				return false
			}
			if more, ok = s.next(']'); !ok {
				return false
			}
		}
		return true
	case c == '"':
		return s.anyString()
	case c == '-' || c >= '0' && c <= '9':
		return s.number()
	default:
		for _, lit := range []string{"true", "false", "null"} {
			if len(s.b)-s.i >= len(lit) && string(s.b[s.i:s.i+len(lit)]) == lit {
				s.i += len(lit)
				return true
			}
		}
		return false
	}
}

// anyString reads a valid string, escapes included.
func (s *jscan) anyString() bool {
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
func (s *jscan) number() bool {
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
func (s *jscan) digits() int {
	start := s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	return s.i - start
}

// UnmarshalJSON decodes a batch ack's answer as encoding/json decodes the
// struct, faster: an answer holds a result for each of up to 1,000 acks,
// and encoding/json's reflection over them cost a pull worker ~0.5 µs a
// task. The answer errand sends when it stored at least one ack (compact,
// its known fields, plain strings) is read in one pass with the lease's
// scanner (jscan); anything else — an "error" beside the results, an
// escape in a string, a field spelled in another case — is decoded by
// encoding/json, so the result, and any error, is always encoding/json's
// (TestDecodeAckedAsUnmarshal, FuzzDecodeAcked).
func (r *BatchAckResponse) UnmarshalJSON(raw []byte) error {
	if results, ok := scanAcked(raw); ok {
		r.Results = results
		return nil
	}
	type batchAckResponse BatchAckResponse // the struct without this method
	return json.Unmarshal(raw, (*batchAckResponse)(r))
}

// scanAcked reads an answer in the shape errand sends; ok false: it is
// not (an "error" beside the results, a pointer encoding/json fills, is
// left to it too), and nothing of it is kept.
func scanAcked(raw []byte) (results []BatchAckResult, ok bool) {
	return scanList(raw, "results", []string{"error"}, (*jscan).acked)
}

// ackedFields are BatchAckResult's JSON names: a key equal to one of them
// but for case is left to encoding/json, which matches it.
var ackedFields = []string{"ok", "id", "code", "message"}

// acked reads one result object into r.
func (s *jscan) acked(r *BatchAckResult) bool {
	return s.object(ackedFields, func(key []byte) (known, ok bool) {
		switch string(key) {
		case "ok":
			r.OK, ok = s.boolean()
		case "id":
			r.ID, ok = s.str()
		case "code":
			var c string
			c, ok = s.str()
			r.Code = Code(c)
		case "message":
			r.Message, ok = s.str()
		default:
			return false, false
		}
		return true, ok
	})
}

// boolean reads true or false.
func (s *jscan) boolean() (bool, bool) {
	s.ws()
	for _, lit := range [...]string{"true", "false"} {
		if len(s.b)-s.i >= len(lit) && string(s.b[s.i:s.i+len(lit)]) == lit {
			s.i += len(lit)
			return lit == "true", true
		}
	}
	return false, false
}
