package task

import (
	"math"
	"strings"
	"testing"
	"unicode/utf8"
)

// A maxAgeSeconds so large that ×1000 overflows must not read as "already
// past": the first failed attempt retries (defect 2).
func TestHugeMaxAgeStillRetries(t *testing.T) {
	for _, age := range []int64{1e16, math.MaxInt64 / 999, math.MaxInt64} {
		q := pushQueue()
		q.MaxAgeSeconds = age
		tk, _ := NewTask(q, AddInput{}, 1_790_000_000_000, URLRules{})
		_ = tk.Claim(q, 1_790_000_000_000, "L", 1000)
		failed, err := tk.Finish(q, 1_790_000_001_000, Outcome{Status: AttemptFailed, Error: "boom"})
		if err != nil || failed || tk.State != RetryWait {
			t.Fatalf("maxAgeSeconds %d: failed=%v %v %s", age, failed, err, tk.State)
		}
	}
	var p QueuePatch
	v := int64(MaxMaxAgeSeconds + 1)
	pv := &v
	p.MaxAgeSeconds = &pv
	if err := p.Apply(pushQueue(), false, URLRules{}); !IsCode(err, CodeInvalidArgument) || err.(*Error).Field != "maxAgeSeconds" {
		t.Fatal(err)
	}
}

func TestSaturatingAddMs(t *testing.T) {
	for _, c := range []struct{ base, n, unit, want int64 }{
		{1, 2, 1000, 2001},
		{1, math.MaxInt64, 1000, math.MaxInt64},
		{math.MaxInt64 - 5, 1, 1000, math.MaxInt64},
		{0, math.MinInt64 / 10, 1000, math.MinInt64},
		{-5, -1, 1000, -1005},
	} {
		if got := SaturatingAddMs(c.base, c.n, c.unit); got != c.want {
			t.Errorf("SaturatingAddMs(%d, %d, %d) = %d, want %d", c.base, c.n, c.unit, got, c.want)
		}
	}
}

// An attempt's error text with NUL bytes or broken UTF-8 (a worker's, or a
// receiver's answer cut at 500 bytes mid-rune) is stored as valid text.
func TestAttemptErrorIsSanitised(t *testing.T) {
	for _, msg := range []string{"bad\x00thing", "bad\xffthing", strings.Repeat("é", 300)} {
		q := pushQueue()
		tk, _ := NewTask(q, AddInput{}, 0, URLRules{})
		_ = tk.Claim(q, 0, "L", 1000)
		_, _ = tk.Finish(q, 10, Outcome{Status: AttemptFailed, Error: msg})
		if e := tk.LastError; !utf8.ValidString(e) || strings.IndexByte(e, 0) >= 0 {
			t.Fatalf("%q stored as %q", msg, e)
		}
	}
}

func TestValidID(t *testing.T) {
	for s, want := range map[string]bool{
		"01k3250r0044qvnlvji1o": true, "a-b_c.d": true, "": false, "a\x00b": false,
		"a\xffb": false, "a/b": false, strings.Repeat("a", MaxIDLen): true, strings.Repeat("a", MaxIDLen+1): false,
	} {
		if ValidID(s) != want {
			t.Errorf("ValidID(%q) = %v", s, !want)
		}
	}
}
