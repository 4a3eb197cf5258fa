package engine

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/task"
)

// TestHookSendersChecked: each sender errandapi.HookSenders lists is read
// by its own check (a call with its header and a wrong signature is
// refused naming that header, not as unsigned nor as a sender errand has
// no check for), and the engine's tables name the header errandapi does.
func TestHookSendersChecked(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	for _, s := range errandapi.HookSenders() {
		h := http.Header{}
		h.Set(s.Header, "t=1700000000,v1=00;ts=1700000000;h1=00")
		h.Set("X-Slack-Request-Timestamp", "1700000000")
		h.Set("x-zm-request-timestamp", "1700000000")
		h.Set("X-Frameio-Request-Timestamp", "1700000000")
		secret := "a-sender-secret-of-some-length"
		if s.Name == "standard" {
			secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
			h.Set("webhook-id", "msg_1")
			h.Set("webhook-timestamp", "1700000000")
		}
		form, err := verifyHook(secret, HookCall{Body: []byte(`{}`), Header: h.Get}, now)
		if form != s.Name || !task.IsCode(err, task.CodeUnauthenticated) || strings.Contains(err.Error(), "this hook is signed") {
			t.Errorf("%s (%s): form %q, %v; want %q refused by its own check", s.Name, s.Header, form, err, s.Name)
		}
		if bs := bodySignatureNamed(s.Name); bs != nil && !strings.EqualFold(bs.header, s.Header) {
			t.Errorf("%s: the body signature reads %s, errandapi names %s", s.Name, bs.header, s.Header)
		}
		if ss := stampedNamed(s.Name); ss != nil && !strings.EqualFold(ss.header, s.Header) {
			t.Errorf("%s: the stamped scheme reads %s, errandapi names %s", s.Name, ss.header, s.Header)
		}
	}
	for _, bs := range bodySignatures {
		if !listed(bs.form) {
			t.Errorf("body signature %s is not one of errandapi.HookSenders, so no call is read as it", bs.form)
		}
	}
	for _, ss := range stampedSchemes {
		if !listed(ss.form) {
			t.Errorf("stamped scheme %s is not one of errandapi.HookSenders, so no call is read as it", ss.form)
		}
	}
}

// listed reports whether errandapi.HookSenders names a sender form.
func listed(form string) bool {
	for _, s := range errandapi.HookSenders() {
		if s.Name == form {
			return true
		}
	}
	return false
}

// TestVerifySendGrid: SendGrid's own published example (its Node helper's
// test: the public key, the signature of the timestamp and payload) is
// accepted; a changed byte, a stale timestamp, or a secret that is no
// public key is refused.
func TestVerifySendGrid(t *testing.T) {
	const (
		key     = "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEEDr2LjtURuePQzplybdC+u4CwrqDqBaWjcMMsTbhdbcwHBcepxo7yAQGhHPTnlvFYPAZFceEu/1FwCM/QmGUhA=="
		sig     = "MEUCIQCtIHJeH93Y+qpYeWrySphQgpNGNr/U+UyUlBkU6n7RAwIgJTz2C+8a8xonZGi6BpSzoQsbVRamr2nlxFDWYNH2j/0="
		ts      = "1588788367"
		payload = `{"category":"example_payload","event":"test_event","message_id":"message_id"}`
	)
	now := time.Unix(1588788367, 0).Add(time.Minute)
	call := func(body, sig, ts string) HookCall {
		h := http.Header{}
		h.Set("X-Twilio-Email-Event-Webhook-Signature", sig)
		h.Set("X-Twilio-Email-Event-Webhook-Timestamp", ts)
		return HookCall{Body: []byte(body), Header: h.Get}
	}
	if form, err := verifyHook(key, call(payload, sig, ts), now); err != nil || form != "sendgrid" {
		t.Fatalf("SendGrid's example: %q %v", form, err)
	}
	for name, c := range map[string]struct {
		key  string
		call HookCall
		now  time.Time
		says string
	}{
		"another body":      {key, call(payload+" ", sig, ts), now, "does not match"},
		"another timestamp": {key, call(payload, sig, "1588788368"), now, "does not match"},
		"not base64":        {key, call(payload, "%%%", ts), now, "does not match"},
		"stale":             {key, call(payload, sig, ts), now.Add(10 * time.Minute), "refused as a replay"},
		"no key":            {"not-a-public-key-at-all", call(payload, sig, ts), now, "not a SendGrid verification key"},
		"a truncated DER":   {"MFkwEwYHKoZIzj0CAQ==", call(payload, sig, ts), now, "not a SendGrid verification key"},
	} {
		if _, err := verifyHook(c.key, c.call, c.now); !task.IsCode(err, task.CodeUnauthenticated) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want UNAUTHENTICATED saying %q", name, err, c.says)
		}
	}
}

// TestOwnSignatureHashes: every hash a rule's own signature scheme may
// name (task.HookSignatureHashes) has an HMAC here, so a saved scheme is
// never refused as unknown when a call comes.
func TestOwnSignatureHashes(t *testing.T) {
	for _, h := range task.HookSignatureHashes {
		if hmacHashes[h] == nil {
			t.Errorf("hash %q has no HMAC", h)
		}
	}
}
