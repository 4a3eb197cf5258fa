package engine

import (
	"crypto/subtle"
	"encoding/json"
	"net/url"

	"github.com/errandhq/errand/internal/task"
)

// maxHookChallenge bounds the challenge a hook echoes to a GET: Meta's is
// a number of ten digits or so.
const maxHookChallenge = 256

// HookSubscribe answers a GET of a hook's URL, which is only ever Meta's
// Webhooks check of a callback URL (WhatsApp, Messenger, Instagram,
// Facebook pages): hub.mode=subscribe, a hub.challenge to echo, and the
// hub.verify_token the user typed in Meta's App Dashboard, which must be
// the hook's token (the last segment of its URL). It returns the
// challenge, to answer 200 as plain text; it adds nothing. Anything else
// is INVALID_ARGUMENT naming the query parameter (a hook takes its calls
// by POST), a verify token that is not the hook's UNAUTHENTICATED.
func (e *Engine) HookSubscribe(h *Hook, q url.Values) (string, error) {
	if m := q.Get("hub.mode"); m != "subscribe" {
		return "", task.FieldErrorf(task.CodeInvalidArgument, "hub.mode", "must be subscribe (a GET of a hook is Meta's Webhooks check of its URL; send the hook's calls with POST), not %s", task.Quote(m))
	}
	ch := q.Get("hub.challenge")
	if ch == "" || len(ch) > maxHookChallenge || !printable(ch) {
		return "", task.FieldErrorf(task.CodeInvalidArgument, "hub.challenge", "must be 1–%d printable ASCII characters", maxHookChallenge)
	}
	if subtle.ConstantTimeCompare([]byte(q.Get("hub.verify_token")), []byte(h.Rule.HookToken)) != 1 {
		return "", task.Errorf(task.CodeUnauthenticated, "hub.verify_token must be this hook's token, the last segment of its URL: give it to Meta as the Verify Token")
	}
	return ch, nil
}

// printable reports whether s is printable ASCII without spaces.
func printable(s string) bool {
	for _, c := range []byte(s) {
		if c <= ' ' || c > '~' {
			return false
		}
	}
	return true
}

// metaNotification reports whether a call signed as GitHub signs
// (X-Hub-Signature-256, the HMAC-SHA256 of the body keyed with the app's
// secret) is a Meta Webhooks event notification — {"object": "page",
// "entry": […]}, or whatsapp_business_account, instagram … — and not
// GitHub's (which sends X-GitHub-Event): Meta takes only a 200 as
// received, and retries anything else.
func metaNotification(c HookCall) bool {
	if c.Header("X-GitHub-Event") != "" {
		return false
	}
	var v struct {
		Object string          `json:"object"`
		Entry  json.RawMessage `json:"entry"`
	}
	return json.Unmarshal(c.Body, &v) == nil && v.Object != "" && len(v.Entry) > 0 && v.Entry[0] == '['
}
