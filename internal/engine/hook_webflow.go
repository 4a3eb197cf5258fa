package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"time"

	"github.com/errandhq/errand/internal/deliver"
	"github.com/errandhq/errand/internal/task"
)

// The headers of Webflow's signed webhooks.
const (
	webflowSignature = "X-Webflow-Signature"
	webflowTimestamp = "X-Webflow-Timestamp"
)

// verifyWebflow checks Webflow's X-Webflow-Signature (see verifyHook): the
// hex HMAC-SHA256, keyed with the whole secret string (the webhook's or
// the app's client secret), of X-Webflow-Timestamp (milliseconds since the
// epoch, within HookReplayWindow), ":" and the body.
func verifyWebflow(secret string, c HookCall, now time.Time) error {
	ts := c.Header(webflowTimestamp)
	if _, err := hookTimeMillis(ts, webflowTimestamp, now); err != nil {
		return err
	}
	want := hex.EncodeToString(deliver.SignBodyAfter(secret, ts+":", c.Body, sha256.New))
	if !hexEqual(c.Header(webflowSignature), want) {
		return task.Errorf(task.CodeUnauthenticated, "%s does not match this hook's secret", webflowSignature)
	}
	return nil
}
