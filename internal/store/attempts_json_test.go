package store

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/errandhq/errand/internal/task"
)

// TestAttemptFieldsKnown: AppendAttempt writes task.Attempt's fields as
// they are today; a field added to it must be added there too.
func TestAttemptFieldsKnown(t *testing.T) {
	var got []string
	at := reflect.TypeFor[task.Attempt]()
	for i := range at.NumField() {
		got = append(got, at.Field(i).Name+" "+at.Field(i).Tag.Get("json"))
	}
	want := []string{"Attempt attempt", "Status status", "StartedAt startedAt", "EndedAt endedAt,omitempty",
		"HTTPStatus httpStatus,omitempty", "Error error,omitempty", "Lease lease,omitempty"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("task.Attempt's fields are now %q: AppendAttempt writes %q", got, want)
	}
	if _, ok := any(task.Attempt{}).(json.Marshaler); ok {
		t.Fatal("task.Attempt encodes itself: AppendAttempt must do as it does")
	}
}

// FuzzAppendAttempts: AppendAttempts is byte for byte json.Marshal of any
// history of up to two attempts.
func FuzzAppendAttempts(f *testing.F) {
	f.Add(1, "succeeded", int64(1796557107984), int64(1796557107990), 200, "", "", 2)
	f.Add(-3, "fai<led>&", int64(0), int64(-1), 0, "timed out: \"x\"\n\x00\u2028\xff", "node-1.abc", 1)
	f.Add(0, "", int64(9e18), int64(0), 503, "é€😀", "", 0)
	f.Add(7, "x", int64(-9e18), int64(1), -1, "", "", 3) // omitempty omits only zeros
	f.Fuzz(func(t *testing.T, n int, status string, started, ended int64, http int, errText, lease string, count int) {
		a := task.Attempt{Attempt: n, Status: status, StartedAt: started, EndedAt: ended, HTTPStatus: http,
			Error: errText, Lease: lease}
		histories := [][]task.Attempt{nil, {}, {a}, {a, {Attempt: n + 1, Status: lease, StartedAt: ended}}}
		for _, h := range histories[:min(max(count, 0), 3)+1] {
			want, err := json.Marshal(h)
			if err != nil {
				t.Fatal(err)
			}
			if got := AppendAttempts(nil, h); string(got) != string(want) {
				t.Fatalf("got\n%s\njson.Marshal\n%s", got, want)
			}
			if got := AttemptsJSON(h); got != string(want) {
				t.Fatalf("AttemptsJSON\n%s\njson.Marshal\n%s", got, want)
			}
		}
		want, _ := json.Marshal(a)
		if got := AppendAttempt([]byte("x"), &a); string(got) != "x"+string(want) {
			t.Fatalf("got %s, json.Marshal %s", got, want)
		}
		if got := AttemptJSON(&a); got != string(want) {
			t.Fatalf("AttemptJSON %s, json.Marshal %s", got, want)
		}
	})
}

// BenchmarkAppendAttempts encodes a finished attempt, by hand and with
// json.Marshal.
//
//	go test -run '^$' -bench AppendAttempts ./internal/store/
func BenchmarkAppendAttempts(b *testing.B) {
	h := []task.Attempt{{Attempt: 1, Status: "succeeded", StartedAt: 1796557107984, EndedAt: 1796557107990, HTTPStatus: 200,
		Lease: "node1.8b10d43bb384010c2dcd38fde7d03c2e"}}
	b.Run("AttemptsJSON", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = AttemptsJSON(h)
		}
	})
	b.Run("json.Marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			out, _ := json.Marshal(h)
			_ = string(out)
		}
	})
}
