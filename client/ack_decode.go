package client

import (
	"encoding/json"

	"github.com/errandhq/errand/errandapi"
)

// decodeAcked decodes a batch ack's answer into out as json.Unmarshal
// does, faster: an answer holds a result for each of up to 1,000 acks, and
// encoding/json's reflection over them cost a pull worker ~0.5 µs a task.
// The answer errand sends when it stored at least one ack (compact, its
// known fields, plain strings) is read in one pass with the lease's
// scanner (jscan); anything else — an "error" beside the results, an
// escape in a string, a field spelled in another case — is left to
// json.Unmarshal, so the result, and any error, is always the one
// json.Unmarshal gives (TestDecodeAckedAsUnmarshal, FuzzDecodeAcked).
func decodeAcked(raw []byte, out *errandapi.BatchAckResponse) error {
	if results, ok := scanAcked(raw); ok {
		out.Results = results
		return nil
	}
	*out = errandapi.BatchAckResponse{}
	return json.Unmarshal(raw, out)
}

// scanAcked reads an answer in the shape errand sends; ok false: it is
// not (an "error" beside the results, a pointer encoding/json fills, is
// left to it too), and nothing of it is kept.
func scanAcked(raw []byte) (results []errandapi.BatchAckResult, ok bool) {
	return scanList(raw, "results", []string{"error"}, (*jscan).acked)
}

// ackedFields are BatchAckResult's JSON names: a key equal to one of them
// but for case is left to encoding/json, which matches it.
var ackedFields = []string{"ok", "id", "code", "message"}

// acked reads one result object into r.
func (s *jscan) acked(r *errandapi.BatchAckResult) bool {
	return s.object(ackedFields, func(key []byte) (known, ok bool) {
		switch string(key) {
		case "ok":
			r.OK, ok = s.boolean()
		case "id":
			r.ID, ok = s.str()
		case "code":
			var c string
			c, ok = s.str()
			r.Code = errandapi.Code(c)
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
