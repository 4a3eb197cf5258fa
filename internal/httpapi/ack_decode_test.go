package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/jsonstrict"
)

// ackBodies are batch ack bodies: those scanAcks takes (fast true) and
// those it leaves to jsonstrict.Decode, valid or not.
var ackBodies = []struct {
	body string
	fast bool
}{
	{`{"acks":[{"id":"a","leaseId":"l"}]}`, true},
	{` { "acks" : [ { "id" : "a" , "leaseId" : "l" , "result" : { "n" : [1, 2.5e-3, true, null, "x\u00e9\n"] } } , {} ] } `, true},
	{`{"acks":[]}`, true},
	{`{"acks":[{"result":null}]}`, true},
	{`{"acks":[{"result":"é"}]}`, true},
	{`{"acks":[{"id":"é"}]}`, true},
	{`{}`, false},
	{``, false},
	{`{"acks":null}`, false},
	{`{"acks":[null]}`, false},
	{`{"acks":[1]}`, false},
	{`{"acks":{}}`, false},
	{`{"Acks":[]}`, false},
	{`{"acks":[],"acks":[]}`, false},
	{`{"acks":[],"x":1}`, false},
	{`{"acks":[{"ID":"a"}]}`, false},
	{`{"acks":[{"id":"a","id":"b"}]}`, false},
	{`{"acks":[{"id":1}]}`, false},
	{`{"acks":[{"id":null}]}`, false},
	{`{"acks":[{"id":"a\"b"}]}`, false},
	{"{\"acks\":[{\"id\":\"\xff\"}]}", false},
	{"{\"acks\":[{\"id\":\"a\tb\"}]}", false},
	{`{"acks":[{"leaseId":"l","x":1}]}`, false},
	{`{"acks":[{"result":01}]}`, false},
	{`{"acks":[{"result":1.}]}`, false},
	{`{"acks":[{"result":tru}]}`, false},
	{`{"acks":[{"result":"\x"}]}`, false},
	{`{"acks":[{"result":}]}`, false},
	{`{"acks":[{"result":1,"result":2}]}`, false},
	{`{"acks":[{"id":"a"}]} x`, false},
	{`{"acks":[{"id":"a"}]}}`, false},
	{`{"acks":[{"id":"a"},]}`, false},
	{`{"acks":[{"id":"a"}`, false},
	{`[]`, false},
	{`{"acks":[{"result":` + strings.Repeat("[", 1002) + strings.Repeat("]", 1002) + `}]}`, false},
}

// TestScanAcksAsDecode: scanAcks takes the bodies of errand's shape and
// leaves the rest; whatever it takes decodes as jsonstrict.Decode decodes
// it, and decodeAcks answers every body as decodeBody does.
func TestScanAcksAsDecode(t *testing.T) {
	for _, c := range ackBodies {
		if _, ok := scanAcks([]byte(c.body)); ok != c.fast {
			t.Errorf("%q: scanned %v, want %v", c.body, ok, c.fast)
		}
		checkAcksAsDecode(t, []byte(c.body))
	}
}

// FuzzScanAcks: for any body, decodeAcks decodes what decodeBody decodes
// and refuses what it refuses, with the same error.
func FuzzScanAcks(f *testing.F) {
	for _, c := range ackBodies {
		f.Add([]byte(c.body))
	}
	f.Fuzz(func(t *testing.T, body []byte) { checkAcksAsDecode(t, body) })
}

// checkAcksAsDecode compares decodeAcks with decodeBody on body.
func checkAcksAsDecode(t *testing.T, body []byte) {
	t.Helper()
	var got, want errandapi.BatchAckRequest
	gerr := decodeAcks(httptest.NewRequest("POST", "/", strings.NewReader(string(body))), &got)
	werr := decodeBody(httptest.NewRequest("POST", "/", strings.NewReader(string(body))), &want)
	if fmt.Sprint(gerr) != fmt.Sprint(werr) || !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: decodeAcks %#v, %v; decodeBody %#v, %v", body, got, gerr, want, werr)
	}
	var te, we interface{ Error() string }
	if errors.As(gerr, &te) != errors.As(werr, &we) || reflect.TypeOf(gerr) != reflect.TypeOf(werr) {
		t.Fatalf("%q: error types %T and %T", body, gerr, werr)
	}
	if acks, ok := scanAcks(body); ok {
		var d errandapi.BatchAckRequest
		if err := jsonstrict.Decode(body, &d, ""); err != nil || !reflect.DeepEqual(acks, d.Acks) {
			t.Fatalf("%q: scanned %#v; Decode %#v, %v", body, acks, d.Acks, err)
		}
	}
}

// BenchmarkDecodeAcks: a batch of 500 acks as the Go SDK sends it, read by
// scanAcks and by jsonstrict.Decode (decodeBody's); ns/ack.
func BenchmarkDecodeAcks(b *testing.B) {
	var req errandapi.BatchAckRequest
	for i := range 500 {
		id := fmt.Sprintf("01k95ibsog%011d", i)
		req.Acks = append(req.Acks, errandapi.BatchAck{ID: id, LeaseID: "n01k95ibsog." + id})
	}
	raw, _ := json.Marshal(req)
	for _, v := range []struct {
		name string
		fn   func([]byte, *errandapi.BatchAckRequest) error
	}{
		{"scan", func(r []byte, out *errandapi.BatchAckRequest) error {
			var ok bool
			if out.Acks, ok = scanAcks(r); !ok {
				return errors.New("not scanned")
			}
			return nil
		}},
		{"jsonstrict", func(r []byte, out *errandapi.BatchAckRequest) error { return jsonstrict.Decode(r, out, "") }},
	} {
		b.Run(v.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var out errandapi.BatchAckRequest
				if err := v.fn(raw, &out); err != nil || len(out.Acks) != 500 {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*500), "ns/ack")
		})
	}
}
