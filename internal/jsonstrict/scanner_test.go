package jsonstrict

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// FuzzScannerRaw: Raw takes a value exactly when encoding/json finds it
// valid (short of Raw's depth bound), and returns its bytes as they are.
func FuzzScannerRaw(f *testing.F) {
	for _, s := range []string{` {"a": [1, -2.5e+3, true, false, null, "\u00e9\n"]} `, `"x`, `[1,]`, `01`, `1.`, `-`, `tru`,
		`{"a" 1}`, `{1:2}`, "\"\x01\"", `"\q"`, `"\u12g4"`, `[[[]]]`, `{"a":{"b":{}}}`, ``, ` `, `nul`, `1e`, `2E-`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s := NewScanner(b)
		raw, ok := s.Raw()
		whole := ok && s.End()
		if whole != json.Valid(b) && !(json.Valid(b) && depth(b) > maxScanDepth) {
			t.Fatalf("%q: Raw took it %v, json.Valid %v", b, whole, json.Valid(b))
		}
		if whole && !bytes.Equal(raw, bytes.TrimSpace(b)) {
			t.Fatalf("%q: Raw returned %q", b, raw)
		}
	})
}

// depth is how deeply b's brackets nest, strings aside.
func depth(b []byte) int {
	d, most, in := 0, 0, false
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case in && c == '\\':
			i++
		case c == '"':
			in = !in
		case !in && (c == '{' || c == '['):
			d++
			most = max(most, d)
		case !in && (c == '}' || c == ']'):
			d--
		}
	}
	return most
}

// TestScannerDepth: Raw follows nesting to its bound and no further.
func TestScannerDepth(t *testing.T) {
	for n, want := range map[int]bool{maxScanDepth + 1: true, maxScanDepth + 2: false} {
		b := []byte(strings.Repeat("[", n) + strings.Repeat("]", n))
		if _, ok := NewScanner(b).Raw(); ok != want {
			t.Errorf("%d levels: Raw %v, want %v", n, ok, want)
		}
	}
}

// TestScannerStr: Str takes the strings json.Unmarshal keeps as they are.
func TestScannerStr(t *testing.T) {
	for in, want := range map[string]bool{`"a b"`: true, `"é"`: true, `""`: true, `"a\"b"`: false, `"\u00e9"`: false,
		"\"\xff\"": false, "\"a\tb\"": false, `"abc`: false, `abc`: false} {
		got, ok := NewScanner([]byte(in)).Str()
		if ok != want || ok && got != strings.Trim(in, `"`) {
			t.Errorf("%q: Str %q %v, want %v", in, got, ok, want)
		}
	}
}
