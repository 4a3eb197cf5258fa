package client_test

import (
	"context"
	"errors"
	"net/http"
	"path"
	"strconv"
	"testing"

	"github.com/errandhq/errand/client"
	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/deliver"
)

// TestFireHook: the client calls a hook as a sender would, without an API
// key even in serve mode; Idempotency-Key makes a retry a duplicate;
// copied headers reach params; a signed hook takes the Standard Webhooks
// headers, and a bad signature is UNAUTHENTICATED; the rule counts each
// task added.
func TestFireHook(t *testing.T) {
	e := start(t, options{serve: true})
	ctx := context.Background()
	admin := e.client(e.key("acme", "full:*"), client.RetryPolicy{})
	if _, err := admin.CreateInstance(ctx, "jobs"); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CreateQueue(ctx, "jobs", "in", errandapi.QueueRequest{Mode: new(errandapi.ModePull)}); err != nil {
		t.Fatal(err)
	}
	q := "jobs/in"
	rule := must(admin.CreateTrigger(ctx, "jobs", errandapi.TriggerRequest{Queue: &q,
		Hook: &errandapi.TriggerHookSpec{Headers: &[]string{"X-Event"}}})).of(t)
	token := path.Base(rule.Hook.Path)

	anon := e.client("", client.RetryPolicy{})
	h := http.Header{"Idempotency-Key": {"d-1"}, "X-Event": {"push"}}
	first := must(anon.FireHook(ctx, "jobs", token, []byte(`{"n":1}`), h)).of(t)
	if first.ID == "" || first.Duplicate {
		t.Fatalf("first call %+v", first)
	}
	if again := must(anon.FireHook(ctx, "jobs", token, []byte(`{"n":1}`), h)).of(t); again.ID != first.ID || !again.Duplicate {
		t.Fatalf("retry %+v, want a duplicate of %s", again, first.ID)
	}
	got := must(admin.GetTask(ctx, "jobs", first.ID)).of(t)
	if got.Source != "hook" || string(got.Payload) != `{"n":1}` || string(got.Params) != `{"headers":{"X-Event":"push"}}` || got.Name == nil || *got.Name != rule.ID+"-d-1" {
		t.Fatalf("hook task %+v", got)
	}
	if _, err := anon.FireHook(ctx, "jobs", token, []byte(`not json`), nil); !errors.Is(err, errandapi.ErrInvalidArgument) {
		t.Fatalf("a body that is not JSON: %v", err)
	}
	// The caller's Content-Type is sent: a form is read as one.
	form := must(anon.FireHook(ctx, "jobs", token, []byte(`text=hi+there`), http.Header{"Content-Type": {"application/x-www-form-urlencoded"}})).of(t)
	if got := must(admin.GetTask(ctx, "jobs", form.ID)).of(t); string(got.Payload) != `{"text":["hi there"]}` {
		t.Fatalf("form payload %s", got.Payload)
	}
	if _, err := anon.FireHook(ctx, "jobs", "hk_nope", nil, nil); !errors.Is(err, errandapi.ErrNotFound) {
		t.Fatalf("an unknown hook: %v", err)
	}

	secret := "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	signed := must(admin.CreateTrigger(ctx, "jobs", errandapi.TriggerRequest{Queue: &q,
		Hook: &errandapi.TriggerHookSpec{Secret: errandapi.Value(secret)}})).of(t)
	body, ts := []byte(`{"signed":true}`), e.clock.Now().Unix()
	sig, _ := deliver.SignStandard(secret, "msg_1", ts, body)
	sh := http.Header{}
	sh.Set("webhook-id", "msg_1")
	sh.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	sh.Set("webhook-signature", sig)
	if r := must(anon.FireHook(ctx, "jobs", path.Base(signed.Hook.Path), body, sh)).of(t); r.ID == "" || r.Duplicate {
		t.Fatalf("signed call %+v", r)
	}
	sh.Set("webhook-signature", "v1,AAAA")
	if _, err := anon.FireHook(ctx, "jobs", path.Base(signed.Hook.Path), body, sh); !errors.Is(err, errandapi.ErrUnauthenticated) {
		t.Fatalf("a bad signature: %v", err)
	}
	if r := must(admin.GetTrigger(ctx, "jobs", rule.ID)).of(t); r.Fired != 2 {
		t.Fatalf("rule fired %d, want 2", r.Fired)
	}
	if r := must(admin.GetTrigger(ctx, "jobs", signed.ID)).of(t); r.Fired != 1 {
		t.Fatalf("signed rule fired %d, want 1", r.Fired)
	}
}

// hookSecret is the secret of lossyHook's rule.
const hookSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// lossyHook starts a server whose answers f may lose, with a pull queue
// jobs/in and a hook rule signed with hookSecret adding to it; it returns the
// rule's token.
func lossyHook(t *testing.T) (f *failing, e *env, dev *client.Client, token string) {
	f = &failing{suffix: "/not-yet", how: "lose"}
	e = start(t, options{wrap: f.wrap})
	ctx := context.Background()
	dev = e.client("", client.RetryPolicy{})
	if _, err := dev.CreateQueue(ctx, "jobs", "in", errandapi.QueueRequest{Mode: new(errandapi.ModePull)}); err != nil {
		t.Fatal(err)
	}
	q := "jobs/in"
	rule := must(dev.CreateTrigger(ctx, "jobs", errandapi.TriggerRequest{Queue: &q,
		Hook: &errandapi.TriggerHookSpec{Secret: errandapi.Value(hookSecret)}})).of(t)
	return f, e, dev, path.Base(rule.Hook.Path)
}

// TestFireHookStripeEventRetried: a Stripe-signed call whose body is an
// event names its task by the event's id, so the client sends it again
// after a lost answer and gets the first try's task, marked a duplicate;
// the same call without an event id is not sent twice.
func TestFireHookStripeEventRetried(t *testing.T) {
	f, e, dev, token := lossyHook(t)
	ctx := context.Background()
	fire := func(body string) (*errandapi.HookResponse, error) {
		h := http.Header{"Stripe-Signature": {deliver.SignStripe(hookSecret, e.clock.Now().Unix(), []byte(body))}}
		f.suffix, f.n = token, int(f.seen.Load())+1 // lose the next answer
		return dev.FireHook(ctx, "jobs", token, []byte(body), h)
	}
	r, err := fire(`{"id":"evt_1","object":"event"}`)
	if err != nil || r.ID == "" || !r.Duplicate || f.seen.Load() != 2 {
		t.Fatalf("a Stripe event after a lost answer: %+v %v in %d tries, want the first try's task as a duplicate in 2", r, err, f.seen.Load())
	}
	if _, err := fire(`{"id":"in_1","object":"invoice"}`); !client.IsConnectionError(err) || f.seen.Load() != 3 {
		t.Fatalf("a Stripe body without an event id: %v after %d tries, want a connection error after 1 more", err, f.seen.Load())
	}
	if n := len(must(dev.ListTasks(ctx, "jobs", "in", client.ListOptions{})).of(t).Tasks); n != 2 {
		t.Fatalf("%d tasks, want 2 (each body stored once)", n)
	}
}

// TestFireHookSvixRetried: a call signed with Svix's own header names
// (svix-id, as Clerk and Resend send them) names its task by svix-id, so
// the client sends it again after a lost answer and gets the first try's
// task, marked a duplicate.
func TestFireHookSvixRetried(t *testing.T) {
	f, e, dev, token := lossyHook(t)
	ctx := context.Background()
	body := []byte(`{"type":"user.created"}`)
	now := e.clock.Now().Unix()
	sig, _ := deliver.SignStandard(hookSecret, "msg_2Lq", now, body)
	h := http.Header{"Svix-Id": {"msg_2Lq"}, "Svix-Timestamp": {strconv.FormatInt(now, 10)}, "Svix-Signature": {sig}}
	f.suffix, f.n = token, int(f.seen.Load())+1 // lose the next answer
	r, err := dev.FireHook(ctx, "jobs", token, body, h)
	if err != nil || r.ID == "" || !r.Duplicate || f.seen.Load() != 2 {
		t.Fatalf("a Svix-signed call after a lost answer: %+v %v in %d tries, want the first try's task as a duplicate in 2", r, err, f.seen.Load())
	}
	if n := len(must(dev.ListTasks(ctx, "jobs", "in", client.ListOptions{})).of(t).Tasks); n != 1 {
		t.Fatalf("%d tasks, want 1", n)
	}
}

// TestFireHookSlackForm: a Slack-signed form (a slash command) is answered
// with the bare 200 Slack wants; FireHook takes it as success, without a
// task id, and the task is added.
func TestFireHookSlackForm(t *testing.T) {
	e := start(t, options{})
	ctx := context.Background()
	dev := e.client("", client.RetryPolicy{})
	if _, err := dev.CreateQueue(ctx, "jobs", "in", errandapi.QueueRequest{Mode: new(errandapi.ModePull)}); err != nil {
		t.Fatal(err)
	}
	q, secret := "jobs/in", "8f742231b10e8888abcd99yyyzzz85a5"
	rule := must(dev.CreateTrigger(ctx, "jobs", errandapi.TriggerRequest{Queue: &q,
		Hook: &errandapi.TriggerHookSpec{Secret: errandapi.Value(secret)}})).of(t)
	body := []byte("command=%2Fdeploy&text=api")
	now := e.clock.Now().Unix()
	h := http.Header{"Content-Type": {"application/x-www-form-urlencoded"}, "X-Slack-Request-Timestamp": {strconv.FormatInt(now, 10)},
		"X-Slack-Signature": {deliver.SignSlack(secret, now, body)}}
	if r, err := dev.FireHook(ctx, "jobs", path.Base(rule.Hook.Path), body, h); err != nil || r.ID != "" || r.Duplicate {
		t.Fatalf("a slash command: %+v %v", r, err)
	}
	if n := len(must(dev.ListTasks(ctx, "jobs", "in", client.ListOptions{})).of(t).Tasks); n != 1 {
		t.Fatalf("%d tasks, want 1", n)
	}
}
