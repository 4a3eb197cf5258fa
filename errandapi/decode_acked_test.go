package errandapi

import (
	"encoding/json"
	"fmt"
	"testing"
)

// ackedAnswer is a batch ack's answer of n results as the server writes
// it, every third refused.
func ackedAnswer(t testing.TB, n int) []byte {
	t.Helper()
	out := BatchAckResponse{Results: make([]BatchAckResult, n)}
	for i := range out.Results {
		out.Results[i] = BatchAckResult{OK: i%3 != 2, ID: fmt.Sprintf("01k95ibsog%011d", i)}
		if i%3 == 2 {
			out.Results[i].Code, out.Results[i].Message = CodeLeaseLost, "the lease expired or was replaced"
		}
	}
	b, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// ackedAsUnmarshal checks that UnmarshalJSON gives what json.Unmarshal
// gives for raw, and reports whether its own scan took it.
func ackedAsUnmarshal(t *testing.T, raw []byte) (fast bool) {
	t.Helper()
	var want, got BatchAckResponse
	werr := json.Unmarshal(raw, (*batchAckResponse)(&want))
	gerr := got.UnmarshalJSON(raw)
	sameDecoding(t, raw, got, want, gerr, werr)
	_, fast = scanAcked(raw)
	return fast
}

func TestDecodeAckedAsUnmarshal(t *testing.T) {
	cases := []struct {
		raw  string
		fast bool // UnmarshalJSON's own scan takes it
	}{
		{string(ackedAnswer(t, 3)), true},
		{`{"results":[]}`, true},
		{`{"results":null}`, true},
		{`{}`, true},
		{` { "results" : [ { "ok" : true , "id" : "a" } , { "ok" : false , "id" : "b" , "code" : "NOT_FOUND" , "message" : "é" } ] } `, true},
		{`{"results":[{"ok":true,"extra":[{"a":1.5e-3}],"ok":false}]}`, true}, // the later value, as encoding/json
		{`{"results":[],"more":{"a":[-0,"\\"]}}`, true},
		{`{"error":{"code":"LEASE_LOST","message":"m"},"results":[{"ok":false,"id":"a"}]}`, false},
		{`{"Error":null,"results":[]}`, false},
		{`{"results":[{"id":"a\"b"}]}`, false},       // an escape
		{"{\"results\":[{\"id\":\"\xff\"}]}", false}, // invalid UTF-8: encoding/json mends it
		{`{"results":[{"OK":true}]}`, false},         // another case: encoding/json matches it
		{`{"Results":[]}`, false},
		{`{"results":[],"results":[{"ok":true}]}`, false}, // a second list
		{`{"results":[{"ok":null}]}`, false},              // null leaves a bool as it is
		{`{"results":[{"ok":1}]}`, false},
		{`{"results":[{"ok":tru}]}`, false},
		{`{"results":[{"code":7}]}`, false},
		{`{"results":[null]}`, false},
		{`{"results":{}}`, false},
		{`{"results":[{"ok":true}]`, false},
		{`{"results":[{"ok":true}]} x`, false},
		{`{"results":[{"ok":true},]}`, false},
		{`[]`, false},
		{``, false},
	}
	for _, c := range cases {
		if fast := ackedAsUnmarshal(t, []byte(c.raw)); fast != c.fast {
			t.Errorf("%q: scanned %v, want %v", c.raw, fast, c.fast)
		}
	}
}

// FuzzDecodeAcked: for any answer, UnmarshalJSON gives what json.Unmarshal
// gives, errors included.
func FuzzDecodeAcked(f *testing.F) {
	f.Add(ackedAnswer(f, 3))
	f.Add([]byte(`{"results":[{"ok":false,"id":"a","code":"LEASE_LOST","message":"m"}],"x":-0.5e+7}`))
	f.Add([]byte(`{"error":{"code":"LEASE_LOST"},"results":null}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		ackedAsUnmarshal(t, raw)
	})
}

// BenchmarkDecodeAcked decodes a batch ack's answer of 500 results, with
// UnmarshalJSON and with json.Unmarshal.
//
//	go test -run '^$' -bench DecodeAcked ./errandapi/
func BenchmarkDecodeAcked(b *testing.B) {
	raw := ackedAnswer(b, 500)
	for _, v := range []struct {
		name   string
		decode func([]byte, *BatchAckResponse) error
	}{{"UnmarshalJSON", func(raw []byte, out *BatchAckResponse) error { return out.UnmarshalJSON(raw) }}, {"json.Unmarshal", func(raw []byte, out *BatchAckResponse) error {
		return json.Unmarshal(raw, (*batchAckResponse)(out))
	}}} {
		b.Run(v.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var out BatchAckResponse
				if err := v.decode(raw, &out); err != nil || len(out.Results) != 500 {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/500, "ns/ack")
		})
	}
}

// batchAckResponse is BatchAckResponse without its UnmarshalJSON (the name UnmarshalJSON
// decodes into when it leaves an answer to encoding/json): encoding/json's
// own decoding, which UnmarshalJSON must match.
type batchAckResponse BatchAckResponse
