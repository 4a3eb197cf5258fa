package httpapi_test

// The senders of this file sign a time with the body: Twitch, Webflow,
// Mux, Frame.io.

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/errandhq/errand/internal/deliver"
)

// TestHookTwitch: a hook whose secret is a Twitch EventSub subscription's
// takes Twitch's signature ("sha256=" and the hex HMAC-SHA256 of the
// message id, the RFC 3339 timestamp and the body); the subscription's
// callback verification, signed, is answered with its challenge as plain
// text and adds nothing; a notification is added and named by its message
// id (Twitch's retry adds nothing); a timestamp more than 10 minutes old,
// another secret or a changed body is 401.
func TestHookTwitch(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.do("POST", "/v1/tasks/jobs/queues", `{"name":"out","mode":"pull"}`).want(t, 201, "")
	secret := "twitch-subscription-secret-0123"
	path := b.hookRule(t, secret)
	call := func(key, id, kind string, at time.Time, body string) res {
		t.Helper()
		ts := at.UTC().Format(time.RFC3339Nano)
		m := hmac.New(sha256.New, []byte(key))
		m.Write([]byte(id + ts + body))
		return b.hookCall(path, []byte(body), map[string]string{"Content-Type": "application/json",
			"Twitch-Eventsub-Message-Id": id, "Twitch-Eventsub-Message-Timestamp": ts, "Twitch-Eventsub-Message-Type": kind,
			"Twitch-Eventsub-Message-Signature": "sha256=" + hex.EncodeToString(m.Sum(nil))})
	}
	now := b.clock.Now()
	verify := `{"challenge":"pogchamp-kappa-360noscope-vohiyo","subscription":{"id":"f1c2a387","type":"channel.follow","version":"2","status":"webhook_callback_verification_pending"}}`
	r := call(secret, "e76c6bd4", "webhook_callback_verification", now, verify).want(t, 200, "")
	if string(r.raw) != "pogchamp-kappa-360noscope-vohiyo" || r.header.Get("Content-Type") != "text/plain; charset=utf-8" {
		t.Fatalf("the verification answered %q (%s)", r.raw, r.header.Get("Content-Type"))
	}
	call("another-subscription-secret", "e76c6bd4", "webhook_callback_verification", now, verify).want(t, 401, "UNAUTHENTICATED")

	note := `{"subscription":{"id":"f1c2a387","type":"channel.follow"},"event":{"user_id":"1234","user_login":"cool_user"}}`
	first := call(secret, "befa7b53", "notification", now, note).want(t, 202, "")
	if again := call(secret, "befa7b53", "notification", now.Add(time.Minute), note).want(t, 202, ""); again.body["id"] != first.body["id"] || again.body["duplicate"] != true {
		t.Fatalf("Twitch's retry: %s, first %s", again.raw, first.raw)
	}
	call(secret, "c0ffee01", "notification", now.Add(-11*time.Minute), note).want(t, 401, "UNAUTHENTICATED")
	call(secret, "c0ffee02", "notification", now.Add(-9*time.Minute), note).want(t, 202, "")
	// The signature of one body on another: refused.
	ts := now.UTC().Format(time.RFC3339Nano)
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("c0ffee03" + ts + note))
	b.hookCall(path, []byte(`{"event":{"user_id":"666"}}`), map[string]string{"Twitch-Eventsub-Message-Id": "c0ffee03",
		"Twitch-Eventsub-Message-Timestamp": ts, "Twitch-Eventsub-Message-Signature": "sha256=" + hex.EncodeToString(m.Sum(nil))}).
		want(t, 401, "UNAUTHENTICATED")
	if n := len(b.do("GET", "/v1/tasks/jobs/queues/out/tasks", nil).want(t, 200, "").list("tasks")); n != 2 {
		t.Fatalf("%d tasks, want 2 (the verification adds none, the retry none)", n)
	}
}

// TestHookWebflow: a hook whose secret is a Webflow webhook's takes
// X-Webflow-Signature, the hex HMAC-SHA256 of X-Webflow-Timestamp
// (milliseconds), ":" and the body; Webflow's retry of the same body adds
// nothing (the body names the task); a timestamp more than 5 minutes old,
// another secret or another body is 401.
func TestHookWebflow(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.do("POST", "/v1/tasks/jobs/queues", `{"name":"out","mode":"pull"}`).want(t, 201, "")
	secret := "webflow-webhook-secret-0123456789"
	path := b.hookRule(t, secret)
	call := func(key string, at time.Time, signed, sent string) res {
		t.Helper()
		ts := strconv.FormatInt(at.UnixMilli(), 10)
		m := hmac.New(sha256.New, []byte(key))
		m.Write([]byte(ts + ":" + signed))
		return b.hookCall(path, []byte(sent), map[string]string{"Content-Type": "application/json",
			"X-Webflow-Timestamp": ts, "X-Webflow-Signature": hex.EncodeToString(m.Sum(nil))})
	}
	now := b.clock.Now()
	form := `{"triggerType":"form_submission","payload":{"name":"Contact","data":{"email":"a@example.com"},"submittedAt":"2026-12-07T12:00:00.117Z","id":"6321ca84df3949bfc6752327"}}`
	first := call(secret, now, form, form).want(t, 202, "")
	if again := call(secret, now.Add(time.Minute), form, form).want(t, 202, ""); again.body["id"] != first.body["id"] || again.body["duplicate"] != true {
		t.Fatalf("Webflow's retry: %s, first %s", again.raw, first.raw)
	}
	call(secret, now.Add(-6*time.Minute), form, form).want(t, 401, "UNAUTHENTICATED")
	call("another-webflow-secret-0123456789", now, form, form).want(t, 401, "UNAUTHENTICATED")
	call(secret, now, form, strings.Replace(form, "a@example.com", "b@example.com", 1)).want(t, 401, "UNAUTHENTICATED")
	if n := len(b.do("GET", "/v1/tasks/jobs/queues/out/tasks", nil).want(t, 200, "").list("tasks")); n != 1 {
		t.Fatalf("%d tasks, want 1", n)
	}
}

// TestHookMuxAndFrameio: Mux signs as Stripe does under Mux-Signature
// ("t=<seconds>,v1=<hex HMAC-SHA256 of <t>.<body>>"), its event's id naming
// the task; Frame.io as Slack does under X-Frameio-Signature and
// X-Frameio-Request-Timestamp ("v0=<hex HMAC-SHA256 of v0:<t>:<body>>").
// Another secret, or a time more than 5 minutes off, is 401.
func TestHookMuxAndFrameio(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.do("POST", "/v1/tasks/jobs/queues", `{"name":"out","mode":"pull"}`).want(t, 201, "")
	secret := "mux-and-frameio-signing-secret-01"
	path := b.hookRule(t, secret)
	now := b.clock.Now().Unix()
	event := []byte(`{"type":"video.asset.ready","id":"3a56ac3d-33da-4366-855b-f592d898409d","object":{"type":"asset","id":"a1"}}`)
	mux := func(key string, ts int64) res {
		t.Helper()
		return b.hookCall(path, event, map[string]string{"Mux-Signature": deliver.SignStripe(key, ts, event)})
	}
	first := mux(secret, now).want(t, 202, "")
	if again := mux(secret, now+60).want(t, 202, ""); again.body["id"] != first.body["id"] || again.body["duplicate"] != true {
		t.Fatalf("Mux's retry of an event: %s, first %s", again.raw, first.raw)
	}
	mux("another-mux-signing-secret-012345", now).want(t, 401, "UNAUTHENTICATED")
	mux(secret, now-6*60).want(t, 401, "UNAUTHENTICATED")

	asset := []byte(`{"type":"asset.created","resource":{"type":"asset","id":"f1"}}`)
	frameio := func(key string, ts int64) res {
		t.Helper()
		return b.hookCall(path, asset, map[string]string{"X-Frameio-Request-Timestamp": strconv.FormatInt(ts, 10),
			"X-Frameio-Signature": deliver.SignSlack(key, ts, asset)})
	}
	frameio(secret, now).want(t, 202, "")
	frameio("another-frameio-secret-0123456789", now).want(t, 401, "UNAUTHENTICATED")
	frameio(secret, now-6*60).want(t, 401, "UNAUTHENTICATED")
	if n := len(b.do("GET", "/v1/tasks/jobs/queues/out/tasks", nil).want(t, 200, "").list("tasks")); n != 2 {
		t.Fatalf("%d tasks, want 2", n)
	}
}
