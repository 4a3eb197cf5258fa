package engine

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"

	"github.com/errandhq/errand/internal/deliver"
	"github.com/errandhq/errand/internal/task"
)

// squareSignature is the header of Square's webhook signature.
const squareSignature = "X-Square-Hmacsha256-Signature"

// verifySquare checks Square's x-square-hmacsha256-signature (see
// verifyHook): the base64 HMAC-SHA256, keyed with the whole secret string
// (the subscription's signature key), of the notification URL Square
// called followed by the body, checked against each of HookCall.URLs as
// Twilio's and HubSpot's are: behind a proxy, the URL Square called is
// not the node's own. No time is signed.
func verifySquare(secret string, c HookCall) error {
	sig := []byte(c.Header(squareSignature))
	for _, u := range c.urls() {
		want := base64.StdEncoding.EncodeToString(deliver.SignBody(secret, append([]byte(u), c.Body...), sha256.New))
		if hmac.Equal(sig, []byte(want)) {
			return nil
		}
	}
	return task.Errorf(task.CodeUnauthenticated, "%s does not match this hook's secret and URL "+
		"(Square signs the notification URL it called: behind a proxy, pass on Host or X-Forwarded-Host and X-Forwarded-Proto)", squareSignature)
}
