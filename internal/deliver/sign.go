package deliver

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"hash"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/errandhq/errand/internal/id"
)

// The headers of a webhook delivery.
const (
	HeaderTimestamp = "X-Errand-Timestamp" // epoch milliseconds
	HeaderSignature = "X-Errand-Signature" // v1=<hex HMAC-SHA256>
	// HeaderDelivery carries the attempt's delivery token
	// (errandapi.DeliveryHeader): adds sent with it are depth-limited.
	HeaderDelivery = "X-Errand-Delivery"
	// The Standard Webhooks headers (standardwebhooks.com).
	HeaderWebhookID        = "Webhook-Id"        // the task id
	HeaderWebhookTimestamp = "Webhook-Timestamp" // epoch seconds
	HeaderWebhookSignature = "Webhook-Signature" // v1,<base64 HMAC-SHA256>
)

// KeyPrefix starts every signing key.
const KeyPrefix = "whsec_"

// DefaultTolerance is how far a delivery's timestamp may be from the
// receiver's clock before Verify refuses it as a replay.
const DefaultTolerance = 5 * time.Minute

// NewWebhookKey returns a new signing key: "whsec_" and the standard base64
// of 32 random bytes. errand's own signature is keyed with the whole string;
// the Standard Webhooks signature with the 32 decoded bytes.
func NewWebhookKey() string { return id.WebhookKey() }

// Sign returns errand's signature header value for a delivery:
// "v1=" and the hex HMAC-SHA256, keyed with the whole key string (prefix
// included), of "<ts>.<body>", where ts is the x-errand-timestamp value in
// epoch milliseconds.
func Sign(key string, ts int64, body []byte) string {
	m := hmac.New(sha256.New, []byte(key))
	var b [20]byte
	m.Write(strconv.AppendInt(b[:0], ts, 10))
	m.Write([]byte{'.'})
	m.Write(body)
	var out [3 + 2*sha256.Size]byte
	copy(out[:], "v1=")
	var sum [sha256.Size]byte
	hex.Encode(out[3:], m.Sum(sum[:0]))
	return string(out[:])
}

// SignBody returns the HMAC of body alone, keyed with the whole key string,
// with the hash h makes (sha256.New, sha1.New): the signature GitHub,
// Shopify and other senders put, in hex or base64, in a header of their
// own.
func SignBody(key string, body []byte, h func() hash.Hash) []byte {
	return SignBodyAfter(key, "", body, h)
}

// SignBodyAfter is SignBody of head followed by body, the body not copied
// to join them: the signature of senders that sign a time or an id before
// the body (Webflow's, Twitch's, a hook's own template).
func SignBodyAfter(key, head string, body []byte, h func() hash.Hash) []byte {
	m := hmac.New(h, []byte(key))
	m.Write([]byte(head))
	m.Write(body)
	return m.Sum(nil)
}

// SignGitHub returns GitHub's X-Hub-Signature-256 value for body: "sha256="
// and the hex HMAC-SHA256 of the body, keyed with the whole key string.
func SignGitHub(key string, body []byte) string {
	return "sha256=" + hex.EncodeToString(SignBody(key, body, sha256.New))
}

// SignSlack returns Slack's X-Slack-Signature value: "v0=" and the hex
// HMAC-SHA256, keyed with the whole key string, of "v0:<ts>:<body>", where
// ts is the X-Slack-Request-Timestamp value in epoch seconds. Zoom's
// x-zm-signature is the same, ts being its x-zm-request-timestamp.
func SignSlack(key string, ts int64, body []byte) string {
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte("v0:" + strconv.FormatInt(ts, 10) + ":"))
	m.Write(body)
	return "v0=" + hex.EncodeToString(m.Sum(nil))
}

// SignStripe returns a Stripe-Signature value: "t=<ts>,v1=" and the hex
// HMAC-SHA256, keyed with the whole key string, of "<ts>.<body>", where ts
// is in epoch seconds (Sign's scheme, with Stripe's header around it).
func SignStripe(key string, ts int64, body []byte) string {
	return "t=" + strconv.FormatInt(ts, 10) + "," + Sign(key, ts, body)
}

// SignShopify returns Shopify's X-Shopify-Hmac-Sha256 value for body: the
// base64 HMAC-SHA256 of the body, keyed with the whole key string (the
// app's client secret, or the store's webhook signing secret).
func SignShopify(key string, body []byte) string {
	return base64.StdEncoding.EncodeToString(SignBody(key, body, sha256.New))
}

// SignTwilio returns Twilio's X-Twilio-Signature value for a call to
// rawURL (the whole URL Twilio requested, query included) with the form
// fields params (nil for a body that is not a form: then rawURL carries
// its bodySHA256): the base64 HMAC-SHA1, keyed with the whole key string
// (the account's auth token), of the URL followed by each field's name and
// value, names in order and a name's values in order, with nothing between.
func SignTwilio(key, rawURL string, params url.Values) string {
	m := hmac.New(sha1.New, []byte(key))
	m.Write([]byte(rawURL))
	for _, k := range slices.Sorted(maps.Keys(params)) {
		vs := slices.Clone(params[k])
		slices.Sort(vs)
		for _, v := range vs {
			m.Write([]byte(k))
			m.Write([]byte(v))
		}
	}
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// SignHubSpot returns HubSpot's X-HubSpot-Signature-v3 value for a POST
// of body to rawURL at ts (X-HubSpot-Request-Timestamp, milliseconds since
// the epoch): the base64 HMAC-SHA256, keyed with the whole key string (the
// app's client secret), of "POST", the URL, the body and ts, with nothing
// between.
func SignHubSpot(key, rawURL string, body []byte, ts int64) string {
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte("POST" + rawURL))
	m.Write(body)
	m.Write([]byte(strconv.FormatInt(ts, 10)))
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// standardKey returns the Standard Webhooks secret of key: the base64 after
// the whsec_ prefix, decoded. ok is false for a key not in that form.
func standardKey(key string) ([]byte, bool) {
	rest, ok := strings.CutPrefix(key, KeyPrefix)
	if !ok {
		return nil, false
	}
	secret, err := base64.StdEncoding.DecodeString(rest)
	if err != nil || len(secret) == 0 {
		return nil, false
	}
	return secret, true
}

// SignStandard returns the Standard Webhooks signature header value:
// "v1," and the base64 HMAC-SHA256, keyed with the decoded secret of key,
// of "<msgID>.<ts>.<body>", where ts is in epoch seconds. ok is false when
// key is not "whsec_" followed by standard base64.
func SignStandard(key, msgID string, ts int64, body []byte) (sig string, ok bool) {
	secret, ok := standardKey(key)
	if !ok {
		return "", false
	}
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(msgID))
	var b [22]byte
	b[0] = '.'
	m.Write(append(strconv.AppendInt(b[:1], ts, 10), '.'))
	m.Write(body)
	var sum [sha256.Size]byte
	out := make([]byte, 3, 3+base64.StdEncoding.EncodedLen(sha256.Size))
	copy(out, "v1,")
	return string(base64.StdEncoding.AppendEncode(out, m.Sum(sum[:0]))), true
}

// Errors of Verify.
var (
	ErrNoSignature  = errors.New("no x-errand-signature or x-errand-timestamp header")
	ErrBadSignature = errors.New("signature does not match")
	ErrStale        = errors.New("timestamp outside the tolerance")
)

// Verify checks errand's signature of a received delivery the way a
// receiver does: it recomputes Sign over the raw body with the timestamp
// header and compares in constant time with every v1= value of the
// signature header, then refuses a timestamp farther than tolerance from
// now (DefaultTolerance when tolerance is 0 or less).
func Verify(key string, h http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	tsText, sigs := h.Get(HeaderTimestamp), h.Get(HeaderSignature)
	if tsText == "" || sigs == "" {
		return ErrNoSignature
	}
	ts, err := strconv.ParseInt(tsText, 10, 64)
	if err != nil {
		return ErrBadSignature
	}
	want := []byte(Sign(key, ts, body))
	match := false
	for _, s := range strings.FieldsFunc(sigs, func(r rune) bool { return r == ' ' || r == ',' }) {
		if hmac.Equal([]byte(s), want) {
			match = true
		}
	}
	if !match {
		return ErrBadSignature
	}
	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	if d := now.Sub(time.UnixMilli(ts)); d > tolerance || d < -tolerance {
		return ErrStale
	}
	return nil
}
