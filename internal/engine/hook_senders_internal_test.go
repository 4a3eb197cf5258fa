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
