package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/errandhq/errand/internal/deliver"
	"github.com/errandhq/errand/internal/task"
)

// The headers of Twitch's EventSub webhooks.
const (
	twitchSignature = "Twitch-Eventsub-Message-Signature"
	twitchID        = "Twitch-Eventsub-Message-Id"
	twitchTimestamp = "Twitch-Eventsub-Message-Timestamp"
	twitchType      = "Twitch-Eventsub-Message-Type"
)

// twitchWindow is how old a Twitch message's timestamp may be: Twitch asks
// receivers to refuse one older than 10 minutes.
const twitchWindow = 10 * time.Minute

// verifyTwitch checks a Twitch EventSub call (see verifyHook):
// Twitch-Eventsub-Message-Signature is "sha256=" and the hex HMAC-SHA256,
// keyed with the whole secret string (the subscription's secret), of the
// message id, the timestamp (RFC 3339) and the body, run together; the
// timestamp within twitchWindow of now.
func verifyTwitch(secret string, c HookCall, now time.Time) error {
	ts := c.Header(twitchTimestamp)
	at, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return task.Errorf(task.CodeUnauthenticated, "%s must be an RFC 3339 time", twitchTimestamp)
	}
	if d := now.Sub(at); d > twitchWindow || d < -twitchWindow {
		return task.Errorf(task.CodeUnauthenticated, "%s is more than 10 minutes from now: refused as a replay", twitchTimestamp)
	}
	id := c.Header(twitchID)
	want := "sha256=" + hex.EncodeToString(deliver.SignBodyAfter(secret, id+ts, c.Body, sha256.New))
	if !hexEqual(c.Header(twitchSignature), want) {
		return task.Errorf(task.CodeUnauthenticated, "%s does not match this hook's secret (the subscription's secret)", twitchSignature)
	}
	return nil
}

// twitchChallenge is the challenge of a signed Twitch call that verifies
// a subscription's callback (Twitch-Eventsub-Message-Type:
// webhook_callback_verification), which must be answered with it as plain
// text, adding nothing; "" for any other call (a notification, a
// revocation: each is added).
func twitchChallenge(c HookCall) string {
	if c.Header(twitchType) != "webhook_callback_verification" {
		return ""
	}
	var v struct {
		Challenge string `json:"challenge"`
	}
	if json.Unmarshal(c.Body, &v) != nil {
		return ""
	}
	return v.Challenge
}
