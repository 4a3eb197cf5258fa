package errandapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
)

// TestEveryCodeHasAStatusAndASentinel: the table and the sentinels cover
// every code, and errors.Is matches by code only.
func TestEveryCodeHasAStatusAndASentinel(t *testing.T) {
	seen := map[Code]bool{}
	for _, c := range Codes() {
		if seen[c] {
			t.Errorf("%s listed twice", c)
		}
		seen[c] = true
		if _, ok := statusOf[c]; !ok {
			t.Errorf("%s has no status", c)
		}
		s := Sentinel(c)
		if s == nil || s.Code != c || s.Status != StatusOf(c) {
			t.Fatalf("%s: sentinel %+v", c, s)
		}
		err := fmt.Errorf("wrapped: %w", &Error{Code: c, Message: "x", ID: "id1"})
		for _, o := range Codes() {
			if got := errors.Is(err, Sentinel(o)); got != (o == c) {
				t.Errorf("errors.Is(%s, Err%s) = %v", c, o, got)
			}
		}
	}
	if len(statusOf) != len(seen) {
		t.Errorf("the status table has %d codes, Codes() %d", len(statusOf), len(seen))
	}
	if Sentinel("NO_SUCH") != nil || StatusOf("NO_SUCH") != 500 {
		t.Error("an unknown code has a sentinel or a status")
	}
}

// TestNullable: absent is omitted, null and a value are written, and both
// read back with Set and Null as sent.
func TestNullable(t *testing.T) {
	b, err := json.Marshal(SettingsRequest{})
	if err != nil || string(b) != `{}` {
		t.Fatalf("absent: %s %v", b, err)
	}
	b, _ = json.Marshal(SettingsRequest{RateLimit: Null[float64]()})
	if string(b) != `{"rateLimit":null}` {
		t.Fatalf("null: %s", b)
	}
	b, _ = json.Marshal(QueueRequest{Target: Value(Target{Webhook: "https://x"})})
	if string(b) != `{"target":{"webhook":"https://x"}}` {
		t.Fatalf("value: %s", b)
	}
	var q QueueRequest
	if err := json.Unmarshal([]byte(`{"target":null,"ratePerSecond":2}`), &q); err != nil {
		t.Fatal(err)
	}
	if !q.Target.Set || !q.Target.Null || *q.Target.Ptr() != nil || **q.RatePerSecond.Ptr() != 2 || q.MaxAgeSeconds.Ptr() != nil {
		t.Fatalf("read back %+v", q)
	}
}
