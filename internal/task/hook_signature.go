package task

import (
	"fmt"
	"net/textproto"
	"slices"
	"strings"
)

// HookSignature is a hook rule's own signature scheme, for a sender
// errand does not read by name: the HMAC of the signed content (the raw
// body, or Signed's template of it), keyed with the hook's whole secret
// string, in Header, after Prefix, in Encoding. With one, a call is
// checked by it alone (no sender's header is read), and IDHeader, when
// set, names the task, so that the sender's redelivery adds nothing twice.
// TimestampHeader, when set, holds the call's time (Unix seconds, or
// milliseconds), which must be within 5 minutes of the node's (the
// engine's HookReplayWindow, as for the senders errand reads by name).
type HookSignature struct {
	Header   string `json:"header"`   // the signature's header (canonical form)
	Hash     string `json:"hash"`     // HookSignatureHashes: "sha256" by default
	Encoding string `json:"encoding"` // "hex" (either case; the default) or "base64" (standard or URL alphabet, padded or not)
	Prefix   string `json:"prefix"`   // before the digest ("sha256="), matched without regard to case; "" for none
	IDHeader string `json:"idHeader"` // the header whose value names the task; "" for none
	// TimestampHeader is the header holding the call's time; "" for none.
	TimestampHeader string `json:"timestampHeader,omitempty"`
	// Signed is what is signed, a template of {timestamp}, {id} and {body}
	// ("v0:{timestamp}:{body}"); "" for the body alone. With a
	// TimestampHeader it is "{timestamp}.{body}" unless set.
	Signed string `json:"signed,omitempty"`
}

// MaxHookSignatureSigned bounds Signed's characters besides its
// placeholders.
const MaxHookSignatureSigned = 32

// HookSignatureHashes are the hashes a HookSignature may name.
var HookSignatureHashes = []string{"sha1", "sha256", "sha384", "sha512"}

// MaxHookSignaturePrefix bounds a HookSignature's prefix.
const MaxHookSignaturePrefix = 32

// build validates p, a scheme as a create or PATCH sends it (whole, its
// omitted fields ""), and returns it with its defaults filled in and its
// headers in canonical form, each refusal naming its field under
// hook.signature.
func (p *HookSignature) build() (*HookSignature, error) {
	s := &HookSignature{Hash: "sha256", Encoding: "hex", Prefix: p.Prefix}
	header := func(v, field string) (string, error) {
		if v == "" || len(v) > 100 || !headerToken(v) {
			return "", FieldErrorf(CodeInvalidArgument, field, "%s is not a header name", Quote(v))
		}
		v = textproto.CanonicalMIMEHeaderKey(v)
		if credentialHeaders[v] || v == "Idempotency-Key" || v == "Content-Type" || v == "Content-Length" || v == "Content-Encoding" || v == "Host" {
			return "", FieldErrorf(CodeInvalidArgument, field, "%s cannot hold a signature or a message id", v)
		}
		return v, nil
	}
	var err error
	if p.Header == "" {
		return nil, FieldErrorf(CodeInvalidArgument, "hook.signature.header", "is required: the header that holds the signature")
	}
	if s.Header, err = header(p.Header, "hook.signature.header"); err != nil {
		return nil, err
	}
	if p.IDHeader != "" {
		if s.IDHeader, err = header(p.IDHeader, "hook.signature.idHeader"); err != nil {
			return nil, err
		}
		if s.IDHeader == s.Header {
			return nil, FieldErrorf(CodeInvalidArgument, "hook.signature.idHeader", "is the signature's header")
		}
	}
	if p.Hash != "" {
		if !slices.Contains(HookSignatureHashes, p.Hash) {
			return nil, FieldErrorf(CodeInvalidArgument, "hook.signature.hash", "must be one of %s", strings.Join(HookSignatureHashes, ", "))
		}
		s.Hash = p.Hash
	}
	if p.Encoding != "" {
		s.Encoding = p.Encoding
		if s.Encoding != "hex" && s.Encoding != "base64" {
			return nil, FieldErrorf(CodeInvalidArgument, "hook.signature.encoding", "must be hex or base64")
		}
	}
	if len(p.Prefix) > MaxHookSignaturePrefix {
		return nil, FieldErrorf(CodeInvalidArgument, "hook.signature.prefix", "at most %d characters", MaxHookSignaturePrefix)
	}
	for _, c := range []byte(p.Prefix) {
		if c <= ' ' || c > '~' {
			return nil, FieldErrorf(CodeInvalidArgument, "hook.signature.prefix", "must be printable ASCII without spaces")
		}
	}
	if p.TimestampHeader != "" {
		if s.TimestampHeader, err = header(p.TimestampHeader, "hook.signature.timestampHeader"); err != nil {
			return nil, err
		}
		if s.TimestampHeader == s.Header || s.TimestampHeader == s.IDHeader {
			return nil, FieldErrorf(CodeInvalidArgument, "hook.signature.timestampHeader", "must differ from the signature's header and the id header")
		}
		s.Signed = "{timestamp}.{body}"
	}
	if p.Signed != "" {
		if err := checkSigned(p.Signed, s.TimestampHeader != "", s.IDHeader != ""); err != nil {
			return nil, err
		}
		s.Signed = p.Signed
	}
	if s.Signed == "{body}" {
		s.Signed = "" // the body alone, as without a template
	}
	return s, nil
}

// checkSigned checks a scheme's signed template: {body} once, at its end;
// {timestamp} once with a timestamp header and not without, {id} at most
// once and only with an id header; no other braces; besides them at most
// MaxHookSignatureSigned printable ASCII characters, no space or comma.
func checkSigned(v string, timestamp, id bool) error {
	fail := func(format string, a ...any) error {
		return FieldErrorf(CodeInvalidArgument, "hook.signature.signed", format, a...)
	}
	if !strings.HasSuffix(v, "{body}") || strings.Count(v, "{body}") != 1 {
		return fail("must end with {body}, once: the raw body is signed last")
	}
	for _, ph := range []struct {
		name string
		has  bool
		need string
	}{{"{timestamp}", timestamp, "timestampHeader"}, {"{id}", id, "idHeader"}} {
		switch n := strings.Count(v, ph.name); {
		case n > 1:
			return fail("holds %s more than once", ph.name)
		case n == 1 && !ph.has:
			return fail("holds %s: set hook.signature.%s, the header it is read from", ph.name, ph.need)
		case n == 0 && ph.has && ph.name == "{timestamp}":
			// A time not signed could be anything: checking it stops nothing.
			return fail("must hold {timestamp} with a timestampHeader: a time is checked only where it is signed")
		}
	}
	// An id is the sender's string: what follows it must be a separator
	// it cannot hold (IDSeparator), or a caller could move the body's first
	// characters into the id and keep the signature. A time's digits end
	// at a character that is not one: else "1712345678" and a body "123…"
	// would sign as the milliseconds "1712345678123" (the same instant)
	// and a body "…".
	if i := strings.Index(v, "{id}"); i >= 0 && v[i+len("{id}")] == '{' {
		return fail("must have a separator character after {id} (which the id may not hold), not another placeholder")
	}
	if i := strings.Index(v, "{timestamp}"); i >= 0 {
		if c := v[i+len("{timestamp}")]; c == '{' || c == '+' || c == '-' || c >= '0' && c <= '9' {
			return fail("must have a separator character after {timestamp}, not a digit, a sign or another placeholder")
		}
	}
	rest := v
	for _, ph := range []string{"{body}", "{timestamp}", "{id}"} {
		rest = strings.ReplaceAll(rest, ph, "")
	}
	if len(rest) > MaxHookSignatureSigned {
		return fail("at most %d characters besides {timestamp}, {id} and {body}", MaxHookSignatureSigned)
	}
	for _, c := range []byte(rest) {
		if c <= ' ' || c > '~' || c == ',' || c == '{' || c == '}' {
			return fail("besides {timestamp}, {id} and {body}, only printable ASCII without spaces, commas or braces")
		}
	}
	return nil
}

// IDSeparator is the character that follows {id} in s's signed template
// (a call whose id holds it is refused), and false without {id}.
func (s *HookSignature) IDSeparator() (byte, bool) {
	i := strings.Index(s.Signed, "{id}")
	if i < 0 {
		return 0, false
	}
	return s.Signed[i+len("{id}")], true
}

// String is the scheme in words, for a refusal: "X-Acme-Signature: sha256=
// and the hex HMAC-SHA256 of the body" (of "v0:{timestamp}:{body}", with
// the time in X-Acme-Timestamp).
func (s *HookSignature) String() string {
	what := "the body"
	if s.Signed != "" {
		what = Quote(s.Signed)
	}
	out := fmt.Sprintf("%s: %sthe %s HMAC-%s of %s", s.Header, quotedPrefix(s.Prefix), s.Encoding, strings.ToUpper(s.Hash), what)
	if s.TimestampHeader != "" {
		out += ", with the time in " + s.TimestampHeader
	}
	return out
}

func quotedPrefix(p string) string {
	if p == "" {
		return ""
	}
	return fmt.Sprintf("%q and ", p)
}
