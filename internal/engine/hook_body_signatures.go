package engine

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"hash"
	"strconv"
	"strings"
	"time"

	"github.com/errandhq/errand/internal/deliver"
	"github.com/errandhq/errand/internal/task"
)

// bodySignature is a sender's signature of the body alone: the HMAC of the
// raw body keyed with the whole secret string, in a header of its own,
// with no time signed (so no replay window: the sender's delivery id, when
// it sends one, names the task instead: errandapi.HookSender).
type bodySignature struct {
	form   string           // the sender's name (errandapi.HookSender)
	header string           // the signature's header
	prefix string           // before the digest ("sha256="), or none
	hash   func() hash.Hash // sha256.New or sha1.New
	base64 bool             // the digest in standard base64, else hex (either case)
	// sha1Too: a hex digest of SHA-1's length is an HMAC-SHA1 (two
	// senders share the header: ClickUp's SHA-256, Segment's SHA-1).
	sha1Too bool
	// websub: the header is WebSub's "<method>=<hex digest>", the method
	// (hmacHashes) naming the hash, rather than prefix and hash.
	websub bool
	// list: the header holds one or more signatures, comma-separated,
	// each prefix and digest; one matching is enough (PagerDuty signs
	// with each of its secrets while one is rolled).
	list bool
}

// hmacHashes are the hashes by name that a WebSub signature
// (X-Hub-Signature) may name — GitHub's older header and Intercom send
// sha1, Jira sha256 — and a rule's own signature scheme may
// (task.HookSignatureHashes).
var hmacHashes = map[string]func() hash.Hash{
	"sha1": sha1.New, "sha256": sha256.New, "sha384": sha512.New384, "sha512": sha512.New,
}

// bodySignatures are the body signatures verifyHook reads, by the
// sender's name (errandapi.HookSenders orders them).
var bodySignatures = []bodySignature{
	{form: "github", header: "X-Hub-Signature-256", prefix: "sha256=", hash: sha256.New},
	{form: "shopify", header: "X-Shopify-Hmac-Sha256", hash: sha256.New, base64: true},
	{form: "woocommerce", header: "X-WC-Webhook-Signature", hash: sha256.New, base64: true},
	{form: "linear", header: "Linear-Signature", hash: sha256.New},
	{form: "sentry", header: "Sentry-Hook-Signature", hash: sha256.New},
	{form: "typeform", header: "Typeform-Signature", prefix: "sha256=", hash: sha256.New, base64: true},
	{form: "forgejo", header: "X-Forgejo-Signature", hash: sha256.New},
	{form: "gitea", header: "X-Gitea-Signature", hash: sha256.New},
	{form: "gogs", header: "X-Gogs-Signature", hash: sha256.New},
	{form: "todoist", header: "X-Todoist-Hmac-SHA256", hash: sha256.New, base64: true},
	{form: "razorpay", header: "X-Razorpay-Signature", hash: sha256.New},
	{form: "cal", header: "X-Cal-Signature-256", hash: sha256.New},
	{form: "coinbase", header: "X-CC-Webhook-Signature", hash: sha256.New},
	{form: "vercel", header: "X-Vercel-Signature", hash: sha1.New},
	{form: "notion", header: "X-Notion-Signature", prefix: "sha256=", hash: sha256.New},
	{form: "x-signature", header: "X-Signature", hash: sha256.New, sha1Too: true}, // ClickUp, Lemon Squeezy; Segment's SHA-1
	{form: "pagerduty", header: "X-PagerDuty-Signature", prefix: "v1=", hash: sha256.New, list: true},
	{form: "x-hub-signature", header: "X-Hub-Signature", websub: true},
	{form: "dropbox", header: "X-Dropbox-Signature", hash: sha256.New},
	{form: "x", header: "X-Twitter-Webhooks-Signature", prefix: "sha256=", hash: sha256.New, base64: true},
	{form: "asana", header: "X-Hook-Signature", hash: sha256.New},
}

// bodySignatureNamed is the body signature of the sender named form, or
// nil.
func bodySignatureNamed(form string) *bodySignature {
	for i := range bodySignatures {
		if bodySignatures[i].form == form {
			return &bodySignatures[i]
		}
	}
	return nil
}

// verify checks c's signature. The body's MAC is computed once, however
// many signatures a list holds.
func (s *bodySignature) verify(secret string, c HookCall) error {
	sigs := []string{c.Header(s.header)}
	if s.list {
		sigs = strings.Split(sigs[0], ",")
	}
	h := s.hash
	if s.websub {
		var method string
		method, sigs[0], _ = strings.Cut(sigs[0], "=")
		if h = hmacHashes[strings.ToLower(method)]; h == nil || sigs[0] == "" {
			return task.Errorf(task.CodeUnauthenticated, "%s must be \"<method>=<hex digest>\" with the method sha1, sha256, sha384 or sha512", s.header)
		}
	}
	if s.sha1Too && len(strings.TrimPrefix(strings.TrimSpace(sigs[0]), s.prefix)) == 2*sha1.Size {
		h = sha1.New
	}
	mac := deliver.SignBody(secret, c.Body, h)
	want := hex.EncodeToString(mac)
	if s.base64 {
		want = base64.StdEncoding.EncodeToString(mac)
	}
	for _, sig := range sigs {
		sig, ok := strings.CutPrefix(strings.TrimSpace(sig), s.prefix)
		if ok && (s.base64 && hmac.Equal([]byte(sig), []byte(want)) || !s.base64 && hexEqual(sig, want)) {
			return nil
		}
	}
	return task.Errorf(task.CodeUnauthenticated, "%s does not match this hook's secret", s.header)
}

// verifyOwnSignature checks c against a rule's own signature scheme: its
// header, after its prefix (in any case), holds the HMAC of the signed
// content (the body, or the scheme's template of the timestamp header's
// value as sent, the id header's and the body) keyed with the whole secret
// string, in hex (either case) or base64 (standard or URL alphabet, padded
// or not), compared in constant time; a timestamp must be within
// HookReplayWindow of now.
func verifyOwnSignature(secret string, s *task.HookSignature, c HookCall, now time.Time) error {
	h := hmacHashes[s.Hash]
	if h == nil {
		return task.Errorf(task.CodeInternal, "hook signature: unknown hash %q", s.Hash)
	}
	v := strings.TrimSpace(c.Header(s.Header))
	if v == "" {
		return task.Errorf(task.CodeUnauthenticated, "this hook is signed with its own scheme: send %s", s)
	}
	if len(v) < len(s.Prefix) || !strings.EqualFold(v[:len(s.Prefix)], s.Prefix) {
		return task.Errorf(task.CodeUnauthenticated, "%s must begin with %q: this hook expects %s", s.Header, s.Prefix, s)
	}
	v = v[len(s.Prefix):]
	var got []byte
	var err error
	if s.Encoding == "base64" {
		got, err = decodeAnyBase64(v)
	} else {
		got, err = hex.DecodeString(v)
	}
	var want []byte
	if s.Signed == "" {
		want = deliver.SignBody(secret, c.Body, h)
	} else {
		var ts, id string
		if s.TimestampHeader != "" {
			var terr error
			if ts, terr = ownTimestamp(c.Header(s.TimestampHeader), s.TimestampHeader, now); terr != nil {
				return terr
			}
		}
		if s.IDHeader != "" {
			id = c.Header(s.IDHeader)
		}
		if sep, ok := s.IDSeparator(); ok && strings.IndexByte(id, sep) >= 0 {
			return task.Errorf(task.CodeUnauthenticated, "%s holds %q, which follows the id in this hook's signed content: refused", s.IDHeader, string(sep))
		}
		// {body} ends the template: what comes before it, filled in, is
		// signed ahead of the body.
		head := strings.NewReplacer("{timestamp}", ts, "{id}", id).Replace(strings.TrimSuffix(s.Signed, "{body}"))
		want = deliver.SignBodyAfter(secret, head, c.Body, h)
	}
	if err != nil || !hmac.Equal(got, want) {
		return task.Errorf(task.CodeUnauthenticated, "%s does not match this hook's secret (it expects %s)", s.Header, s)
	}
	return nil
}

// ownTimestamp reads a rule's own timestamp header, v: Unix seconds or
// milliseconds (a value of 10^11 or more is milliseconds: 10^11 seconds is
// some 3,000 years off), within HookReplayWindow of now either way. It
// returns v as sent, which is what is signed.
func ownTimestamp(v, header string, now time.Time) (string, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return "", task.Errorf(task.CodeUnauthenticated, "this hook's signature covers the time in %s: send it", header)
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return "", task.Errorf(task.CodeUnauthenticated, "%s must be Unix seconds or milliseconds", header)
	}
	at := time.Unix(n, 0)
	if n >= 1e11 {
		at = time.UnixMilli(n)
	}
	if err := inReplayWindow(at, header, now); err != nil {
		return "", err
	}
	return v, nil
}

// decodeAnyBase64 decodes standard or URL-alphabet base64, padded or not.
func decodeAnyBase64(v string) ([]byte, error) {
	v = strings.TrimRight(v, "=")
	if strings.ContainsAny(v, "-_") {
		return base64.RawURLEncoding.DecodeString(v)
	}
	return base64.RawStdEncoding.DecodeString(v)
}

// verifyGitLabToken checks GitLab's X-Gitlab-Token, which carries the
// webhook's secret token itself rather than a signature: it must be the
// hook's whole secret string. (GitLab's signing token, a whsec_ key, signs
// as Standard Webhooks does: such a call is read as one.)
func verifyGitLabToken(secret string, c HookCall) error {
	if !hmac.Equal([]byte(c.Header("X-Gitlab-Token")), []byte(secret)) {
		return task.Errorf(task.CodeUnauthenticated, "X-Gitlab-Token is not this hook's secret")
	}
	return nil
}
