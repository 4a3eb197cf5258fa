package engine

import (
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/task"
)

// The headers of Discord's signed calls, to an interactions endpoint and
// to a webhook events URL alike.
const (
	discordSignature = "X-Signature-Ed25519"
	discordTimestamp = "X-Signature-Timestamp"
)

// verifyDiscord checks a Discord call (see verifyHook): secret is the
// application's public key, the 64 hex digits its Developer Portal shows
// as Public Key; X-Signature-Ed25519 is the hex Ed25519 signature of
// X-Signature-Timestamp's text (seconds) followed by the body, the
// timestamp within HookReplayWindow.
func verifyDiscord(secret string, c HookCall, now time.Time) error {
	ts := c.Header(discordTimestamp)
	if _, err := hookTime(ts, discordTimestamp, now); err != nil {
		return err
	}
	pub, err := hex.DecodeString(secret)
	if err != nil || len(pub) != ed25519.PublicKeySize {
		return task.Errorf(task.CodeUnauthenticated, "this hook's secret is not a Discord public key (the 64 hex digits of the application's Public Key)")
	}
	sig, err := hex.DecodeString(c.Header(discordSignature))
	msg := make([]byte, 0, len(ts)+len(c.Body))
	msg = append(append(msg, ts...), c.Body...)
	if err != nil || len(sig) != ed25519.SignatureSize || !ed25519.Verify(pub, msg, sig) {
		return task.Errorf(task.CodeUnauthenticated, "%s does not match this hook's public key", discordSignature)
	}
	return nil
}

// Discord's interaction types (its interaction object's type) and the
// types of the answers a hook gives them.
const (
	discordPing         = 1
	discordCommand      = 2
	discordComponent    = 3
	discordAutocomplete = 4
	discordModalSubmit  = 5

	discordPong            = 1
	discordDeferredMessage = 5
	discordDeferredUpdate  = 6
	discordChoices         = 8
)

// discordCall is how a hook answers a signed Discord call, and whether it
// adds a task. Discord waits three seconds for an answer of its own kind,
// and shows its user an error (an interaction) or stops sending (a
// webhook events URL) on any other:
//   - an interaction (its body carries the interaction's token): a PING
//     is answered with a PONG and adds nothing (Discord's check of the
//     URL); an application command or a modal's submit is added and
//     answered with a deferred message ("thinking…"), and a message
//     component's use with a deferred update, which the task completes
//     through Discord's API with the interaction's token (valid for 15
//     minutes); an autocomplete adds nothing and is answered with no
//     choices, as its choices must be the answer itself; another type is
//     added and answered as any call (202).
//   - a webhook event (no token): a PING (type 0) adds nothing, an event
//     (type 1) is added; both are answered 204 with no body, as Discord
//     asks.
//
// A body that is not such JSON is added and answered as any call.
func discordCall(body []byte) (add bool, answer *HookAdded) {
	var v struct {
		Type  *int   `json:"type"`
		Token string `json:"token"`
	}
	if json.Unmarshal(body, &v) != nil || v.Type == nil {
		return true, nil
	}
	if v.Token == "" { // a webhook event
		return *v.Type != 0, &HookAdded{Empty: true}
	}
	switch *v.Type {
	case discordPing:
		return false, &HookAdded{Reply: errandapi.HookDiscordResponse{Type: discordPong}}
	case discordCommand, discordModalSubmit:
		return true, &HookAdded{Answer: errandapi.HookDiscordResponse{Type: discordDeferredMessage}}
	case discordComponent:
		return true, &HookAdded{Answer: errandapi.HookDiscordResponse{Type: discordDeferredUpdate}}
	case discordAutocomplete:
		return false, &HookAdded{Reply: errandapi.HookDiscordResponse{Type: discordChoices, Data: &errandapi.HookDiscordResponseData{Choices: []struct{}{}}}}
	}
	return true, nil
}
