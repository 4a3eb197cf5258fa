package httpapi_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/errandhq/errand/internal/auth"
	"github.com/errandhq/errand/internal/engine"
)

// TestChannelAuth: in serve mode a subscriber needs read on the instance,
// by API key or by a subscribe token minted with that grant for one
// channel; a token is refused on another channel (403), on another
// instance (404, as a missing one), once expired on the fake clock, after
// the instance's key rotation or its minting key's revocation (401), and
// malformed, signed with the webhook key alone, as a webhook receiver
// could, or minted in dev, naming no key (401); a foreign organization's instance answers as a missing
// one. A connection a token opened outlives the token's expiry and the
// rotation, but not the revocation of its key.
func TestChannelAuth(t *testing.T) {
	s := newFixture(t, "acme")
	reader := s.key("acme", "read:jobs")
	otherOnly := s.key("acme", "read:other")
	globex := s.key("globex", "full:*")
	s.as(globex).do("POST", "/v1/instances", `{"name":"jobs"}`).want(t, 201, "")
	base := s.srv.URL + "/v1/channels/jobs/room-1"
	// A refusal answers at once; a stream that opens instead (a refusal
	// missed) ends at eventWait and fails the status check.
	get := func(rawURL string, authz string) res {
		ctx, cancel := context.WithTimeout(context.Background(), eventWait)
		t.Cleanup(cancel)
		req, _ := http.NewRequestWithContext(ctx, "GET", rawURL, nil)
		if authz != "" {
			req.Header.Set("Authorization", authz)
		}
		return s.send(req)
	}

	// By key.
	byKey := subscribeSSE(t, s.client, base, map[string]string{"Authorization": "Bearer " + reader})
	byKey.ready()
	get(base, "").want(t, 401, "UNAUTHENTICATED")
	get(base, "Bearer "+otherOnly).want(t, 404, "NOT_FOUND")
	// acme's other, which globex does not have, answers as missing.
	get(s.srv.URL+"/v1/channels/other/room-1", "Bearer "+globex).want(t, 404, "NOT_FOUND")
	s.as(otherOnly).do("POST", "/v1/channels/jobs/room-1/token", nil).want(t, 404, "NOT_FOUND")
	s.as(globex).do("POST", "/v1/channels/other/room-1/token", nil).want(t, 404, "NOT_FOUND")

	// By token.
	r := s.as(reader).do("POST", "/v1/channels/jobs/room-1/token", nil).want(t, 201, "")
	tok, _ := r.body["token"].(string)
	exp, _ := r.body["expiresAt"].(float64)
	if !strings.HasPrefix(tok, "ect_") || int64(exp) != s.clock.Now().Add(auth.ChannelTokenTTL).UnixMilli() {
		t.Fatalf("token answer %s", r.raw)
	}
	q := "?token=" + url.QueryEscape(tok)
	byToken := subscribeSSE(t, s.client, base+q, nil)
	byToken.ready()
	if byToken.resp.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Error("a token's stream is not readable from other origins")
	}
	if byKey.resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Error("a key's stream is readable from other origins")
	}
	get(s.srv.URL+"/v1/channels/jobs/room-2"+q, "").want(t, 403, "PERMISSION_DENIED")
	get(s.srv.URL+"/v1/channels/other/room-1"+q, "").want(t, 404, "NOT_FOUND")
	for _, bad := range []string{"", "x", "ect_", "ect_e30.", tampered(tok), "ect_" + strings.Repeat("a", 3000), strings.TrimPrefix(tok, "ect_")} {
		get(base+"?token="+url.QueryEscape(bad), "").want(t, 401, "UNAUTHENTICATED")
	}
	// A token is only for the subscribe route.
	get(s.srv.URL+"/v1/tasks/jobs/queues"+q, "").want(t, 401, "UNAUTHENTICATED")
	s.header("").do("POST", "/v1/channels/jobs/room-1/token"+q, nil).want(t, 401, "UNAUTHENTICATED")

	// A WebSocket opened with a token may come from any origin (a page
	// of another site); one opened with a key only from the API's own.
	wsBase := "ws" + strings.TrimPrefix(base, "http")
	ws := subscribeWS(t, wsBase+q, http.Header{"Origin": {"https://app.example"}})
	if e := ws.must(); e.Type != "ready" {
		t.Fatalf("token WebSocket: %+v", e)
	}
	_, resp, err := websocket.Dial(t.Context(), wsBase, &websocket.DialOptions{HTTPHeader: http.Header{
		"Origin": {"https://app.example"}, "Authorization": {"Bearer " + reader}}})
	if err == nil || resp == nil || resp.StatusCode != 403 {
		t.Fatalf("a key's WebSocket from another origin: %v", err)
	}
	// The refusal is errand's, in JSON.
	upgrade, _ := http.NewRequest("GET", base, nil)
	asUpgrade(upgrade, "https://app.example")
	upgrade.Header.Set("Authorization", "Bearer "+reader)
	refused := s.send(upgrade).want(t, 403, "PERMISSION_DENIED")
	if !strings.Contains(refused.message(), "subscribe token") {
		t.Fatalf("refusal: %s", refused.message())
	}

	// Expiry, on the fake clock.
	s.clock.Advance(auth.ChannelTokenTTL)
	subscribeSSE(t, s.client, base+q, nil).ready() // at the expiry, still valid
	s.clock.Advance(time.Millisecond)
	if m := get(base+q, "").want(t, 401, "UNAUTHENTICATED").message(); !strings.Contains(m, "expired") {
		t.Fatalf("expired token: %q", m)
	}
	// Rotation of the instance's key ends the tokens out.
	r = s.as(reader).do("POST", "/v1/channels/jobs/room-1/token", nil).want(t, 201, "")
	fresh := "?token=" + url.QueryEscape(r.body["token"].(string))
	subscribeSSE(t, s.client, base+fresh, nil).ready()
	s.as(s.admin).do("POST", "/v1/tasks/jobs/settings/webhook-key/rotate", nil).want(t, 200, "")
	get(base+fresh, "").want(t, 401, "UNAUTHENTICATED")

	// A webhook receiver holds the webhook key, not the minting key's
	// digest: a token it signs, for years, is refused.
	whk := s.as(s.admin).do("GET", "/v1/tasks/jobs/settings/webhook-key", nil).want(t, 200, "").body["webhookKey"].(string)
	claims, _ := json.Marshal(map[string]any{"o": "acme", "n": "jobs", "i": tokenClaims(t, fresh)["i"], "k": tokenClaims(t, fresh)["k"],
		"c": "room-1", "e": s.clock.Now().Add(24 * 365 * time.Hour).UnixMilli()})
	body := base64.RawURLEncoding.EncodeToString(claims)
	m := hmac.New(sha256.New, []byte(whk))
	m.Write([]byte("errand-channel." + body))
	forged := "ect_" + body + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
	get(base+"?token="+url.QueryEscape(forged), "").want(t, 401, "UNAUTHENTICATED")

	// A token minted in dev names no key (dev checks none): serve, on the
	// same store, refuses it.
	devTok, _, err := s.eng.ChannelToken(t.Context(), engine.ChannelRef{Org: "acme", Instance: "jobs", Channel: "room-1"}, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	get(base+"?token="+url.QueryEscape(devTok), "").want(t, 401, "UNAUTHENTICATED")

	// The connection the first token opened is still live past the
	// token's expiry and the rotation (checked again a second on).
	inst, err := s.eng.Instance(t.Context(), "acme", "jobs")
	if err != nil {
		t.Fatal(err)
	}
	s.clock.Advance(time.Second)
	s.appendDirect(inst.ID, "room-1", `{"n":1}`, true)
	for _, st := range []*sseStream{byToken, byKey} {
		if got := st.messages(1); got[0] != `1:{"n":1}` {
			t.Fatalf("after the expiry: %v", got)
		}
	}

	// Revoking the key that minted a token ends it, and the open
	// streams of the key and of its tokens: the next event (a second on)
	// is closing, at the last message they had.
	r = s.as(reader).do("POST", "/v1/channels/jobs/room-1/token", nil).want(t, 201, "")
	minted := "?token=" + url.QueryEscape(r.body["token"].(string))
	subscribeSSE(t, s.client, base+minted, nil).ready()
	s.revoke(reader)
	if m := get(base+minted, "").want(t, 401, "UNAUTHENTICATED").message(); !strings.Contains(m, "revoked") {
		t.Fatalf("a revoked key's token: %q", m)
	}
	s.clock.Advance(time.Second)
	s.appendDirect(inst.ID, "room-1", `{"n":2}`, true)
	for _, st := range []*sseStream{byToken, byKey} {
		if ev := st.next(); ev.event != "closing" || ev.id != "1" || !strings.Contains(ev.data, "revoked") {
			t.Fatalf("a revoked key's open stream: %+v, want closing at 1", ev)
		}
		if !st.ended() {
			t.Fatal("a revoked key's stream did not end")
		}
	}
}

// tokenClaims decodes the claims of a subscribe token passed as "?token=…".
func tokenClaims(t *testing.T, q string) map[string]any {
	t.Helper()
	tok, err := url.QueryUnescape(strings.TrimPrefix(q, "?token="))
	if err != nil {
		t.Fatal(err)
	}
	body, _, _ := strings.Cut(strings.TrimPrefix(tok, "ect_"), ".")
	b, err := base64.RawURLEncoding.DecodeString(body)
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestSecretsAreNotCached: the answers that hold a secret — the webhook
// key, read or rotated, and a subscribe token — say no cache may keep
// them.
func TestSecretsAreNotCached(t *testing.T) {
	s := newFixture(t, "acme")
	a := s.as(s.admin)
	for _, c := range []struct {
		method, path string
		status       int
	}{
		{"GET", "/v1/tasks/jobs/settings/webhook-key", 200},
		{"POST", "/v1/tasks/jobs/settings/webhook-key/rotate", 200},
		{"POST", "/v1/channels/jobs/room-1/token", 201},
	} {
		r, h := a.doH(c.method, c.path, nil)
		r.want(t, c.status, "")
		if got := h.Get("Cache-Control"); got != "no-store" {
			t.Errorf("%s %s: Cache-Control %q, want no-store", c.method, c.path, got)
		}
	}
}
