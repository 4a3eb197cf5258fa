package task

import (
	"maps"
	"net/textproto"
	"net/url"
	"slices"
	"strings"

	"github.com/errandhq/errand/errandapi"
)

// Limits of a webhook target's headers.
const (
	MaxTargetHeaders       = 20      // headers a target sends
	MaxTargetHeaderBytes   = 8 << 10 // their names and values together
	maxTargetHeaderNameLen = 100     // one name
)

// reservedTargetHeaders are the headers a target cannot send: errand sets
// them on every delivery, or they frame the request, whose framing errand
// owns.
var reservedTargetHeaders = []string{
	"Host", "Content-Type", "Content-Length", "Content-Encoding", "Transfer-Encoding", "Connection",
	"Keep-Alive", "Proxy-Connection", "Upgrade", "Te", "Trailer", "Expect", "User-Agent",
	"Webhook-Id", "Webhook-Timestamp", "Webhook-Signature",
}

// validateTargetHeaders checks a webhook target's headers and puts their
// names in canonical form (x-api-key: X-Api-Key): at most
// MaxTargetHeaders, each name an HTTP token named once, none errand sets
// itself (reservedTargetHeaders, X-Errand-*), each value printable ASCII
// (spaces and tabs allowed, not at either end), all together at most
// MaxTargetHeaderBytes. A value sent as errandapi.HiddenHeaderValue (the
// mask answers show) is replaced by the value cur sends for that header,
// when cur may give it (keepsHidden), else refused. field names the
// refusal, with the header's name after a dot.
func validateTargetHeaders(t, cur *Target, field string) error {
	if len(t.Headers) == 0 {
		t.Headers = nil
		return nil
	}
	if len(t.Headers) > MaxTargetHeaders {
		return FieldErrorf(CodeInvalidArgument, field, "at most %d headers", MaxTargetHeaders)
	}
	out := make(map[string]string, len(t.Headers))
	size := 0
	for _, name := range slices.Sorted(maps.Keys(t.Headers)) {
		v := t.Headers[name]
		if name == "" || len(name) > maxTargetHeaderNameLen || !headerToken(name) {
			return FieldErrorf(CodeInvalidArgument, field, "%s is not a header name", Quote(name))
		}
		c := textproto.CanonicalMIMEHeaderKey(name)
		f := field + "." + c
		switch {
		case slices.Contains(reservedTargetHeaders, c), strings.HasPrefix(c, "X-Errand-"):
			return FieldErrorf(CodeInvalidArgument, f, "errand sets %s itself; a target cannot send it", c)
		case strings.HasPrefix(c, "Proxy-"):
			return FieldErrorf(CodeInvalidArgument, f, "%s is for a proxy, which a delivery does not use", c)
		case hasKey(out, c):
			return FieldErrorf(CodeInvalidArgument, f, "is named twice (header names are not case-sensitive)")
		case v == errandapi.HiddenHeaderValue && !t.keepsHidden(cur, c):
			if cur == nil || !hasKey(cur.Headers, c) {
				return FieldErrorf(CodeInvalidArgument, f, "%s keeps the value the target had, and it had no %s header: send the value itself", Quote(v), c)
			}
			return FieldErrorf(CodeInvalidArgument, f, "%s keeps the value the target had only toward the same scheme, host and port (%s): "+
				"send the value itself", Quote(v), origin(cur.Webhook))
		case v == errandapi.HiddenHeaderValue:
			v = cur.Headers[c]
		case !headerValue(v):
			return FieldErrorf(CodeInvalidArgument, f, "must be printable ASCII (spaces and tabs inside), not empty")
		}
		out[c] = v
		size += len(c) + len(v)
	}
	if size > MaxTargetHeaderBytes {
		return FieldErrorf(CodeInvalidArgument, field, "names and values together must be at most %d bytes", MaxTargetHeaderBytes)
	}
	t.Headers = out
	return nil
}

// headerValue reports whether v is a header value a delivery can send as
// is: visible ASCII, with spaces and tabs inside but not at either end.
func headerValue(v string) bool {
	if v == "" || v[0] == ' ' || v[0] == '\t' || v[len(v)-1] == ' ' || v[len(v)-1] == '\t' {
		return false
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < ' ' && c != '\t') || c >= 0x7f {
			return false
		}
	}
	return true
}

// Masked is t as answers show it: each header's value replaced by
// errandapi.HiddenHeaderValue, as a target's headers usually carry
// credentials and every key that may read the instance reads targets. t
// itself is not changed.
func (t *Target) Masked() *Target {
	if t == nil || len(t.Headers) == 0 {
		return t
	}
	m := *t
	m.Headers = make(map[string]string, len(t.Headers))
	for k := range t.Headers {
		m.Headers[k] = errandapi.HiddenHeaderValue
	}
	return &m
}

// hasKey reports whether m holds k.
func hasKey(m map[string]string, k string) bool {
	_, ok := m[k]
	return ok
}

// keepsHidden reports whether a hidden value of header name (canonical)
// in t may be kept from cur, the target t replaces: cur sends that header
// to the same scheme, host and port as t (so a key that may change a
// queue's target cannot send a credential it cannot read to a server of
// its own).
func (t *Target) keepsHidden(cur *Target, name string) bool {
	if cur == nil || !hasKey(cur.Headers, name) {
		return false
	}
	a, err1 := url.Parse(t.Webhook)
	b, err2 := url.Parse(cur.Webhook)
	return err1 == nil && err2 == nil && strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Host, b.Host)
}

// origin is a webhook URL's scheme, host and port, for a message.
func origin(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	return u.Scheme + "://" + u.Host
}

// DropHidden is t without the headers whose values are hidden
// (errandapi.HiddenHeaderValue) and which cur, the target t would replace
// (nil for none), cannot give (keepsHidden), and their names, sorted. An
// import of an exported bundle, which holds no header values, uses it: a
// queue gets the headers it can keep, and the rest must be set again.
func (t *Target) DropHidden(cur *Target) (*Target, []string) {
	if t == nil || len(t.Headers) == 0 {
		return t, nil
	}
	var dropped []string
	kept := make(map[string]string, len(t.Headers))
	for k, v := range t.Headers {
		c := textproto.CanonicalMIMEHeaderKey(k)
		if v == errandapi.HiddenHeaderValue && !t.keepsHidden(cur, c) {
			dropped = append(dropped, c)
			continue
		}
		kept[k] = v
	}
	if dropped == nil {
		return t, nil
	}
	slices.Sort(dropped)
	d := *t
	d.Headers = kept
	if len(kept) == 0 {
		d.Headers = nil
	}
	return &d, dropped
}
