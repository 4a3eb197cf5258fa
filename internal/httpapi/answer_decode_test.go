package httpapi

import (
	"reflect"
	"testing"

	"github.com/errandhq/errand/errandapi"
)

// answerSeeds are frames a worker may send: the SDK's answers, and frames
// the shortcut must leave to the decoder.
var answerSeeds = []string{
	`{"type":"done","leaseId":"n1.01JD3ZQ5W8Y2K4M6N8P0R2T4V6","result":{"ok":true,"s":"a<b"}}`,
	`{"type":"done","leaseId":"l1"}`,
	`{"type":"done","leaseId":"l1","result":null}`,
	`{"type":"done","leaseId":"l1","result":"x\u00e9"}`,
	`{"type":"done","leaseId":"l1","result":[1, 2.5e3 , {"a":[]}]}`,
	` { "leaseId" : "l1" , "type" : "done" } `,
	`{"type":"ping"}`,
	`{"type":"draining"}`,
	`{"type":"failed","leaseId":"l1","error":"it broke"}`,
	`{"type":"defer","leaseId":"l1","seconds":2}`,
	`{"type":"done","leaseId":"l\u0031"}`,
	`{"type":"done","type":"failed","leaseId":"l1"}`,
	`{"Type":"done","leaseId":"l1"}`,
	`{"type":"done","LeaseId":"l1"}`,
	`{"type":"done","leaseId":"l1","result":}`,
	`{"type":"done","leaseId":7}`,
	`{"type":"","leaseId":"l1"}`,
	`{"leaseId":"l1"}`,
	`{}`,
	`[]`,
	`{"type":"done"}x`,
	`{"type":"done",}`,
	`{"type":"d` + "\xff" + `"}`,
}

// TestScanAnswerAsDecoder: a frame the shortcut reads is read as the
// frame's decoder reads it, and a frame it leaves goes to the decoder.
func TestScanAnswerAsDecoder(t *testing.T) {
	read := 0
	for _, raw := range answerSeeds {
		if sameAnswer(t, []byte(raw)) {
			read++
		}
	}
	if read < 7 {
		t.Fatalf("the shortcut read %d of the seeds; want at least the 7 of the SDK's shape", read)
	}
}

// FuzzScanAnswer holds scanAnswer to the frame's decoder on any input.
func FuzzScanAnswer(f *testing.F) {
	for _, s := range answerSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) { sameAnswer(t, b) })
}

// sameAnswer checks scanAnswer against WorkerFrame.UnmarshalJSON on b and
// reports whether the shortcut read it.
func sameAnswer(t *testing.T, b []byte) bool {
	t.Helper()
	got, ok := scanAnswer(b)
	if !ok {
		return false
	}
	var want errandapi.WorkerFrame
	if err := want.UnmarshalJSON(b); err != nil || want.Type == "" {
		t.Fatalf("%s: read by the shortcut as %+v; read refuses it (type %q, %v)", b, got, want.Type, err)
	}
	if !reflect.DeepEqual(*got, want) {
		t.Fatalf("%s:\nshortcut %+v\ndecoder  %+v", b, *got, want)
	}
	return true
}
