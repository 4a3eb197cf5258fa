package jsonout

import (
	"bytes"
	"encoding/json"
	"testing"
)

// encodingJSON is what an Encoder makes of v, HTML escaping as html, without
// its newline.
func encodingJSON(t *testing.T, v any, html bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(html)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// FuzzAppendString: AppendString is byte for byte encoding/json's encoding
// of any string, with HTML escaping on and off.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", "t\"1\\", "q<&>", "\x00\x01\b\f\n\r\t\x1f\x7f", "\u2028\u2029é€😀",
		"\xff\xfe", "a\xc3", "\xe2\x80", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xc0\xaf"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, html := range []bool{true, false} {
			if got, want := AppendString([]byte("x"), s, html), append([]byte("x"), encodingJSON(t, s, html)...); !bytes.Equal(got, want) {
				t.Fatalf("html %v: got %q, encoding/json %q", html, got, want)
			}
		}
	})
}

// FuzzAppendRaw: AppendRaw is encoding/json's encoding of a RawMessage with
// HTML escaping off, for any valid JSON; of what is not, it refuses, leaving
// b as it was, the two its comment names (an empty value, and one with white
// space, which it compacts); the rest is outside its precondition.
func FuzzAppendRaw(f *testing.F) {
	for _, s := range []string{`{"a":1}`, ` { "a" : [ 1 , "x y" , null ] } `, `"<&>\u2028"`, "\t-0.5e+3\n", `[]`, `{"a":}`, `"\n`, ``, `{"a": }`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, ok := AppendRaw([]byte("x"), raw)
		if !json.Valid(raw) {
			// (nil is null: TestAppendRawNil)
			if raw != nil && (len(raw) == 0 || bytes.ContainsAny(raw, " \t\n\r")) && (ok || !bytes.Equal(got, []byte("x"))) {
				t.Fatalf("%q: not JSON, yet AppendRaw gave %q, %v", raw, got, ok)
			}
			return
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(json.RawMessage(raw)); err != nil {
			t.Fatalf("%q: encoding/json fails a valid value: %v", raw, err)
		}
		if want := append([]byte("x"), bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...); !ok || !bytes.Equal(got, want) {
			t.Fatalf("%q: got %q, %v; encoding/json %q", raw, got, ok, want)
		}
	})
}

func TestAppendRawNil(t *testing.T) {
	if got, ok := AppendRaw(nil, nil); !ok || string(got) != "null" {
		t.Fatalf("nil: %q %v", got, ok)
	}
	if got, ok := AppendRaw([]byte("x"), json.RawMessage{}); ok || string(got) != "x" {
		t.Fatalf("empty: %q %v", got, ok)
	}
}
