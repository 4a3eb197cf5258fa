package engine

import (
	"crypto/hmac"
	"strings"
	"time"

	"github.com/errandhq/errand/internal/deliver"
	"github.com/errandhq/errand/internal/task"
)

// The headers of HubSpot's v3 request signature.
const (
	hubSpotSignature = "X-HubSpot-Signature-v3"
	hubSpotTimestamp = "X-HubSpot-Request-Timestamp"
)

// hubSpotURIDecoder undoes the escapes HubSpot decodes in the URI it
// signs (its table of reserved characters), so a URL the call carries
// with any of them escaped is signed as HubSpot signed it.
var hubSpotURIDecoder = strings.NewReplacer(
	"%3A", ":", "%2F", "/", "%3F", "?", "%40", "@", "%21", "!", "%24", "$",
	"%27", "'", "%28", "(", "%29", ")", "%2A", "*", "%2C", ",", "%3B", ";",
	"%3a", ":", "%2f", "/", "%3f", "?", "%2a", "*", "%2c", ",", "%3b", ";",
)

// verifyHubSpot checks HubSpot's X-HubSpot-Signature-v3 (see verifyHook):
// the base64 HMAC-SHA256, keyed with the whole secret string (the app's
// client secret), of "POST", the URL HubSpot called, the body and
// X-HubSpot-Request-Timestamp (milliseconds since the epoch, within
// HookReplayWindow), checked against each of HookCall.URLs as Twilio's
// is: behind a proxy, the URL HubSpot called is not the node's own.
func verifyHubSpot(secret string, c HookCall, now time.Time) error {
	ms, err := hookTimeMillis(c.Header(hubSpotTimestamp), hubSpotTimestamp, now)
	if err != nil {
		return err
	}
	sig := c.Header(hubSpotSignature)
	for _, u := range c.urls() {
		if hmac.Equal([]byte(deliver.SignHubSpot(secret, hubSpotURIDecoder.Replace(u), c.Body, ms)), []byte(sig)) {
			return nil
		}
	}
	return task.Errorf(task.CodeUnauthenticated, "%s does not match this hook's secret and URL "+
		"(HubSpot signs the URL it called: behind a proxy, pass on Host or X-Forwarded-Host and X-Forwarded-Proto)", hubSpotSignature)
}
