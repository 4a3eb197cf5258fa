package deliver

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The known-answer vector of docs/webhooks.md, computed independently with
// openssl:
//
//	printf '%s' "1793042520000.$BODY" | openssl dgst -sha256 -hmac "$KEY"
//	printf '%s' "0mvpn7bai3f9c2e81d4a7.1793042520.$BODY" |
//	  openssl dgst -sha256 -mac HMAC -macopt hexkey:000102…1f -binary | base64
const (
	katKey  = "whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=" // base64 of bytes 0x00…0x1f
	katTS   = int64(1793042520000)
	katID   = "0mvpn7bai3f9c2e81d4a7"
	katBody = `{"task":{"id":"0mvpn7bai3f9c2e81d4a7","queue":"emails","name":"receipt-o-1041","attempt":1,"maxAttempts":10,"runAt":1793042520000,"createdAt":1793042460000,"deadlineAt":1793043120000,"source":"api","depth":0,"params":null,"deadLetterOf":null},"payload":{"orderId":"o-1041"}}`
	katSig  = "v1=01967ee3e8eda99d326972d4a640df5fbd6e2610000daec7cb23652dc0e619f4"
	katStd  = "v1,4y6g4VJIhzlAqM9qvlO68/eH/SP8nGawczfeDqRCmXU="
)

func TestSignKnownAnswer(t *testing.T) {
	t.Parallel()
	if got := Sign(katKey, katTS, []byte(katBody)); got != katSig {
		t.Errorf("Sign = %s, want %s", got, katSig)
	}
	got, ok := SignStandard(katKey, katID, katTS/1000, []byte(katBody))
	if !ok || got != katStd {
		t.Errorf("SignStandard = %s %v, want %s", got, ok, katStd)
	}
	if got := string(Body(katTask())); got != katBody {
		t.Errorf("Body =\n%s\nwant\n%s", got, katBody)
	}
}

// verifyStandard checks a Standard Webhooks signature as the specification
// describes it, independently of SignStandard: strip "whsec_", base64-decode
// the secret, HMAC-SHA256 "<id>.<timestamp>.<body>", base64, and compare with
// each space-separated "v1,<sig>" of the header.
func verifyStandard(secret string, h http.Header, body []byte, now time.Time) error {
	id, ts, sigs := h.Get("webhook-id"), h.Get("webhook-timestamp"), h.Get("webhook-signature")
	if id == "" || ts == "" || sigs == "" {
		return errors.New("missing headers")
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || now.Sub(time.Unix(sec, 0)).Abs() > 5*time.Minute {
		return errors.New("bad timestamp")
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return err
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id + "." + ts + "." + string(body)))
	want := base64.StdEncoding.EncodeToString(m.Sum(nil))
	for _, s := range strings.Fields(sigs) {
		if v, sig, ok := strings.Cut(s, ","); ok && v == "v1" && hmac.Equal([]byte(sig), []byte(want)) {
			return nil
		}
	}
	return errors.New("no matching signature")
}

func TestVerify(t *testing.T) {
	t.Parallel()
	now := time.UnixMilli(katTS)
	body := []byte(katBody)
	h := http.Header{}
	h.Set(HeaderTimestamp, strconv.FormatInt(katTS, 10))
	h.Set(HeaderSignature, katSig)
	if err := Verify(katKey, h, body, now.Add(4*time.Minute), 0); err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if err := Verify(katKey, h, append([]byte(katBody), ' '), now, 0); !errors.Is(err, ErrBadSignature) {
		t.Errorf("tampered body: %v", err)
	}
	if err := Verify(katKey+"x", h, body, now, 0); !errors.Is(err, ErrBadSignature) {
		t.Errorf("wrong key: %v", err)
	}
	if err := Verify(katKey, h, body, now.Add(6*time.Minute), 0); !errors.Is(err, ErrStale) {
		t.Errorf("replayed: %v", err)
	}
	if err := Verify(katKey, h, body, now.Add(-6*time.Minute), 0); !errors.Is(err, ErrStale) {
		t.Errorf("from the future: %v", err)
	}
	if err := Verify(katKey, h, body, now.Add(time.Hour), 2*time.Hour); err != nil {
		t.Errorf("wide tolerance: %v", err)
	}
	h.Set(HeaderSignature, "v1=00, "+katSig)
	if err := Verify(katKey, h, body, now, 0); err != nil {
		t.Errorf("several signatures: %v", err)
	}
	h.Del(HeaderSignature)
	if err := Verify(katKey, h, body, now, 0); !errors.Is(err, ErrNoSignature) {
		t.Errorf("unsigned: %v", err)
	}
}

func TestNewWebhookKey(t *testing.T) {
	t.Parallel()
	a, b := NewWebhookKey(), NewWebhookKey()
	if a == b || !strings.HasPrefix(a, "whsec_") {
		t.Fatalf("keys %q %q", a, b)
	}
	secret, ok := standardKey(a)
	if !ok || len(secret) != 32 {
		t.Fatalf("key %q does not decode to 32 bytes", a)
	}
	if _, ok := SignStandard("whsec_not base64!", "id", 1, nil); ok {
		t.Error("SignStandard accepted a key that is not base64")
	}
	if _, ok := SignStandard("plainkey", "id", 1, nil); ok {
		t.Error("SignStandard accepted a key without the prefix")
	}
}

// TestSignTwilioKnownAnswer: Twilio's own published vectors (its helper
// libraries' tests: auth token "12345"), a form call and a JSON call whose
// URL carries the body's SHA-256, checked independently with
//
//	printf '%s' "$URL$NAME1$VALUE1…" | openssl dgst -sha1 -hmac 12345 -binary | base64
func TestSignTwilioKnownAnswer(t *testing.T) {
	t.Parallel()
	form := url.Values{"CallSid": {"CA1234567890ABCDE"}, "Caller": {"+14158675309"}, "Digits": {"1234"},
		"From": {"+14158675309"}, "To": {"+18005551212"}}
	if got := SignTwilio("12345", "https://mycompany.com/myapp.php?foo=1&bar=2", form); got != "RSOYDt4T1cUTdK1PDd93/VVr8B8=" {
		t.Errorf("SignTwilio(form) = %s", got)
	}
	if got := SignTwilio("12345", "https://mycompany.com/myapp.php?foo=1&bar=2&bodySHA256=0a1ff7634d9ab3b95db5c9a2dfe9416e41502b283a80c7cf19632632f96e6620", nil); got != "a9nBmqA0ju/hNViExpshrM61xv4=" {
		t.Errorf("SignTwilio(JSON) = %s", got)
	}
}

// TestSignShopifyKnownAnswer: computed independently with
//
//	printf '%s' "$BODY" | openssl dgst -sha256 -hmac "$SECRET" -binary | base64
func TestSignShopifyKnownAnswer(t *testing.T) {
	t.Parallel()
	body := `{"id":820982911946154508,"email":"jon@example.com","total_price":"25.00"}`
	if got := SignShopify("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", []byte(body)); got != "viHXhRpWqu8LVt9cBCqENyHupOoI+4iXfzVOD+MKPmU=" {
		t.Errorf("SignShopify = %s", got)
	}
}
