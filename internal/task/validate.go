package task

import (
	"bytes"
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/errandhq/errand/errandapi"
)

// URLRules say which webhook URLs are acceptable where they are saved.
type URLRules struct {
	// AllowHTTP accepts http:// as well as https:// (dev mode).
	AllowHTTP bool
	// Check, if set, vets the parsed URL further (serve mode's address guard:
	// private, loopback and metadata ranges). It must not be nil-dereferenced
	// by callers; nil means no further check.
	Check func(u *url.URL) error
}

// ValidateName checks a task name: 1–500 characters of letters, digits,
// '-', '_' and '.'.
func ValidateName(name, field string) error {
	if name == "" || len(name) > MaxNameLen {
		return FieldErrorf(CodeInvalidArgument, field, "must be 1–%d characters", MaxNameLen)
	}
	for i := 0; i < len(name); i++ {
		if !nameByte(name[i]) {
			return FieldErrorf(CodeInvalidArgument, field, "may hold only letters, digits, '-', '_' and '.'")
		}
	}
	return nil
}

// ValidateQueueName checks a queue or instance name: 1–100 characters of
// letters, digits, '-' and '_', starting with a letter or digit.
func ValidateQueueName(name, field string) error {
	if name == "" || len(name) > 100 {
		return FieldErrorf(CodeInvalidArgument, field, "must be 1–100 characters")
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c == '.' || !nameByte(c) || (i == 0 && (c == '-' || c == '_')) {
			return FieldErrorf(CodeInvalidArgument, field, "may hold only letters, digits, '-' and '_', and must start with a letter or digit")
		}
	}
	return nil
}

// MaxIDLen bounds a task id as a caller may send it back: errand's ids are
// 21 characters; anything longer or outside the name alphabet cannot exist.
const MaxIDLen = 64

// ValidID reports whether s can be a task id or lease id errand made, or
// a rule's id: 1–64 letters, digits, '-', '_' or '.', but not "." or ".."
// (a path segment that names no resource: a rule with such an id could be
// neither read nor deleted). Callers answer NOT_FOUND (in a path) or
// INVALID_ARGUMENT (in a body) for anything else, before a store sees it.
func ValidID(s string) bool {
	if s == "" || len(s) > MaxIDLen || s == "." || s == ".." {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !nameByte(s[i]) {
			return false
		}
	}
	return true
}

// IDError is the refusal of an id ValidID refuses, naming field.
func IDError(field string) *Error {
	return FieldErrorf(CodeInvalidArgument, field, "must be 1–%d letters, digits, '-', '_' or '.', and not \".\" or \"..\"", MaxIDLen)
}

// Quote quotes a caller's value for a refusal: errandapi.Quote, the one
// rule every surface (the API, MCP) quotes by.
func Quote(s string) string { return errandapi.Quote(s) }

// CutUTF8 is errandapi.CutUTF8: the longest prefix of s of at most n
// bytes that does not end inside a character.
func CutUTF8(s string, n int) string { return errandapi.CutUTF8(s, n) }

// SanitizeText makes free text (an attempt's error) safe for every store:
// invalid UTF-8 and NUL bytes become U+FFFD.
func SanitizeText(s string) string {
	if utf8.ValidString(s) && strings.IndexByte(s, 0) < 0 {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

func nameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.'
}

// ValidateJSONBytes checks raw bytes before anything decodes them: at most
// 64 KiB (PAYLOAD_TOO_LARGE naming field) and valid JSON (INVALID_ARGUMENT).
// The bytes are stored as they came.
func ValidateJSONBytes(raw []byte, field string) error {
	if len(raw) > MaxPayloadBytes {
		return FieldErrorf(CodePayloadTooLarge, field, "is %d bytes; the cap is %d (64 KiB)", len(raw), MaxPayloadBytes)
	}
	if !json.Valid(raw) {
		return FieldErrorf(CodeInvalidArgument, field, "is not valid JSON")
	}
	if !utf8.Valid(raw) {
		return FieldErrorf(CodeInvalidArgument, field, "is not valid UTF-8")
	}
	return nil
}

// IsJSONNull reports whether raw is absent or the JSON literal null.
func IsJSONNull(raw []byte) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || string(raw) == "null"
}

// ValidateTarget checks that exactly one kind is set and that it is well
// formed, and puts a webhook's header names in canonical form. A header
// value sent as errandapi.HiddenHeaderValue keeps the value cur, the
// target t replaces (nil for none), sends for that header, when cur sends
// it to the same origin (validateTargetHeaders).
func ValidateTarget(t, cur *Target, field string, rules URLRules) error {
	n := 0
	for _, s := range []string{t.Webhook, t.Function, t.Channel} {
		if s != "" {
			n++
		}
	}
	if n != 1 {
		return FieldErrorf(CodeInvalidArgument, field, "must name exactly one of webhook, function or channel")
	}
	if t.Headers != nil && t.Webhook == "" {
		return FieldErrorf(CodeInvalidArgument, field+".headers", "only a webhook target sends headers")
	}
	switch {
	case t.Webhook != "":
		if err := ValidateWebhookURL(t.Webhook, field+".webhook", rules); err != nil {
			return err
		}
		return validateTargetHeaders(t, cur, field+".headers")
	case t.Function != "":
		return ValidateFunctionName(t.Function, field+".function")
	case t.Channel != "":
		if err := ValidateQueueName(t.Channel, field+".channel"); err != nil {
			return err
		}
	}
	return nil
}

// ValidateFunctionName checks a function target's name, "GROUP/FUNCTION":
// each part a name as a queue's is (1–100 letters, digits, '-' and '_',
// starting with a letter or digit). field names it in the refusal.
func ValidateFunctionName(name, field string) error {
	group, fn, ok := strings.Cut(name, "/")
	if !ok || ValidateQueueName(group, field) != nil || ValidateQueueName(fn, field) != nil {
		return FieldErrorf(CodeInvalidArgument, field, "must be GROUP/FUNCTION, e.g. app/send-receipt")
	}
	return nil
}

// ValidateWebhookURL applies the webhook URL rules: https (http too under
// rules.AllowHTTP), a host, no userinfo, no fragment, at most 2,048
// characters, then rules.Check.
func ValidateWebhookURL(raw, field string, rules URLRules) error {
	if len(raw) > MaxWebhookLen {
		return FieldErrorf(CodeInvalidArgument, field, "is longer than %d characters", MaxWebhookLen)
	}
	if !utf8.ValidString(raw) || strings.IndexByte(raw, 0) >= 0 {
		return FieldErrorf(CodeInvalidArgument, field, "is not an absolute URL")
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" || u.Opaque != "" {
		return FieldErrorf(CodeInvalidArgument, field, "is not an absolute URL")
	}
	switch u.Scheme {
	case "https":
	case "http":
		if !rules.AllowHTTP {
			return FieldErrorf(CodeInvalidArgument, field, "must use https")
		}
	default:
		return FieldErrorf(CodeInvalidArgument, field, "must use https")
	}
	if u.User != nil {
		return FieldErrorf(CodeInvalidArgument, field, "may not carry a username or password")
	}
	if u.Fragment != "" {
		return FieldErrorf(CodeInvalidArgument, field, "may not carry a fragment")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return FieldErrorf(CodeInvalidArgument, field, "has port %s; a port is 1–65535", p)
		}
	}
	if rules.Check != nil {
		if err := rules.Check(u); err != nil {
			return FieldErrorf(CodeInvalidArgument, field, "%v", err)
		}
	}
	return nil
}
