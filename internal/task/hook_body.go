package task

import (
	"bytes"
	"encoding/json"
	"mime"
	"net/url"
	"unicode/utf8"
)

// formMediaType is the media type of an HTML form's body, which a hook
// reads besides JSON: Slack's slash commands, Twilio and HTML forms post it.
const formMediaType = "application/x-www-form-urlencoded"

// hookPayload is the payload a hook call's body gives (the body is not
// empty). A body that is JSON is the payload whatever its Content-Type:
// curl -d labels every body a form. A body that is not JSON, sent with
// Content-Type application/x-www-form-urlencoded, is read as a form: an
// object with each field's values, always an array of strings in the
// order sent ({"tag": ["a", "b"], "text": ["hi"]}).
func hookPayload(body []byte, contentType string) (json.RawMessage, error) {
	err := ValidateJSONBytes(body, "body")
	switch {
	case err == nil:
		return body, nil // a JSON body is checked once, as before forms
	case !IsCode(err, CodeInvalidArgument) || json.Valid(body):
		return nil, err // too large, or JSON that is not UTF-8
	case !IsForm(contentType):
		return nil, FieldErrorf(CodeInvalidArgument, "body", "is not valid JSON (a hook reads a JSON body, or a form sent with Content-Type %s)", formMediaType)
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return nil, FieldErrorf(CodeInvalidArgument, "body", "is neither JSON nor a form (Content-Type %s): %v", formMediaType, err)
	}
	for k, vs := range form {
		if !utf8.ValidString(k) {
			return nil, FieldErrorf(CodeInvalidArgument, "body", "form field name %q is not valid UTF-8", k)
		}
		for _, v := range vs {
			if !utf8.ValidString(v) {
				return nil, FieldErrorf(CodeInvalidArgument, "body", "form field %q has a value that is not valid UTF-8", k)
			}
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // "a&b" stays as sent, not "a\u0026b"
	if err := enc.Encode(form); err != nil {
		return nil, Errorf(CodeInternal, "form as JSON: %v", err)
	}
	payload := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if len(payload) > MaxPayloadBytes {
		return nil, FieldErrorf(CodePayloadTooLarge, "body", "read as JSON the form is %d bytes; the cap is %d (64 KiB)", len(payload), MaxPayloadBytes)
	}
	return payload, nil
}

// IsForm reports whether a Content-Type header names a form body
// (application/x-www-form-urlencoded).
func IsForm(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == formMediaType
}
