package httpapi

import (
	"net/http"

	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/jsonstrict"
)

// decodeAcks decodes a batch ack's body into out as decodeBody does,
// faster: a batch hands back up to 1,000 acks, and encoding/json's strict
// decoding (reflection over each ack, then the walk over its keys) was
// ~1 µs of serve's CPU an ack. A body of errand's shape — one "acks" list
// of objects with "id", "leaseId" and "result", each at most once, the
// strings plain — is read in one pass (scanAcks); anything else goes to
// jsonstrict.Decode, so the request decoded, and any refusal, is always
// decodeBody's (FuzzScanAcks).
func decodeAcks(r *http.Request, out *errandapi.BatchAckRequest) error {
	raw, err := readJSONBody(r)
	if err != nil {
		return err
	}
	if acks, ok := scanAcks(raw); ok {
		out.Acks = acks
		return nil
	}
	return jsonstrict.Decode(raw, out, "")
}

// scanAcks reads a batch ack's body in errand's shape; ok false: it is
// not, and nothing of it is kept.
func scanAcks(raw []byte) (acks []errandapi.BatchAck, ok bool) {
	s := jsonstrict.NewScanner(raw)
	for more := s.Open('{'); more; {
		key, ok := s.Key()
		if !ok || string(key) != "acks" || acks != nil {
			return nil, false // another key, or a second list, is Decode's to answer
		}
		acks = []errandapi.BatchAck{} // [] is an empty list, not nil
		for more := s.Open('['); more; {
			acks = append(acks, errandapi.BatchAck{})
			if !scanAck(s, &acks[len(acks)-1]) {
				return nil, false
			}
			if more, ok = s.Next(']'); !ok {
				return nil, false
			}
		}
		if more, ok = s.Next('}'); !ok {
			return nil, false
		}
	}
	if acks == nil || s.Failed() || !s.End() {
		return nil, false
	}
	return acks, true
}

// ackKeys are the keys of an ack's object scanAck reads.
var ackKeys = []string{"id", "leaseId", "result"}

// scanAck reads one ack's object into a.
func scanAck(s *jsonstrict.Scanner, a *errandapi.BatchAck) bool {
	return s.Object(ackKeys, func(i int) (ok bool) {
		switch i {
		case 0:
			a.ID, ok = s.Str()
		case 1:
			a.LeaseID, ok = s.Str()
		default:
			a.Result, ok = s.Raw()
		}
		return ok
	})
}
