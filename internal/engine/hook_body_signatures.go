package engine

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"hash"
	"strings"

	"github.com/errandhq/errand/internal/deliver"
	"github.com/errandhq/errand/internal/task"
)

// bodySignature is a sender's signature of the body alone: the HMAC of the
// raw body keyed with the whole secret string, in a header of its own,
// with no time signed (so no replay window: the sender's delivery id, when
// it sends one, names the task instead).
type bodySignature struct {
	form     string           // verifyHook's name for it
	header   string           // the signature's header
	prefix   string           // before the digest ("sha256="), or none
	hash     func() hash.Hash // sha256.New or sha1.New
	base64   bool             // the digest in standard base64, else hex (either case)
	idHeader string           // the header whose value names the task, or none
}

// bodySignatures are the body signatures verifyHook reads, in order: a
// call carrying several (GitHub sends X-Hub-Signature-256 and the older
// X-Hub-Signature) is checked by the first.
var bodySignatures = []bodySignature{
	{form: "github", header: "X-Hub-Signature-256", prefix: "sha256=", hash: sha256.New, idHeader: "X-GitHub-Delivery"},
	{form: "shopify", header: "X-Shopify-Hmac-Sha256", hash: sha256.New, base64: true, idHeader: "X-Shopify-Webhook-Id"},
	{form: "woocommerce", header: "X-WC-Webhook-Signature", hash: sha256.New, base64: true, idHeader: "X-WC-Webhook-Delivery-ID"},
	{form: "linear", header: "Linear-Signature", hash: sha256.New, idHeader: "Linear-Delivery"},
	{form: "sentry", header: "Sentry-Hook-Signature", hash: sha256.New},
	{form: "typeform", header: "Typeform-Signature", prefix: "sha256=", hash: sha256.New, base64: true},
	{form: "x-hub-signature", header: "X-Hub-Signature", prefix: "sha1=", hash: sha1.New},
}

// bodySignatureOf is the first of bodySignatures whose header c sends.
func bodySignatureOf(c HookCall) *bodySignature {
	for i := range bodySignatures {
		if c.Header(bodySignatures[i].header) != "" {
			return &bodySignatures[i]
		}
	}
	return nil
}

// verify checks c's signature and returns the message id that names its
// task ("" for none).
func (s *bodySignature) verify(secret string, c HookCall) (string, error) {
	sig, ok := strings.CutPrefix(c.Header(s.header), s.prefix)
	mac := deliver.SignBody(secret, c.Body, s.hash)
	if s.base64 {
		ok = ok && hmac.Equal([]byte(sig), []byte(base64.StdEncoding.EncodeToString(mac)))
	} else {
		ok = ok && hexEqual(sig, hex.EncodeToString(mac))
	}
	if !ok {
		return "", task.Errorf(task.CodeUnauthenticated, "%s does not match this hook's secret", s.header)
	}
	if s.idHeader == "" {
		return "", nil
	}
	return c.Header(s.idHeader), nil
}
