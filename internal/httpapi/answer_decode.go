package httpapi

import (
	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/jsonstrict"
)

// scanAnswer reads a frame from a worker in the shape the Go SDK writes its
// answers — one object of "type", "leaseId" and "result", each at most
// once, the strings plain, the result any JSON — without encoding/json's
// reflection (once a task: ~1.5 µs of serve's CPU). ok false: the frame is
// not of that shape (another key, an escape, a repeated key, no type), and
// wsTransport.read decodes it as before, so every frame, and every
// refusal, is read as the frame's own decoder reads it (FuzzScanAnswer).
func scanAnswer(b []byte) (*errandapi.WorkerFrame, bool) {
	s := jsonstrict.NewScanner(b)
	f := &errandapi.WorkerFrame{}
	ok := s.Object(answerKeys, func(i int) (ok bool) {
		switch i {
		case 0:
			f.Type, ok = s.Str()
		case 1:
			f.LeaseID, ok = s.Str()
		default:
			f.Result, ok = s.Raw()
		}
		return ok
	})
	if !ok || !s.End() || f.Type == "" {
		return nil, false
	}
	return f, true
}

// answerKeys are the keys of a frame scanAnswer reads.
var answerKeys = []string{"type", "leaseId", "result"}
