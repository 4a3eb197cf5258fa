package httpapi_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/errandhq/errand/internal/deliver"
)

// TestHookMeta: Meta's Webhooks (WhatsApp, Messenger, Instagram) check a
// callback URL with a GET — hub.mode=subscribe, a challenge to echo, and
// the verify token, which must be the hook's token — and sign their
// notifications as GitHub does (X-Hub-Signature-256 with the app's
// secret), taking only a 200 as received: a signed notification is added
// and answered 200, while GitHub's calls keep their 202. A GET that is no
// such check is 400 naming the parameter, a wrong verify token 401, an
// unknown hook 404; none adds anything.
func TestHookMeta(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.do("POST", "/v1/tasks/jobs/queues", `{"name":"out","mode":"pull"}`).want(t, 201, "")
	secret := "6c2a0e3f5b1d4a7e9c8b0f2d4e6a8c1b"
	path := b.hookRule(t, secret)
	token := path[strings.LastIndex(path, "/")+1:]
	get := func(q url.Values) res {
		t.Helper()
		req, _ := http.NewRequest("GET", b.srv.URL+path+"?"+q.Encode(), nil)
		return b.send(req)
	}
	check := url.Values{"hub.mode": {"subscribe"}, "hub.challenge": {"1158201444"}, "hub.verify_token": {token}}
	r := get(check).want(t, 200, "")
	if string(r.raw) != "1158201444" || r.header.Get("Content-Type") != "text/plain; charset=utf-8" || r.header.Get("X-Content-Type-Options") != "nosniff" {
		t.Fatalf("the check answered %q (%s, %s)", r.raw, r.header.Get("Content-Type"), r.header.Get("X-Content-Type-Options"))
	}
	for _, c := range []struct {
		change      func(q url.Values)
		status      int
		code, field string
	}{
		{func(q url.Values) { q.Set("hub.verify_token", "meatyhamhock") }, 401, "UNAUTHENTICATED", ""},
		{func(q url.Values) { q.Del("hub.verify_token") }, 401, "UNAUTHENTICATED", ""},
		{func(q url.Values) { q.Del("hub.mode") }, 400, "INVALID_ARGUMENT", "hub.mode"},
		{func(q url.Values) { q.Set("hub.mode", "unsubscribe") }, 400, "INVALID_ARGUMENT", "hub.mode"},
		{func(q url.Values) { q.Del("hub.challenge") }, 400, "INVALID_ARGUMENT", "hub.challenge"},
		{func(q url.Values) { q.Set("hub.challenge", "<script>alert(1)</script> x") }, 400, "INVALID_ARGUMENT", "hub.challenge"},
		{func(q url.Values) { q.Set("hub.challenge", strings.Repeat("9", 257)) }, 400, "INVALID_ARGUMENT", "hub.challenge"},
	} {
		q := url.Values{}
		for k, v := range check {
			q[k] = v
		}
		c.change(q)
		r := get(q).want(t, c.status, c.code)
		if c.field != "" {
			r.names(t, c.field)
		}
		if c.status == 401 && !strings.Contains(r.message(), "hook's token") {
			t.Errorf("a wrong verify token: %s", r.message())
		}
	}
	b.send(mustRequest(t, "GET", b.srv.URL+"/v1/hooks/jobs/hk_00000000000000000000000000000000?"+check.Encode())).want(t, 404, "NOT_FOUND")

	// A notification, signed with the app's secret: added, answered 200.
	note := []byte(`{"object":"whatsapp_business_account","entry":[{"id":"102290129340398","changes":[{"field":"messages","value":{"messages":[{"id":"wamid.1","text":{"body":"hi"}}]}}]}]}`)
	added := b.hookCall(path, note, map[string]string{"Content-Type": "application/json", "X-Hub-Signature-256": deliver.SignGitHub(secret, note)}).want(t, 200, "")
	if id, _ := added.body["id"].(string); id == "" || added.body["duplicate"] != false {
		t.Fatalf("the notification answered %s", added.raw)
	}
	b.hookCall(path, note, map[string]string{"X-Hub-Signature-256": deliver.SignGitHub("another-secret-of-the-app", note)}).want(t, 401, "UNAUTHENTICATED")
	// GitHub's call of the same shape, with its event header, is GitHub's: 202.
	b.hookCall(path, note, map[string]string{"X-GitHub-Event": "push", "X-Hub-Signature-256": deliver.SignGitHub(secret, note)}).want(t, 202, "")
	if n := len(b.do("GET", "/v1/tasks/jobs/queues/out/tasks", nil).want(t, 200, "").list("tasks")); n != 2 {
		t.Fatalf("%d tasks, want 2 (the checks add none)", n)
	}
}

// mustRequest is http.NewRequest for a request the test builds whole.
func mustRequest(t *testing.T, method, url string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// TestHookDropboxAndX: Dropbox checks a hook's URL with a GET echoing its
// challenge; X's CRC (a GET with crc_token, whose answer would be the
// token's HMAC-SHA256 keyed with the hook's secret: a signing oracle for
// whoever holds the URL) is refused, 400 naming crc_token, and signs
// nothing. Both sign their notifications with the app's secret (Dropbox's
// X-Dropbox-Signature in hex, X's X-Twitter-Webhooks-Signature "sha256="
// and base64) and take only a 200 as received. A GET that is no sender's
// check, or an unprintable challenge, is 400 naming the parameter; a wrong
// signature 401; nothing is added but the signed notifications.
func TestHookDropboxAndX(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.do("POST", "/v1/tasks/jobs/queues", `{"name":"out","mode":"pull"}`).want(t, 201, "")
	secret := "app-secret-of-the-dropbox-and-x-app"
	path := b.hookRule(t, secret)
	get := func(path string, q url.Values) res {
		t.Helper()
		return b.send(mustRequest(t, "GET", b.srv.URL+path+"?"+q.Encode()))
	}
	mac := func(msg string) []byte {
		m := hmac.New(sha256.New, []byte(secret))
		m.Write([]byte(msg))
		return m.Sum(nil)
	}

	r := get(path, url.Values{"challenge": {"aBc123-_x"}}).want(t, 200, "")
	if string(r.raw) != "aBc123-_x" || r.header.Get("X-Content-Type-Options") != "nosniff" || r.header.Get("Content-Type") != "text/plain; charset=utf-8" {
		t.Fatalf("Dropbox's check answered %q (%v)", r.raw, r.header)
	}
	get(path, url.Values{"challenge": {"a b"}}).want(t, 400, "INVALID_ARGUMENT").names(t, "challenge")
	// X's CRC would sign the caller's string: refused, and what it would
	// have signed is no signature the hook gives away.
	crc := `{"id":1}`
	r = get(path, url.Values{"crc_token": {crc}, "nonce": {"MTUxMjAx"}}).want(t, 400, "INVALID_ARGUMENT").names(t, "crc_token")
	if sig := base64.StdEncoding.EncodeToString(mac(crc)); strings.Contains(string(r.raw), sig) || !strings.Contains(r.message(), "relay") {
		t.Fatalf("X's CRC answered %s", r.raw)
	}
	if msg := get(path, url.Values{}).want(t, 400, "INVALID_ARGUMENT").names(t, "hub.mode").message(); !strings.Contains(msg, "challenge") || !strings.Contains(msg, "POST") {
		t.Fatalf("a bare GET: %s", msg)
	}

	// Their notifications, signed: added, answered 200.
	body := []byte(`{"list_folder":{"accounts":["dbid:AAH4f99T0taONIb-OurWxbNQ6ywGRopQngc"]},"delta":{"users":[12345678]}}`)
	b.hookCall(path, body, map[string]string{"X-Dropbox-Signature": hex.EncodeToString(mac(string(body)))}).want(t, 200, "")
	b.hookCall(path, body, map[string]string{"X-Dropbox-Signature": hex.EncodeToString(mac("another body"))}).want(t, 401, "UNAUTHENTICATED")
	event := []byte(`{"for_user_id":"2244994945","tweet_create_events":[{"id_str":"1"}]}`)
	x := b.hookCall(path, event, map[string]string{"X-Twitter-Webhooks-Signature": "sha256=" + base64.StdEncoding.EncodeToString(mac(string(event)))}).want(t, 200, "")
	if id, _ := x.body["id"].(string); id == "" {
		t.Fatalf("X's event answered %s", x.raw)
	}
	b.hookCall(path, event, map[string]string{"X-Twitter-Webhooks-Signature": "sha256=" + base64.StdEncoding.EncodeToString(mac("x"))}).want(t, 401, "UNAUTHENTICATED")
	if n := len(b.do("GET", "/v1/tasks/jobs/queues/out/tasks", nil).want(t, 200, "").list("tasks")); n != 2 {
		t.Fatalf("%d tasks, want 2 (the checks add none)", n)
	}
}

// TestHookMicrosoftGraph: Microsoft Graph checks a notification URL with
// a POST of ?validationToken=…, answered 200 with the token as plain text
// and adding nothing, whatever the hook's secret; it signs nothing, so a
// hook with a secret takes a batch of notifications only when each
// carries the secret as its clientState. A token with a control character
// is 400 naming validationToken.
func TestHookMicrosoftGraph(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.do("POST", "/v1/tasks/jobs/queues", `{"name":"out","mode":"pull"}`).want(t, 201, "")
	secret := "graph-client-state-of-the-subscription"
	path := b.hookRule(t, secret)
	token := "Validation: Testing client application reachability for subscription Request-Id: 4a3f9f2c-90a6-4ba4-a5d8-a9e2bf6b7f4e"
	validate := func(tok string) res {
		t.Helper()
		req := mustRequest(t, "POST", b.srv.URL+path+"?"+url.Values{"validationToken": {tok}}.Encode())
		req.Header.Set("Content-Type", "text/plain; charset=utf-8")
		return b.send(req)
	}
	r := validate(token).want(t, 200, "")
	if string(r.raw) != token || r.header.Get("Content-Type") != "text/plain; charset=utf-8" || r.header.Get("X-Content-Type-Options") != "nosniff" {
		t.Fatalf("Graph's validation answered %q (%v)", r.raw, r.header)
	}
	validate("line\nbreak").want(t, 400, "INVALID_ARGUMENT").names(t, "validationToken")

	batch := func(states ...string) []byte {
		var items []string
		for i, s := range states {
			items = append(items, fmt.Sprintf(`{"subscriptionId":"sub-%d","changeType":"created","resource":"Users/u/Messages/m%d","clientState":%q,"tenantId":"t"}`, i, i, s))
		}
		return []byte(`{"value":[` + strings.Join(items, ",") + `]}`)
	}
	b.hookCall(path, batch(secret, secret), map[string]string{"Content-Type": "application/json"}).want(t, 202, "")
	if msg := b.hookCall(path, batch(secret, "another-client-state-value"), nil).want(t, 401, "UNAUTHENTICATED").message(); !strings.Contains(msg, "clientState") {
		t.Fatalf("a batch with another clientState: %s", msg)
	}
	b.hookCall(path, []byte(`{"value":[{"subscriptionId":"s","changeType":"created"}]}`), nil).want(t, 401, "UNAUTHENTICATED")
	if n := len(b.do("GET", "/v1/tasks/jobs/queues/out/tasks", nil).want(t, 200, "").list("tasks")); n != 1 {
		t.Fatalf("%d tasks, want 1 (the validation adds none)", n)
	}
}

// TestHookAsana: Asana's handshake (a POST carrying X-Hook-Secret, which
// its API makes while creating a webhook) is answered 200 with the secret
// echoed and adds nothing; a hook without a secret takes it as its secret,
// so Asana's events, signed with it (X-Hook-Signature, the hex HMAC-SHA256
// of the body), are added (200) and an unsigned call is refused from then
// on. The same handshake again is echoed; another secret is 401, and so is
// any handshake to a hook that has added tasks without a secret (its
// senders are not locked out); a secret that is no hook secret is 400
// naming the header.
func TestHookAsana(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.do("POST", "/v1/tasks/jobs/queues", `{"name":"out","mode":"pull"}`).want(t, 201, "")
	rule := b.do("POST", "/v1/tasks/jobs/triggers", `{"queue":"jobs/out","hook":{}}`).want(t, 201, "").obj("trigger")
	path := rule["hook"].(map[string]any)["path"].(string)
	secret := "7f3c0a9e5b2d4c6e8a1f3b5d7c9e0a2b"
	shake := func(s string) res {
		t.Helper()
		return b.hookCall(path, nil, map[string]string{"X-Hook-Secret": s})
	}
	if r := shake(secret).want(t, 200, ""); r.header.Get("X-Hook-Secret") != secret || len(r.raw) != 0 {
		t.Fatalf("the handshake answered %q, X-Hook-Secret %q", r.raw, r.header.Get("X-Hook-Secret"))
	}
	if hook := b.do("GET", "/v1/tasks/jobs/triggers/"+rule["id"].(string), nil).want(t, 200, "").obj("trigger")["hook"].(map[string]any); hook["hasSecret"] != true {
		t.Fatalf("after the handshake the hook is %v", hook)
	}
	if r := shake(secret).want(t, 200, ""); r.header.Get("X-Hook-Secret") != secret {
		t.Fatalf("the handshake again: %q", r.header.Get("X-Hook-Secret"))
	}
	shake("another-secret-of-another-app").want(t, 401, "UNAUTHENTICATED")

	event := []byte(`{"events":[{"action":"changed","resource":{"gid":"1","resource_type":"task"}}]}`)
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(event)
	b.hookCall(path, event, map[string]string{"X-Hook-Signature": hex.EncodeToString(m.Sum(nil))}).want(t, 200, "")
	b.hookCall(path, event, map[string]string{"X-Hook-Signature": strings.Repeat("0", 64)}).want(t, 401, "UNAUTHENTICATED")
	b.hookCall(path, event, nil).want(t, 401, "UNAUTHENTICATED")

	other := b.do("POST", "/v1/tasks/jobs/triggers", `{"queue":"jobs/out","hook":{}}`).want(t, 201, "").obj("trigger")["hook"].(map[string]any)["path"].(string)
	b.hookCall(other, nil, map[string]string{"X-Hook-Secret": "short"}).want(t, 400, "INVALID_ARGUMENT").names(t, "X-Hook-Secret")
	// A hook in use without a secret is not locked by whoever holds its
	// URL: a handshake there is refused, and its senders go on unsigned.
	b.hookCall(other, []byte(`{"n":1}`), nil).want(t, 202, "")
	if msg := b.hookCall(other, nil, map[string]string{"X-Hook-Secret": secret}).want(t, 401, "UNAUTHENTICATED").message(); !strings.Contains(msg, "of its own") {
		t.Fatalf("a handshake to a hook in use: %s", msg)
	}
	b.hookCall(other, []byte(`{"n":2}`), nil).want(t, 202, "")
	if n := len(b.do("GET", "/v1/tasks/jobs/queues/out/tasks", nil).want(t, 200, "").list("tasks")); n != 3 {
		t.Fatalf("%d tasks, want 3 (the handshakes add none)", n)
	}
}

// TestHookOkta: Okta checks an event hook's URL once with a GET carrying
// X-Okta-Verification-Challenge, answered {"verification": <its value>}
// and adding nothing; a value with a space is 400 naming the header. Its
// events (authenticated by a header Okta sends as configured, not a
// signature) reach a hook without a secret as any call does.
func TestHookOkta(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.do("POST", "/v1/tasks/jobs/queues", `{"name":"out","mode":"pull"}`).want(t, 201, "")
	path := b.do("POST", "/v1/tasks/jobs/triggers", `{"queue":"jobs/out","hook":{}}`).want(t, 201, "").obj("trigger")["hook"].(map[string]any)["path"].(string)
	check := func(v string) res {
		t.Helper()
		req := mustRequest(t, "GET", b.srv.URL+path)
		req.Header.Set("X-Okta-Verification-Challenge", v)
		return b.send(req)
	}
	if r := check("VGhpcyBpcyBhIGNoYWxsZW5nZQ").want(t, 200, ""); r.body["verification"] != "VGhpcyBpcyBhIGNoYWxsZW5nZQ" || len(r.body) != 1 {
		t.Fatalf("Okta's check answered %s", r.raw)
	}
	check("a b").want(t, 400, "INVALID_ARGUMENT").names(t, "X-Okta-Verification-Challenge")
	b.hookCall(path, []byte(`{"eventType":"com.okta.event_hook","data":{"events":[]}}`), nil).want(t, 202, "")
	if n := len(b.do("GET", "/v1/tasks/jobs/queues/out/tasks", nil).want(t, 200, "").list("tasks")); n != 1 {
		t.Fatalf("%d tasks, want 1 (the check adds none)", n)
	}
}

// TestHookSquare: a hook whose secret is a Square subscription's signature
// key takes x-square-hmacsha256-signature, the base64 HMAC-SHA256 of the
// URL Square called followed by the body (as the node saw it, or as a
// proxy in front was called); the event's event_id names the task, so
// Square's retry adds nothing; another URL, key or body is 401.
func TestHookSquare(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.do("POST", "/v1/tasks/jobs/queues", `{"name":"out","mode":"pull"}`).want(t, 201, "")
	secret := "square-signature-key-0123456789ab"
	path := b.hookRule(t, secret)
	body := []byte(`{"merchant_id":"6SSW7HV8K2ST5","type":"payment.created","event_id":"13b867cf-db3d-4b1c-90b6-2f32a9d78124","data":{"type":"payment","id":"KkAkhdMs"}}`)
	sign := func(key, u string, body []byte) map[string]string {
		m := hmac.New(sha256.New, []byte(key))
		m.Write([]byte(u))
		m.Write(body)
		return map[string]string{"X-Square-Hmacsha256-Signature": base64.StdEncoding.EncodeToString(m.Sum(nil))}
	}
	first := b.hookCall(path, body, sign(secret, b.srv.URL+path, body)).want(t, 202, "")
	if again := b.hookCall(path, body, sign(secret, b.srv.URL+path, body)).want(t, 202, ""); again.body["id"] != first.body["id"] || again.body["duplicate"] != true {
		t.Fatalf("Square's retry: %s, first %s", again.raw, first.raw)
	}
	// As a proxy in front was called: https, its host.
	proxied := sign(secret, "https://hooks.example.com"+path, body)
	proxied["X-Forwarded-Host"] = "hooks.example.com"
	b.hookCall(path, body, proxied).want(t, 202, "")
	b.hookCall(path, body, sign(secret, "https://elsewhere.example.com"+path, body)).want(t, 401, "UNAUTHENTICATED")
	b.hookCall(path, body, sign("another-square-signature-key-0123", b.srv.URL+path, body)).want(t, 401, "UNAUTHENTICATED")
	b.hookCall(path, []byte(`{"event_id":"x"}`), sign(secret, b.srv.URL+path, body)).want(t, 401, "UNAUTHENTICATED")
	if n := len(b.do("GET", "/v1/tasks/jobs/queues/out/tasks", nil).want(t, 200, "").list("tasks")); n != 1 {
		t.Fatalf("%d tasks, want 1 (one event, sent three times)", n)
	}
}
