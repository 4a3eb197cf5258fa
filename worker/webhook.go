package worker

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/errandhq/errand/client"
	"github.com/errandhq/errand/errandapi"
)

// WebhookTolerance is how far a delivery's X-Errand-Timestamp may be from
// the receiver's clock before VerifyWebhook refuses it as a replay.
const WebhookTolerance = 5 * time.Minute

// maxWebhookBody bounds a delivery's body: a payload and params of 64 KiB
// each in errand's envelope, with room to spare.
const maxWebhookBody = 1 << 20

// The refusals of VerifyWebhook.
var (
	// ErrUnsigned: the request carries no X-Errand-Timestamp or
	// X-Errand-Signature.
	ErrUnsigned = errors.New("worker: the request carries no errand signature")
	// ErrBadSignature: no signature matches any of the keys.
	ErrBadSignature = errors.New("worker: the errand signature does not match the key")
	// ErrStale: the signature matches, but its timestamp is more than
	// WebhookTolerance from now (a replay).
	ErrStale = errors.New("worker: the errand signature's timestamp is more than 5 minutes from now")
)

// VerifyWebhook checks an errand webhook delivery: its X-Errand-Signature,
// "v1=" and the hex HMAC-SHA256 keyed with the whole key string (whsec_
// included) over "<X-Errand-Timestamp>.<body>", must match one of keys
// (during a rotation, the new key and the old), and its timestamp (epoch
// milliseconds) be within WebhookTolerance of now. body is the raw body,
// exactly as received.
func VerifyWebhook(header http.Header, body []byte, now time.Time, keys ...string) error {
	ts, sigs := header.Get("X-Errand-Timestamp"), header.Get("X-Errand-Signature")
	if ts == "" || sigs == "" {
		return ErrUnsigned
	}
	ms, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return ErrBadSignature
	}
	match := false
	for _, key := range keys {
		m := hmac.New(sha256.New, []byte(key))
		m.Write([]byte(ts + "."))
		m.Write(body)
		want := []byte("v1=" + hex.EncodeToString(m.Sum(nil)))
		for _, s := range strings.FieldsFunc(sigs, func(r rune) bool { return r == ' ' || r == ',' }) {
			if hmac.Equal([]byte(s), want) {
				match = true
			}
		}
	}
	if !match {
		return ErrBadSignature
	}
	if d := now.Sub(time.UnixMilli(ms)); d > WebhookTolerance || d < -WebhookTolerance {
		return ErrStale
	}
	return nil
}

// WebhookOptions configure WebhookHandler.
type WebhookOptions struct {
	// Keys are the instance's webhook signing keys (whsec_…) a delivery
	// may be signed with: one, or during a rotation the new and the old.
	// At least one is required.
	Keys []string
	// Now is the receiver's clock (default time.Now).
	Now func() time.Time
}

// WebhookHandler serves h as a webhook target, so one handler can answer a
// connected worker's attempts (Worker.Handle) and webhook deliveries
// alike: a queue whose target is {"webhook": "https://…"} at the handler's
// URL. For each POST it checks the signature (VerifyWebhook; else 401,
// which errand records as a failed attempt), reads errand's body into a
// Task (Function is ""), and runs h with a context that ends at the
// attempt's deadline or when errand gives up the request. It answers as
// errand reads an answer: a result, 200 with the result as the body (204
// for none), stored as the task's result; Defer(d), 503 with
// x-task-retry: defer and retry-after, tried again without using an
// attempt; an error or a panic, 500 with its message, a failed attempt.
// The delivery's token (errandapi.DeliveryHeader) is in h's context
// (client.WithDelivery), so the tasks h adds with a client get depth =
// this task's + 1 and source "webhook", and a loop of adds ends at
// errandapi.MaxDepth.
func WebhookHandler(h Handler, o WebhookOptions) (http.Handler, error) {
	if len(o.Keys) == 0 {
		return nil, errors.New("worker: WebhookHandler needs at least one key (the instance's whsec_… webhook key)")
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "an errand webhook takes POST", http.StatusMethodNotAllowed)
			return
		}
		raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxWebhookBody))
		if err != nil {
			http.Error(w, "reading the delivery: "+err.Error(), http.StatusRequestEntityTooLarge)
			return
		}
		if err := VerifyWebhook(r.Header, raw, o.Now(), o.Keys...); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		var b errandapi.DeliveryBody
		if err := json.Unmarshal(raw, &b); err != nil {
			http.Error(w, "the delivery's body is not errand's: "+err.Error(), http.StatusBadRequest)
			return
		}
		t := taskOf(&b, time.UnixMilli(b.Task.DeadlineAt), "")
		ctx := r.Context()
		if tok := r.Header.Get(errandapi.DeliveryHeader); tok != "" {
			ctx = client.WithDelivery(ctx, tok)
		}
		ctx, cancel := context.WithDeadline(ctx, t.DeadlineAt)
		defer cancel()
		switch o := invoke(ctx, h, t, r.URL.Path); {
		case o.deferBy != nil:
			w.Header().Set("x-task-retry", "defer")
			w.Header().Set("retry-after", strconv.FormatFloat(max(math.Ceil(o.deferBy.Delay.Seconds()), 1), 'f', 0, 64))
			w.WriteHeader(http.StatusServiceUnavailable)
		case o.failed != "":
			http.Error(w, o.failed, http.StatusInternalServerError)
		case len(o.result) == 0:
			w.WriteHeader(http.StatusNoContent)
		default:
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(o.result)
		}
	}), nil
}
