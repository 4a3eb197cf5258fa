package engine

import (
	"crypto/ecdsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"

	"time"

	"github.com/errandhq/errand/internal/task"
)

// The headers of SendGrid's signed Event Webhook.
const (
	sendGridSignature = "X-Twilio-Email-Event-Webhook-Signature"
	sendGridTimestamp = "X-Twilio-Email-Event-Webhook-Timestamp"
)

// verifySendGrid checks SendGrid's signed Event Webhook (see verifyHook):
// secret is SendGrid's verification key, the base64 of an ECDSA public
// key's DER (as its Mail Settings show it); the signature, base64 of its
// ASN.1, signs the SHA-256 of the timestamp header's text followed by the
// body, the timestamp within HookReplayWindow.
func verifySendGrid(secret string, c HookCall, now time.Time) error {
	ts := c.Header(sendGridTimestamp)
	if _, err := hookTime(ts, sendGridTimestamp, now); err != nil {
		return err
	}
	der, err := base64.StdEncoding.DecodeString(secret)
	if err != nil {
		return task.Errorf(task.CodeUnauthenticated, "this hook's secret is not a SendGrid verification key (the base64 public key its Mail Settings show)")
	}
	k, err := x509.ParsePKIXPublicKey(der)
	pub, ok := k.(*ecdsa.PublicKey)
	if err != nil || !ok {
		return task.Errorf(task.CodeUnauthenticated, "this hook's secret is not a SendGrid verification key (the base64 public key its Mail Settings show)")
	}
	sig, err := base64.StdEncoding.DecodeString(c.Header(sendGridSignature))
	h := sha256.New()
	h.Write([]byte(ts))
	h.Write(c.Body)
	if err != nil || !ecdsa.VerifyASN1(pub, h.Sum(nil), sig) {
		return task.Errorf(task.CodeUnauthenticated, "%s does not match this hook's verification key", sendGridSignature)
	}
	return nil
}
