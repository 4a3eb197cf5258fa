package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/clock"
	"github.com/errandhq/errand/internal/deliver"
	"github.com/errandhq/errand/worker"
)

// TestWebhookHandler: one Handler served as a webhook target by a real node
// (its deliveries signed with the instance's key, over loopback HTTP): a
// result is stored, an error fails the attempt with its message, Defer
// waits without using an attempt, a panic fails it; tasks the handler adds
// are one deeper, so a receiver that adds to its own queue stops at the
// deepest chain; a delivery signed with a key the receiver does not hold
// is refused, and counts as a failure.
func TestWebhookHandler(t *testing.T) {
	clk := clock.NewFake(time.Now())
	_, c, outcomes := nodeOn(t, clk)
	ctx := context.Background()
	key, err := c.WebhookKey(ctx, "jobs")
	if err != nil {
		t.Fatal(err)
	}
	deferred := 0
	h := func(ctx context.Context, tk *worker.Task) (json.RawMessage, error) {
		if _, ok := ctx.Deadline(); !ok || tk.DeadlineAt.IsZero() || tk.Attempt < 1 {
			return nil, errors.New("no deadline or attempt")
		}
		switch string(tk.Payload) {
		case `"ok"`:
			return json.RawMessage(`{"queue":"` + tk.Queue + `","name":"` + tk.Name + `"}`), nil
		case `"none"`:
			return nil, nil
		case `"fail"`:
			return nil, errors.New("boom")
		case `"defer"`:
			if deferred++; deferred == 1 {
				return nil, worker.Defer(90 * time.Second)
			}
			return json.RawMessage(`"later"`), nil
		case `"panic"`:
			panic("oops")
		case `"loop"`:
			// A receiver that adds to its own queue: the delivery's token
			// makes each add one deeper, so the loop ends.
			r, err := c.AddTask(ctx, "jobs", "loop", errandapi.NewTask{Payload: json.RawMessage(`"loop"`)})
			if err != nil {
				return nil, err
			}
			return json.Marshal(r.ID)
		}
		return nil, errors.New("unexpected payload " + string(tk.Payload))
	}
	wh, err := worker.WebhookHandler(h, worker.WebhookOptions{Keys: []string{"whsec_b2xkb2xkb2xkb2xkb2xkb2xkb2xkb2xkb2xk", key}, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewServer(wh)
	defer rec.Close()
	one := 1
	if _, err := c.CreateQueue(ctx, "jobs", "hooks", errandapi.QueueRequest{MaxAttempts: &one,
		Target: errandapi.Value(errandapi.Target{Webhook: rec.URL + "/receipts"})}); err != nil {
		t.Fatal(err)
	}
	add := func(payload string) string {
		t.Helper()
		r, err := c.AddTask(ctx, "jobs", "hooks", errandapi.NewTask{Payload: json.RawMessage(payload), Name: "t-" + strings.Trim(payload, `"`)})
		if err != nil {
			t.Fatal(err)
		}
		return r.ID
	}
	if tk := wait(t, c, outcomes, add(`"ok"`), errandapi.StateSucceeded); string(tk.Result) != `{"queue":"hooks","name":"t-ok"}` {
		t.Fatalf("result %s", tk.Result)
	}
	if tk := wait(t, c, outcomes, add(`"none"`), errandapi.StateSucceeded); tk.Result != nil && string(tk.Result) != "null" {
		t.Fatalf("no result: %s", tk.Result)
	}
	if tk := wait(t, c, outcomes, add(`"fail"`), errandapi.StateFailed); lastError(tk) != "HTTP 500: boom" {
		t.Fatalf("failed with %q", lastError(tk))
	}
	if tk := wait(t, c, outcomes, add(`"panic"`), errandapi.StateFailed); !strings.HasPrefix(lastError(tk), `HTTP 500: function "/receipts" panicked: oops`) {
		t.Fatalf("panicked with %q", lastError(tk))
	}
	id := add(`"defer"`)
	tk := wait(t, c, outcomes, id, errandapi.StateRetrying)
	if len(tk.Attempts) != 1 || tk.Attempts[0].Status != errandapi.AttemptDeferred || tk.RunAt != clk.Now().Add(90*time.Second).UnixMilli() {
		t.Fatalf("deferred: %+v", tk)
	}
	clk.Advance(90 * time.Second)
	if tk := wait(t, c, outcomes, id, errandapi.StateSucceeded); string(tk.Result) != `"later"` || tk.Attempt != 1 {
		t.Fatalf("after the deferral: attempt %d, result %s", tk.Attempt, tk.Result)
	}
	// A loop of adds through the receiver ends at the deepest chain: each
	// task it added has source webhook and its parent's depth + 1.
	if _, err := c.CreateQueue(ctx, "jobs", "loop", errandapi.QueueRequest{MaxAttempts: &one,
		Target: errandapi.Value(errandapi.Target{Webhook: rec.URL + "/loop"})}); err != nil {
		t.Fatal(err)
	}
	r, err := c.AddTask(ctx, "jobs", "loop", errandapi.NewTask{Payload: json.RawMessage(`"loop"`)})
	if err != nil {
		t.Fatal(err)
	}
	walkChain(t, c, outcomes, r.ID, "webhook", errandapi.StateFailed)

	// A rotated key the receiver does not hold yet: refused, a failure.
	if _, err := c.RotateWebhookKey(ctx, "jobs"); err != nil {
		t.Fatal(err)
	}
	if tk := wait(t, c, outcomes, add(`"ok2"`), errandapi.StateFailed); !strings.Contains(lastError(tk), "HTTP 401") {
		t.Fatalf("with a key the receiver lacks: %q", lastError(tk))
	}
}

// TestVerifyWebhook: errand's signature over the raw body checks against
// any of the keys and within 5 minutes; the refusals say which is wrong.
func TestVerifyWebhook(t *testing.T) {
	key, body, now := "whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=", []byte(`{"task":{},"payload":1}`), time.UnixMilli(1_793_042_520_000)
	h := http.Header{}
	h.Set("X-Errand-Timestamp", strconv.FormatInt(now.UnixMilli(), 10))
	h.Set("X-Errand-Signature", deliver.Sign(key, now.UnixMilli(), body))
	for _, c := range []struct {
		name string
		h    http.Header
		body []byte
		now  time.Time
		keys []string
		want error
	}{
		{"signed", h, body, now.Add(4 * time.Minute), []string{key}, nil},
		{"the second key", h, body, now, []string{"whsec_other", key}, nil},
		{"another body", h, []byte(`{"task":{},"payload":2}`), now, []string{key}, worker.ErrBadSignature},
		{"another key", h, body, now, []string{"whsec_other"}, worker.ErrBadSignature},
		{"no key", h, body, now, nil, worker.ErrBadSignature},
		{"stale", h, body, now.Add(6 * time.Minute), []string{key}, worker.ErrStale},
		{"from the future", h, body, now.Add(-6 * time.Minute), []string{key}, worker.ErrStale},
		{"unsigned", http.Header{}, body, now, []string{key}, worker.ErrUnsigned},
	} {
		if err := worker.VerifyWebhook(c.h, c.body, c.now, c.keys...); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	if _, err := worker.WebhookHandler(nil, worker.WebhookOptions{}); err == nil {
		t.Error("a WebhookHandler without keys was made")
	}
}
