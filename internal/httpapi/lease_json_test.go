package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/errandhq/errand/errandapi"
)

// FuzzLeaseAnswer: a lease's answer appended by hand is byte for byte what
// writeJSON's Encoder makes of it, for any strings, numbers and raw JSON
// (payloads kept with their white space, params null or not).
func FuzzLeaseAnswer(f *testing.F) {
	f.Add("01k95ibsogforgbrotojv", "emails", "receipt-1", " {\"to\": \"a@example.com\", \"n\": [1, 2]} ", 1, int64(1796557167984), "api", 2, true, "tok")
	f.Add("t\"1\\", "q<&>", "\x00\u2028\xff", `"<&>"`, -3, int64(-1), "deadletter", 9, false, "")
	f.Fuzz(func(t *testing.T, id, queue, name, payload string, attempts int, at int64, source string, n int, set bool, token string) {
		p := json.RawMessage(payload)
		if !json.Valid(p) {
			p, _ = json.Marshal(payload)
		}
		task := errandapi.LeasedTask{ID: id, Queue: queue, Payload: p, Params: json.RawMessage("null"), Attempts: attempts,
			LeaseID: id + queue, LeaseExpiresAt: at, RunAt: at / 3, CreatedAt: -at, Source: source, Depth: n, Priority: n % 10,
			DeliveryToken: token}
		if set {
			task.Name, task.DeadLetterOf, task.Params = &name, &source, p
		}
		for _, out := range []errandapi.LeaseResponse{{Tasks: []errandapi.LeasedTask{task, task}}, {Tasks: []errandapi.LeasedTask{}}, {}} {
			got, ok := appendLeased(nil, out)
			want := httptest.NewRecorder()
			writeJSON(want, 200, out)
			if !ok || !bytes.Equal(got, want.Body.Bytes()) {
				t.Fatalf("ok %v, got\n%s\nwriteJSON\n%s", ok, got, want.Body.Bytes())
			}
			rec := httptest.NewRecorder()
			writeLeased(rec, out)
			if !bytes.Equal(rec.Body.Bytes(), want.Body.Bytes()) || rec.Code != 200 ||
				rec.Header().Get("Content-Type") != "application/json" || rec.Header().Get("X-Content-Type-Options") != "nosniff" {
				t.Fatalf("writeLeased answered %d %v %s", rec.Code, rec.Header(), rec.Body.Bytes())
			}
		}
	})
}

// TestLeaseAnswerFallsBack: a raw value appendLeased cannot append (an
// empty payload) is left to encoding/json, which fails it as before.
func TestLeaseAnswerFallsBack(t *testing.T) {
	out := errandapi.LeaseResponse{Tasks: []errandapi.LeasedTask{{ID: "a", Payload: json.RawMessage{}}}}
	if _, ok := appendLeased(nil, out); ok {
		t.Fatal("appended an empty payload")
	}
	rec, want := httptest.NewRecorder(), httptest.NewRecorder()
	writeLeased(rec, out)
	writeJSON(want, 200, out)
	if !bytes.Equal(rec.Body.Bytes(), want.Body.Bytes()) {
		t.Fatalf("got %q, writeJSON %q", rec.Body.Bytes(), want.Body.Bytes())
	}
}

// BenchmarkLeaseAnswer appends a lease's answer of 500 tasks, by hand and
// with writeJSON's Encoder.
//
//	go test -run '^$' -bench LeaseAnswer ./internal/httpapi/
func BenchmarkLeaseAnswer(b *testing.B) {
	name := "nightly"
	out := errandapi.LeaseResponse{Tasks: make([]errandapi.LeasedTask, 500)}
	for i := range out.Tasks {
		out.Tasks[i] = errandapi.LeasedTask{ID: "01k95ibsogforgbrotojv", Queue: "emails", Name: &name,
			Payload: json.RawMessage(`{"to":"a@example.com","lines":[{"sku":"A-1","qty":2}]}`), Params: json.RawMessage("null"),
			Attempts: 1, LeaseID: "8b10d43bb384010c2dcd38fde7d03c2e", LeaseExpiresAt: 1796557167984, RunAt: 1796557107984,
			CreatedAt: 1796557107984, Source: "api"}
	}
	for _, v := range []struct {
		name  string
		write func(*httptest.ResponseRecorder)
	}{
		{"writeLeased", func(w *httptest.ResponseRecorder) { writeLeased(w, out) }},
		{"writeJSON", func(w *httptest.ResponseRecorder) { writeJSON(w, 200, out) }},
	} {
		b.Run(v.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				v.write(httptest.NewRecorder())
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/500, "ns/task")
		})
	}
}
