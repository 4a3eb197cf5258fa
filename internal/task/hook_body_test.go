package task

import (
	"strings"
	"testing"
)

// TestHookBodyForms: a hook's body is JSON whatever its Content-Type; a body
// that is not JSON and is sent as a form becomes an object of its fields'
// values; anything else is refused naming body, and says what a hook reads.
func TestHookBodyForms(t *testing.T) {
	tr := &Trigger{Kind: TriggerHook, ID: "r1"}
	withType := func(ct string) func(string) string {
		return func(k string) string {
			if k == "Content-Type" {
				return ct
			}
			return ""
		}
	}
	const form = "application/x-www-form-urlencoded"
	for _, c := range []struct {
		body, contentType, payload string
	}{
		// JSON stays JSON, as curl -d sends it (labelled a form).
		{`{"a":1}`, form, `{"a":1}`},
		{`123`, form + "; charset=utf-8", `123`},
		{`{"a":1}`, "application/json", `{"a":1}`},
		// A form: each field's values, in the order sent; + is a space.
		{"text=hello+world&user_id=U1&tag=a&tag=b", form, `{"tag":["a","b"],"text":["hello world"],"user_id":["U1"]}`},
		{"token=x%26y&empty=", "Application/X-WWW-Form-Urlencoded; charset=UTF-8", `{"empty":[""],"token":["x&y"]}`},
		{"caf%C3%A9=%E2%9C%93", form, `{"café":["✓"]}`},
		{"&", form, `{}`},
	} {
		in, err := tr.HookInput([]byte(c.body), withType(c.contentType), "", "")
		if err != nil || string(in.Payload) != c.payload {
			t.Errorf("body %q as %q: payload %s, %v; want %s", c.body, c.contentType, in.Payload, err, c.payload)
		}
	}
	for _, c := range []struct {
		body, contentType string
		code              Code
		msg               string
	}{
		{"a=1", "", CodeInvalidArgument, "body: is not valid JSON (a hook reads a JSON body, or a form sent with Content-Type application/x-www-form-urlencoded)"},
		{"a=1", "text/plain", CodeInvalidArgument, "body: is not valid JSON (a hook reads"},
		{"a=1", "multipart/form-data; boundary=x", CodeInvalidArgument, "body: is not valid JSON (a hook reads"},
		{"a=%zz", form, CodeInvalidArgument, `body: is neither JSON nor a form (Content-Type application/x-www-form-urlencoded): invalid URL escape "%zz"`},
		{"a=1;b=2", form, CodeInvalidArgument, "body: is neither JSON nor a form"},
		{"a=%ff", form, CodeInvalidArgument, `body: form field "a" has a value that is not valid UTF-8`},
		{"%ff=1", form, CodeInvalidArgument, `body: form field name "\xff" is not valid UTF-8`},
		// A control byte is 3 bytes of form and 6 of JSON (\u0001): 60 KB
		// of them is a body a hook takes and a payload over 64 KiB.
		{"q=" + strings.Repeat("%01", 20000), form, CodePayloadTooLarge, "body: read as JSON the form is 120010 bytes"},
	} {
		_, err := tr.HookInput([]byte(c.body), withType(c.contentType), "", "")
		if !IsCode(err, c.code) || err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("body %.40q as %q: %v, want %s %q", c.body, c.contentType, err, c.code, c.msg)
		}
	}
}

// TestValidateHookSecret: a whsec_ key must decode to 24–64 bytes; any
// other secret is 16–256 printable ASCII characters without spaces.
func TestValidateHookSecret(t *testing.T) {
	for secret, ok := range map[string]bool{
		"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw": true,
		"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaS!": false, // not base64
		"whsec_c2hvcnQ=":                         false, // 5 bytes
		"8f742231b10e8888abcd99yyyzzz85a5":       true,  // Slack's signing secret: 32 hex
		"my-github-secret":                       true,  // 16 characters
		"my-github-secre":                        false,
		strings.Repeat("s", 256):                 true,
		strings.Repeat("s", 257):                 false,
		"my github secret here":                  false,
		"my-github-secrét-here":                  false,
		"my-github-secret\t":                     false,
	} {
		err := ValidateHookSecret(secret)
		if ok != (err == nil) || err != nil && !strings.HasPrefix(err.Error(), "INVALID_ARGUMENT: hook.secret: ") {
			t.Errorf("secret %.40q: %v, want ok %v", secret, err, ok)
		}
	}
}
