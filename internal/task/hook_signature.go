package task

import (
	"fmt"
	"net/textproto"
	"slices"
	"strings"
)

// HookSignature is a hook rule's own signature scheme, for a sender
// errand does not read by name: the HMAC of the raw body, keyed with the
// hook's whole secret string, in Header, after Prefix, in Encoding. With
// one, a call is checked by it alone (no sender's header is read), and
// IDHeader, when set, names the task, so that the sender's redelivery adds
// nothing twice.
type HookSignature struct {
	Header   string `json:"header"`   // the signature's header (canonical form)
	Hash     string `json:"hash"`     // HookSignatureHashes: "sha256" by default
	Encoding string `json:"encoding"` // "hex" (either case; the default) or "base64" (standard or URL alphabet, padded or not)
	Prefix   string `json:"prefix"`   // before the digest ("sha256="), matched without regard to case; "" for none
	IDHeader string `json:"idHeader"` // the header whose value names the task; "" for none
}

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
	return s, nil
}

// String is the scheme in words, for a refusal: "X-Acme-Signature: sha256=
// and the hex HMAC-SHA256 of the body".
func (s *HookSignature) String() string {
	return fmt.Sprintf("%s: %sthe %s HMAC-%s of the body", s.Header, quotedPrefix(s.Prefix), s.Encoding, strings.ToUpper(s.Hash))
}

func quotedPrefix(p string) string {
	if p == "" {
		return ""
	}
	return fmt.Sprintf("%q and ", p)
}
