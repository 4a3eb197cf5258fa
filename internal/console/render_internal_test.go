package console

import (
	"encoding/json"
	"testing"
)

// TestPrettyJSON: JSON is indented, the encoder's \u003c \u003e \u0026
// become the characters again (the page escapes them), every other
// escape stays, and null or nothing is "".
func TestPrettyJSON(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"a":"\u003cb\u003e \u0026"}`, "{\n  \"a\": \"<b> &\"\n}"},
		{`"\\u003c"`, `"\\u003c"`},
		{`"\\\u003c"`, `"\\<"`},
		{`"\u00e9\n\""`, `"\u00e9\n\""`},
		{`null`, ``},
		{``, ``},
		{`not json`, `not json`},
	} {
		if got := prettyJSON(json.RawMessage(c.in)); got != c.want {
			t.Errorf("prettyJSON(%s) = %q, want %q", c.in, got, c.want)
		}
	}
}
