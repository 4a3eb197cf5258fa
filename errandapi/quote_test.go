package errandapi

import (
	"strings"
	"testing"
)

// TestQuote: a caller's value is quoted whole up to 128 bytes; past them,
// its first 128 bytes (cut before a character that would not fit) and its
// length.
func TestQuote(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", `""`},
		{"done", `"done"`},
		{strings.Repeat("a", 128), `"` + strings.Repeat("a", 128) + `"`},
		{strings.Repeat("a", 129), `"` + strings.Repeat("a", 128) + `"… (129 bytes)`},
		{"a" + strings.Repeat("é", 80), `"a` + strings.Repeat("é", 63) + `"… (161 bytes)`},
		{"\x00\n", `"\x00\n"`},
	} {
		if got := Quote(c.in); got != c.want {
			t.Errorf("Quote(%.80q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestCutUTF8: a cut never ends inside a character.
func TestCutUTF8(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{{"abc", 5, "abc"}, {"abc", 2, "ab"}, {"aé", 2, "a"}, {"aé", 3, "aé"}, {"é", 0, ""}} {
		if got := CutUTF8(c.in, c.n); got != c.want {
			t.Errorf("CutUTF8(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
}
