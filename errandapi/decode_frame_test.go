package errandapi

import (
	"encoding/json"
	"reflect"
	"testing"
)

// frameSeeds are frames of every kind, in the shapes errand and the Go SDK
// write them and in shapes the one-pass reader leaves to encoding/json.
var frameSeeds = []string{
	`{"type":"attempt","leaseId":"n1.01JD3ZQ5W8Y2K4M6N8P0R2T4V6","function":"send","deadlineAt":1796557167984,"priority":3,` +
		`"token":"eyJp.sig","body":{"task":{"id":"t1","queue":"q","name":null,"attempt":1,"maxAttempts":5,"runAt":1,` +
		`"createdAt":1,"deadlineAt":2,"source":"api","depth":0,"params":null,"deadLetterOf":null},"payload":{"a":"<b>"}}}`,
	`{"type":"done","leaseId":"l1","result":{"ok":true}}`,
	`{"type":"done","leaseId":"l1","result":null}`,
	`{"type":"done","leaseId":"l1"}`,
	`{"type":"recorded","leaseId":"l1"}`,
	`{"type":"ping"}`,
	`{"type":"failed","leaseId":"l1","error":"it broke"}`,
	`{"type":"refused","leaseId":"l1","error":{"code":"LEASE_LOST","message":"gone"}}`,
	`{"type":"defer","leaseId":"l1","seconds":1.5}`,
	`{"type":"hello","group":"app","functions":["a","b"],"slots":8,"sdk":"go/1"}`,
	`{"type":"welcome","worker":"w1","heartbeatSeconds":10,"drains":true}`,
	`{"type":"hello","group":"app","functions":["a"],"slots":8,"sdk":"go/1","batches":true}`,
	`{"type":"welcome","worker":"w1","heartbeatSeconds":10,"drains":true,"batches":true}`,
	`{"type":"done","LeaseID":"l1"}`,
	`{"type":"done","leaseId":"l\u0031"}`,
	`{"type":"attempt","deadlineAt":1.5}`,
	`{"type":"attempt","priority":99999999999999999999}`,
	`{"type":"done","type":"failed","x":[1,{"y":null}]}`,
	`{"type":null}`,
	`{"type":"done"} x`,
	`[]`,
	`null`,
	`{"type":"done","body":}`,
}

// TestWorkerFrameScanAsDecode: every frame decodes as encoding/json decodes
// it (decode), errors included, and the frames errand and the SDK write
// for attempts and answers take the one-pass reader.
func TestWorkerFrameScanAsDecode(t *testing.T) {
	fast := 0
	for _, raw := range frameSeeds {
		if sameFrame(t, []byte(raw)) {
			fast++
		}
	}
	if fast < 7 {
		t.Fatalf("%d seeds read in one pass; want at least the 7 of attempts' and answers' fields", fast)
	}
}

// FuzzWorkerFrame holds UnmarshalJSON to decode on any input.
func FuzzWorkerFrame(f *testing.F) {
	for _, s := range frameSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) { sameFrame(t, raw) })
}

// sameFrame checks UnmarshalJSON against decode on raw, into fresh frames
// and into frames already holding values, and reports whether the
// one-pass reader took it.
func sameFrame(t *testing.T, raw []byte) (fast bool) {
	t.Helper()
	for _, start := range []WorkerFrame{{}, {Type: "x", Group: "g", Slots: 3, Error: "e", Body: json.RawMessage("1")}} {
		want, got := start, start
		werr := want.decode(raw)
		gerr := got.UnmarshalJSON(raw)
		sameDecoding(t, raw, got, want, gerr, werr)
	}
	var v WorkerFrame
	return scanFrame(raw, &v)
}

// deliverySeeds are delivery bodies: errand's, and shapes left to
// encoding/json.
var deliverySeeds = []string{
	`{"task":{"id":"t1","queue":"q","name":"n","attempt":2,"maxAttempts":5,"runAt":-1,"createdAt":1,"deadlineAt":2,` +
		`"source":"api","depth":3,"params":{"p":[1,2]},"deadLetterOf":"d"},"payload":{ "a" : "<b>" }}`,
	`{"task":{"id":"t1","queue":"q","name":null,"attempt":1,"maxAttempts":1,"runAt":1,"createdAt":1,"deadlineAt":2,` +
		`"source":"api","depth":0,"params":null,"deadLetterOf":null},"payload":null}`,
	`{"task":{},"payload":"s"}`,
	`{"payload":1,"task":{"id":"a"},"task":{"queue":"b"}}`,
	`{"task":null}`,
	`{"task":{"attempt":"two"},"payload":1}`,
	`{"task":{"Attempt":2}}`,
	`{"Task":{"id":"a"}}`,
	`{"task":{"id":"a\u00e9"}}`,
	`{"task":{"depth":1e2}}`,
	`{"other":[{"x":1}],"payload":2}`,
	`{"payload":2}}`,
	`null`,
	`[]`,
}

// TestDeliveryBodyAsUnmarshal: a delivery body decodes as encoding/json
// decodes the struct, errors included, and errand's bodies take the
// one-pass reader.
func TestDeliveryBodyAsUnmarshal(t *testing.T) {
	fast := 0
	for _, raw := range deliverySeeds {
		if sameDelivery(t, []byte(raw)) {
			fast++
		}
	}
	if fast < 4 {
		t.Fatalf("%d seeds read in one pass; want at least errand's shapes", fast)
	}
}

// FuzzDeliveryBody holds DeliveryBody.UnmarshalJSON to encoding/json on any
// input.
func FuzzDeliveryBody(f *testing.F) {
	for _, s := range deliverySeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) { sameDelivery(t, raw) })
}

// sameDelivery checks DeliveryBody.UnmarshalJSON against encoding/json on
// raw, into a fresh body and one already holding values, and reports
// whether the one-pass reader took it.
func sameDelivery(t *testing.T, raw []byte) (fast bool) {
	t.Helper()
	name := "old"
	for _, start := range []DeliveryBody{{}, {Task: DeliveryTask{ID: "old", Name: &name, Depth: 4}, Payload: json.RawMessage("7")}} {
		want, got := start, start
		werr := json.Unmarshal(raw, (*deliveryBody)(&want))
		gerr := got.UnmarshalJSON(raw)
		sameDecoding(t, raw, got, want, gerr, werr)
	}
	var v DeliveryBody
	return scanDelivery(raw, &v)
}

// deliveryBody is DeliveryBody without its UnmarshalJSON (the name
// UnmarshalJSON decodes into when it leaves a body to encoding/json):
// encoding/json's own decoding, which UnmarshalJSON must match.
type deliveryBody DeliveryBody

// sameDecoding fails t unless a one-pass decoding of raw (got, gerr) came
// out as encoding/json's (want, werr): the same error, or the same value.
func sameDecoding[T any](t *testing.T, raw []byte, got, want T, gerr, werr error) {
	t.Helper()
	if (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error() {
		t.Fatalf("%q: UnmarshalJSON's error %v, encoding/json's %v", raw, gerr, werr)
	}
	if werr == nil && !reflect.DeepEqual(want, got) {
		t.Fatalf("%q:\nUnmarshalJSON %#v\nencoding/json %#v", raw, got, want)
	}
}
