package engine

import (
	"crypto/subtle"
	"encoding/json"
	"net/url"

	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/task"
)

// maxHookChallenge bounds the challenge a hook answers a GET with: Meta's
// is a number of ten digits or so, Dropbox's a short token.
const maxHookChallenge = 256

// HookCheckAnswer is a hook's answer (200) to a sender's check of its URL:
// Text as plain text, or Reply as JSON.
type HookCheckAnswer struct {
	Text  string
	Reply any
}

// oktaChallengeHeader carries Okta's one-time check of an event hook's URL.
const oktaChallengeHeader = "X-Okta-Verification-Challenge"

// HookCheck answers a GET of a hook's URL, which is only ever a sender's
// check of the URL before it sends anything, told by its query; nothing
// is added:
//   - Meta's Webhooks (WhatsApp, Messenger, Instagram, Facebook pages):
//     hub.mode=subscribe, a hub.challenge to echo, and the
//     hub.verify_token the user typed in Meta's App Dashboard, which must
//     be the hook's token (the last segment of its URL), else
//     UNAUTHENTICATED.
//   - Dropbox's: a challenge to echo.
//   - Okta's (event hooks): the header X-Okta-Verification-Challenge,
//     answered {"verification": <its value>}.
//   - Microsoft Graph's (a POST, which the hook's handler sends here):
//     validationToken, echoed as plain text (graphValidation).
//
// X's CRC (crc_token) is refused, INVALID_ARGUMENT naming it: its answer
// is the HMAC-SHA256 of the caller's token keyed with the hook's secret,
// which would sign, for whoever holds the URL, the short bodies of every
// scheme that signs the body so with the same secret (X's own events,
// Shopify's, WooCommerce's, Typeform's, Todoist's). A challenge or token
// is 1–maxHookChallenge printable ASCII characters; anything else is
// INVALID_ARGUMENT naming the query parameter (a hook takes its calls by
// POST).
func (e *Engine) HookCheck(h *Hook, q url.Values, header func(string) string) (*HookCheckAnswer, error) {
	switch {
	case q.Has("hub.mode"):
		if m := q.Get("hub.mode"); m != "subscribe" {
			return nil, task.FieldErrorf(task.CodeInvalidArgument, "hub.mode", "must be subscribe (Meta's check of a hook's URL), not %s", task.Quote(m))
		}
		ch, err := checkToken(q.Get("hub.challenge"), "hub.challenge", maxHookChallenge, false)
		if err != nil {
			return nil, err
		}
		if subtle.ConstantTimeCompare([]byte(q.Get("hub.verify_token")), []byte(h.Rule.HookToken)) != 1 {
			return nil, task.Errorf(task.CodeUnauthenticated, "hub.verify_token must be this hook's token, the last segment of its URL: give it to Meta as the Verify Token")
		}
		return &HookCheckAnswer{Text: ch}, nil
	case q.Has("crc_token"):
		return nil, task.FieldErrorf(task.CodeInvalidArgument, "crc_token", "errand does not answer X's CRC: the answer signs the caller's token with the hook's secret, "+
			"which would let anyone holding the hook's URL sign bodies with it; answer the CRC in a relay in front of the hook")
	case q.Has("validationToken"):
		return graphValidation(q.Get("validationToken"))
	case q.Has("challenge"):
		ch, err := checkToken(q.Get("challenge"), "challenge", maxHookChallenge, false)
		if err != nil {
			return nil, err
		}
		return &HookCheckAnswer{Text: ch}, nil
	case header(oktaChallengeHeader) != "":
		ch, err := checkToken(header(oktaChallengeHeader), oktaChallengeHeader, maxHookChallenge, false)
		if err != nil {
			return nil, err
		}
		return &HookCheckAnswer{Reply: errandapi.HookOktaVerification{Verification: ch}}, nil
	}
	return nil, task.FieldErrorf(task.CodeInvalidArgument, "hub.mode", "a GET of a hook answers only a sender's check of its URL: Meta's (hub.mode=subscribe "+
		"with hub.challenge and hub.verify_token), Dropbox's (challenge) or Okta's (the header "+oktaChallengeHeader+"); send the hook's calls with POST")
}

// IsHookCheck reports whether a POST of a hook is a sender's check of its
// URL rather than a call, by its query: Microsoft Graph's validationToken.
// HookCheck answers it.
func IsHookCheck(q url.Values) bool {
	return q.Has("validationToken")
}

// checkToken checks a challenge or token a sender's check of a URL sends,
// named field: 1–max printable ASCII characters, spaces among them only
// when spaces is set; else INVALID_ARGUMENT naming field.
func checkToken(v, field string, max int, spaces bool) (string, error) {
	ok := v != "" && len(v) <= max
	for _, c := range []byte(v) {
		if c < ' ' || c > '~' || c == ' ' && !spaces {
			ok = false
		}
	}
	if !ok {
		without := " without spaces"
		if spaces {
			without = ""
		}
		return "", task.FieldErrorf(task.CodeInvalidArgument, field, "must be 1–%d printable ASCII characters%s", max, without)
	}
	return v, nil
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
