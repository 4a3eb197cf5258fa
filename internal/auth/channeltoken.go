package auth

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/errandhq/errand/internal/clock"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// ChannelTokenTTL is how long a subscribe token admits new connections: a
// browser's EventSource, which cannot send an Authorization header, passes
// it as ?token=. A connection it opened lives on past the expiry; a
// reconnect after it needs a fresh token. Five minutes covers a page load
// and EventSource's reconnects after a blip, and leaves a token that
// leaked into a log or a Referer of little use.
const ChannelTokenTTL = 5 * time.Minute

// channelTokenPrefix marks a subscribe token, so it is never mistaken for
// an API key.
const channelTokenPrefix = "ect_"

// ChannelClaims is what a subscribe token says: the organization and
// instance (by name and id) whose read grant minted it, the API key that
// minted it (its public id; "" in dev, where tokens are not checked), the
// one channel it admits, and until when (epoch ms).
type ChannelClaims struct {
	Org        string `json:"o"`
	Instance   string `json:"n"`
	InstanceID string `json:"i"`
	KeyID      string `json:"k,omitempty"`
	Channel    string `json:"c"`
	Expires    int64  `json:"e"`
}

// SignChannelToken makes the subscribe token of c:
// "ect_" base64url(JSON of c) "." base64url(HMAC-SHA256(channelTokenKey, "errand-channel." + first part)).
// keyDigest is the stored digest of the API key that mints it (nil in
// dev) and webhookKey the instance's signing key.
func SignChannelToken(c *ChannelClaims, keyDigest []byte, webhookKey string) string {
	b, _ := json.Marshal(c)
	body := base64.RawURLEncoding.EncodeToString(b)
	return channelTokenPrefix + body + "." + base64.RawURLEncoding.EncodeToString(channelTokenMAC(channelTokenKey(keyDigest, webhookKey), body))
}

// channelTokenKey is what a subscribe token is signed with: the minting
// API key's digest, which only the store holds, and the instance's webhook
// key. The webhook key alone would not do: every webhook receiver holds
// it, and could sign a token for any channel with any expiry. With both,
// every node on the store can check a token, and rotating the webhook key
// or revoking the API key ends the tokens out.
func channelTokenKey(keyDigest []byte, webhookKey string) []byte {
	m := hmac.New(sha256.New, keyDigest)
	m.Write([]byte("errand-channel-key."))
	m.Write([]byte(webhookKey))
	return m.Sum(nil)
}

func channelTokenMAC(key []byte, body string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("errand-channel."))
	m.Write([]byte(body))
	return m.Sum(nil)
}

// ErrChannelToken is the answer for a subscribe token that is malformed,
// not signed as its instance and key would sign it, or made for an
// instance or by a key since deleted.
var ErrChannelToken = task.Errorf(task.CodeUnauthenticated, "the subscribe token is not valid: mint one with POST /v1/channels/{instance}/{channel}/token, or send Authorization: Bearer KEY")

// ErrChannelTokenExpired is the answer for a subscribe token past its
// expiry.
var ErrChannelTokenExpired = task.Errorf(task.CodeUnauthenticated, "the subscribe token has expired: mint a new one with POST /v1/channels/{instance}/{channel}/token")

// ErrChannelTokenRevoked is the answer for a subscribe token whose API
// key was revoked since it minted it.
var ErrChannelTokenRevoked = task.Errorf(task.CodeUnauthenticated, "the API key that minted the subscribe token has been revoked")

// TokenStore finds what a subscribe token is checked against: its
// instance by (org, name) and the API key that minted it. The store.
type TokenStore interface {
	InstanceGet(ctx context.Context, ref store.InstanceRef) (*task.Instance, error)
	KeyGet(ctx context.Context, ref store.KeyRef) (*store.APIKey, error)
}

// ChannelTokens authenticates subscribe tokens passed as ?token=. The
// caller it makes holds read on the token's instance and may subscribe to
// the token's channel only.
type ChannelTokens struct {
	Store TokenStore
	Clock clock.Clock
}

// Authenticate checks the request's ?token= and returns its caller, or an
// UNAUTHENTICATED error for a token that is missing, malformed, forged,
// expired, minted in dev, or whose instance or key is gone, was made again
// or revoked since.
func (t ChannelTokens) Authenticate(r *http.Request) (*Principal, error) {
	raw := r.URL.Query().Get("token")
	rest, ok := strings.CutPrefix(raw, channelTokenPrefix)
	body, sig, ok2 := strings.Cut(rest, ".")
	if !ok || !ok2 || len(raw) > 2048 {
		return nil, ErrChannelToken
	}
	b, err := base64.RawURLEncoding.DecodeString(body)
	if err != nil {
		return nil, ErrChannelToken
	}
	var c ChannelClaims
	if err := json.Unmarshal(b, &c); err != nil || ValidateOrg(c.Org) != nil || task.ValidateQueueName(c.Instance, "instance") != nil || c.KeyID == "" {
		return nil, ErrChannelToken
	}
	inst, err := t.Store.InstanceGet(r.Context(), store.InstanceRef{Org: c.Org, Name: c.Instance})
	if task.IsCode(err, task.CodeNotFound) {
		return nil, ErrChannelToken
	}
	if err != nil {
		return nil, err
	}
	key, err := t.Store.KeyGet(r.Context(), store.KeyRef{Org: c.Org, ID: c.KeyID})
	if task.IsCode(err, task.CodeNotFound) {
		return nil, ErrChannelToken
	}
	if err != nil {
		return nil, err
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(got, channelTokenMAC(channelTokenKey(key.Digest, inst.WebhookKey), body)) || inst.ID != c.InstanceID {
		return nil, ErrChannelToken
	}
	// A key's grants never change, and it held read on the instance when
	// it minted the token; a revoked key's tokens end with it.
	if key.Revoked() {
		return nil, ErrChannelTokenRevoked
	}
	if t.Clock.Now().UnixMilli() > c.Expires {
		return nil, ErrChannelTokenExpired
	}
	return &Principal{Org: c.Org, Grants: map[string]Role{c.Instance: RoleRead}, Channel: c.Channel, KeyID: c.KeyID, KeyDigest: key.Digest}, nil
}

// KeyOrChannelToken authenticates the subscribe route: a request with
// ?token= and no Authorization header is checked as a subscribe token;
// any other by Keys. Under the emulator's authenticator (auth.Dev) the
// token is not looked at: dev needs none.
type KeyOrChannelToken struct {
	Keys   Authenticator
	Tokens ChannelTokens
}

// Authenticate implements Authenticator.
func (a KeyOrChannelToken) Authenticate(r *http.Request) (*Principal, error) {
	if !r.URL.Query().Has("token") || len(r.Header.Values("Authorization")) > 0 {
		return a.Keys.Authenticate(r)
	}
	if p, err := a.Keys.Authenticate(r); err == nil && p.Dev {
		return p, nil
	}
	return a.Tokens.Authenticate(r)
}
