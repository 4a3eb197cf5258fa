package errandapi

import (
	"encoding/json"
	"strings"
	"testing"
)

// leasedAnswer is a lease's answer of n tasks as the server writes it.
func leasedAnswer(t testing.TB, n int) []byte {
	t.Helper()
	name, dlq := "nightly-report", "01k95ibno2egjvml7pfdr"
	out := LeaseResponse{Tasks: make([]LeasedTask, n)}
	for i := range out.Tasks {
		out.Tasks[i] = LeasedTask{ID: "01k95ibsogforgbrotojv", Queue: "emails",
			Payload: json.RawMessage(`{"to":"a@example.com","lines":[{"sku":"A-1","qty":2}],"n":1.5e3}`),
			Params:  json.RawMessage("null"), Attempts: 1, LeaseID: "8b10d43bb384010c2dcd38fde7d03c2e",
			LeaseExpiresAt: 1796557167984, RunAt: 1796557107984, CreatedAt: 1796557107984, Source: "api",
			Depth: 0, Priority: 3}
		if i%2 == 1 {
			out.Tasks[i].Name, out.Tasks[i].DeadLetterOf, out.Tasks[i].DeliveryToken = &name, &dlq, "tok.en"
		}
	}
	b, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sameAsUnmarshal checks that UnmarshalJSON gives what json.Unmarshal gives
// for raw, and reports whether its own scan took it.
func sameAsUnmarshal(t *testing.T, raw []byte) (fast bool) {
	t.Helper()
	var want, got LeaseResponse
	werr := json.Unmarshal(raw, (*leaseResponse)(&want))
	gerr := got.UnmarshalJSON(raw)
	sameDecoding(t, raw, got, want, gerr, werr)
	_, fast = scanLeased(raw)
	return fast
}

func TestDecodeLeasedAsUnmarshal(t *testing.T) {
	task := `{"id":"a","queue":"q","name":null,"payload":{"x":[1,true,null,"s\u00e9"]},"params":null,"attempts":2,` +
		`"leaseId":"l","leaseExpiresAt":-5,"runAt":0,"createdAt":7,"source":"api","depth":1,"priority":9,"deadLetterOf":"d"}`
	cases := []struct {
		raw  string
		fast bool // UnmarshalJSON's own scan takes it
	}{
		{`{"tasks":[]}`, true},
		{`{"tasks":null}`, true},
		{`{}`, true},
		{` { "tasks" : [ ` + task + ` , ` + task + ` ] } `, true},
		{`{"tasks":[` + task + `],"more":{"a":[1.5e-3,-0,"\\"]}}`, true},
		{`{"tasks":[{"id":"a","extra":[{}],"id":"b"}]}`, true}, // the later value, as encoding/json
		{`{"tasks":[{"name":"n","name":null,"payload":1,"payload":"p"}]}`, true},
		{`{"tasks":[{"id":"a\"b"}]}`, false},       // an escape
		{`{"tasks":[{"id":"\u00e9"}]}`, false},     // an escape
		{`{"tasks":[{"id":"é"}]}`, true},           // UTF-8 as is
		{"{\"tasks\":[{\"id\":\"\xff\"}]}", false}, // invalid UTF-8: encoding/json mends it
		{`{"tasks":[{"ID":"a"}]}`, false},          // another case: encoding/json matches it
		{`{"Tasks":[]}`, false},
		{`{"tasks":[],"tasks":[{"id":"a"}]}`, false}, // a second list
		{`{"tasks":[{"attempts":1.0}]}`, false},      // encoding/json refuses it
		{`{"tasks":[{"attempts":1e2}]}`, false},
		{`{"tasks":[{"attempts":99999999999999999999}]}`, false},
		{`{"tasks":[{"attempts":01}]}`, false},
		{`{"tasks":[{"attempts":null}]}`, false}, // null leaves an int as it is
		{`{"tasks":[{"id":null}]}`, false},
		{`{"tasks":[{"attempts":"1"}]}`, false},
		{`{"tasks":[{"payload":{"a":}}]}`, false}, // malformed
		{`{"tasks":[{"payload":[1,]}]}`, false},
		{`{"tasks":[{"payload":"\x"}]}`, false},
		{`{"tasks":[{"payload":-}]}`, false},
		{`{"tasks":[{"payload":1.}]}`, false},
		{`{"tasks":[]} x`, false},
		{`{"tasks":[]`, false},
		{`null`, false},
		{`[]`, false},
		{``, false},
		{`{"tasks":[` + strings.Repeat(`[`, 2000) + strings.Repeat(`]`, 2000) + `]}`, false}, // deeper than maxDepth
	}
	for _, c := range cases {
		if fast := sameAsUnmarshal(t, []byte(c.raw)); fast != c.fast {
			t.Errorf("%q: taken by the scan %v, want %v", c.raw, fast, c.fast)
		}
	}
	if !sameAsUnmarshal(t, leasedAnswer(t, 50)) {
		t.Error("the server's own answer was left to json.Unmarshal")
	}
}

func FuzzDecodeLeased(f *testing.F) {
	f.Add(leasedAnswer(f, 2))
	f.Add([]byte(`{"tasks":[{"id":"a","payload":{"x":[1,true,null,"s\u00e9"]},"attempts":2}]}`))
	f.Add([]byte(`{"tasks":null,"x":-0.5e+7}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		sameAsUnmarshal(t, raw)
	})
}

// BenchmarkDecodeLeased decodes a lease's answer of 500 tasks, with
// UnmarshalJSON and with json.Unmarshal.
//
//	go test -run '^$' -bench DecodeLeased ./errandapi/
func BenchmarkDecodeLeased(b *testing.B) {
	raw := leasedAnswer(b, 500)
	for _, v := range []struct {
		name   string
		decode func([]byte, *LeaseResponse) error
	}{{"UnmarshalJSON", func(raw []byte, out *LeaseResponse) error { return out.UnmarshalJSON(raw) }}, {"json.Unmarshal", func(raw []byte, out *LeaseResponse) error {
		return json.Unmarshal(raw, (*leaseResponse)(out))
	}}} {
		b.Run(v.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var out LeaseResponse
				if err := v.decode(raw, &out); err != nil || len(out.Tasks) != 500 {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/500, "ns/task")
		})
	}
}

// leaseResponse is LeaseResponse without its UnmarshalJSON (the name UnmarshalJSON
// decodes into when it leaves an answer to encoding/json): encoding/json's
// own decoding, which UnmarshalJSON must match.
type leaseResponse LeaseResponse
