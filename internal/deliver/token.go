package deliver

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/errandhq/errand/internal/task"
)

// tokenLate is how long past the attempt's deadline its token still
// carries depth: a handler that outlives its deadline keeps its slot (and
// may still add) until the node stops waiting for it.
const tokenLate = 10 * 60 * 1000

// Token is what a delivery token says: the instance and task of the
// attempt it was made for, the task's depth, until when it holds, and the
// kind of target the attempt went to.
type Token struct {
	Instance string `json:"i"`
	Task     string `json:"t"`
	Depth    int    `json:"d"`
	Expires  int64  `json:"e"` // epoch ms
	// Kind is TokenWebhook for a webhook delivery's token, "" for a
	// function's.
	Kind string `json:"k,omitempty"`
}

// The Kinds of a delivery token other than a function attempt's.
const (
	// TokenWebhook is a webhook delivery's: the tasks added with it get
	// source "webhook".
	TokenWebhook = "webhook"
	// TokenLease is a pull lease's (SignLeaseToken): the tasks added with
	// it get source "lease".
	TokenLease = "lease"
)

// leaseTokenLate is how long past its lease's expiry at lease time a
// leased task's token holds by itself: extensions may keep a lease for
// longer than it was first taken for. Past it the token is still taken
// while its task's lease is held (engine.TaskAddFromDelivery).
const leaseTokenLate = 24 * 60 * 60 * 1000

// SignLeaseToken makes the delivery token of a task t just leased, of kind
// TokenLease (see SignToken), holding until a day past the lease's expiry.
func SignLeaseToken(t *task.Task, key string) string { return signToken(t, key, TokenLease) }

// SignToken makes the delivery token of attempt t to a function, signed
// with the instance's webhook key (so any node on the store can check it,
// and a rotation ends the tokens in flight). It is
// base64url(JSON of Token) "." base64url(HMAC-SHA256(key, "errand-delivery." + first part)).
// A webhook delivery's token (keySigner.appendToken) has the same form.
func SignToken(t *task.Task, key string) string { return signToken(t, key, "") }

// tokenSigners keeps the keyed HMAC states of the function attempts' and
// the leases' tokens, as a Webhook's signers keep its deliveries'.
var tokenSigners signers

// signToken makes t's token of kind, signed with key: written into one
// buffer with a keyed HMAC state kept for key (once an attempt, and once a
// leased task).
func signToken(t *task.Task, key, kind string) string {
	return string(tokenSigners.get(key).appendToken(make([]byte, 0, tokenCap(t)), t, kind))
}

// appendTokenJSON appends the JSON of t's Token of kind, byte for byte as
// json.Marshal encodes it, without its reflection (once an attempt). It
// expires tokenLate past the attempt's deadline, or a lease's
// leaseTokenLate past its expiry.
func appendTokenJSON(b []byte, t *task.Task, kind string) []byte {
	expires := t.DeadlineAt + tokenLate
	if kind == TokenLease {
		expires = t.LeaseExpiresAt + leaseTokenLate
	}
	b = append(b, `{"i":`...)
	b = appendString(b, t.InstanceID)
	b = append(b, `,"t":`...)
	b = appendString(b, t.ID)
	b = append(b, `,"d":`...)
	b = strconv.AppendInt(b, int64(t.Depth), 10)
	b = append(b, `,"e":`...)
	b = strconv.AppendInt(b, expires, 10)
	if kind != "" {
		b = append(b, `,"k":`...)
		b = appendString(b, kind)
	}
	return append(b, '}')
}

// VerifyToken checks a delivery token against the instance's id and key at
// now (epoch ms) and returns what it says. A token that is malformed,
// signed with another key, made for another instance or expired is
// INVALID_ARGUMENT naming field; an expired one is returned with that
// error, so that a caller may take it on other grounds (a lease's token
// whose lease is still held).
func VerifyToken(raw, instanceID, key string, now int64, field string) (*Token, error) {
	bad := func(why string) error {
		return task.FieldErrorf(task.CodeInvalidArgument, field, "is not a valid delivery token: %s", why)
	}
	body, sig, ok := strings.Cut(raw, ".")
	if !ok || len(raw) > 1024 {
		return nil, bad("malformed")
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(got, tokenMAC(key, body)) {
		return nil, bad("its signature does not match this instance's key (rotated since?)")
	}
	b, err := base64.RawURLEncoding.DecodeString(body)
	if err != nil {
		return nil, bad("malformed")
	}
	var tok Token
	if err := json.Unmarshal(b, &tok); err != nil {
		return nil, bad("malformed")
	}
	switch {
	case tok.Instance != instanceID:
		return nil, bad("it was made for another instance")
	case tok.Depth < 0:
		return nil, bad("malformed")
	case now > tok.Expires:
		return &tok, bad("it expired with its attempt")
	}
	return &tok, nil
}

func tokenMAC(key, body string) []byte {
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte("errand-delivery."))
	m.Write([]byte(body))
	return m.Sum(nil)
}
