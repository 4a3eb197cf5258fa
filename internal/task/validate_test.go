package task

import (
	"strings"
	"testing"
)

// TestQuote: a caller's value is quoted whole up to 64 bytes; past them,
// its first 64 bytes (cut before a character that would not fit) and its
// length.
func TestQuote(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", `""`},
		{"done", `"done"`},
		{strings.Repeat("a", 64), `"` + strings.Repeat("a", 64) + `"`},
		{strings.Repeat("a", 65), `"` + strings.Repeat("a", 64) + `"… (65 bytes)`},
		{"a" + strings.Repeat("é", 40), `"a` + strings.Repeat("é", 31) + `"… (81 bytes)`},
		{"\x00\n", `"\x00\n"`},
	} {
		if got := Quote(c.in); got != c.want {
			t.Errorf("Quote(%.80q) = %q, want %q", c.in, got, c.want)
		}
	}
}
