package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"time"

	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/deliver"
	"github.com/errandhq/errand/internal/task"
)

// verifyMailgun checks the signature Mailgun puts in a webhook's body
// (errandapi.HookMailgun; see verifyHook): the hex HMAC-SHA256, keyed with
// the whole secret string (the HTTP webhook signing key), of the timestamp
// followed by the token, the timestamp within HookReplayWindow; a
// subaccount's call may match with its parent-signature instead. The
// signature does not cover the event, so the token names the task
// (errandapi.HookMessageID): a signature seen once adds one task at most,
// whatever event a replay of it carries.
func verifyMailgun(secret string, m *errandapi.MailgunSignature, now time.Time) error {
	if _, err := hookTime(m.Timestamp, "Mailgun's signature.timestamp", now); err != nil {
		return err
	}
	want := hex.EncodeToString(deliver.SignBody(secret, []byte(m.Timestamp+m.Token), sha256.New))
	if hexEqual(m.Signature, want) || (m.Parent != "" && hexEqual(m.Parent, want)) {
		return nil
	}
	return task.Errorf(task.CodeUnauthenticated, "Mailgun's signature does not match this hook's secret (the HTTP webhook signing key)")
}
