package client

import (
	"context"
	"net/http"

	"github.com/errandhq/errand/errandapi"
)

// FireHook calls a hook rule's URL as its sender would: POST
// /v1/hooks/{instance}/{hook} with body (JSON, at most 64 KiB; nil for none;
// a form when headers' Content-Type is application/x-www-form-urlencoded)
// and headers (Idempotency-Key, the signature headers of a hook with a
// secret, those the rule copies into params). hook is the token, the last
// segment of the rule's hook.path. No API key is sent: the URL is the
// capability. The answer is the task added, or with Duplicate the one an
// earlier call with the same Idempotency-Key (or webhook-id, GitHub's
// X-GitHub-Delivery, Twilio's I-Twilio-Idempotency-Token, Shopify's
// X-Shopify-Webhook-Id, WooCommerce's and Linear's delivery ids, or the
// event id of a call signed as Stripe, Slack or Paddle sign:
// errandapi.HookEventID) added.
// A call that names its task so is retried like any repeatable call; one
// that does not is not sent twice once it may have reached the server, as
// a second call would add a second task.
func (c *Client) FireHook(ctx context.Context, instance, hook string, body []byte, headers http.Header) (*errandapi.HookResponse, error) {
	var out errandapi.HookResponse
	named := headers.Get("Idempotency-Key") != "" || headers.Get("webhook-id") != "" ||
		headers.Get("X-Hub-Signature-256") != "" && headers.Get("X-GitHub-Delivery") != "" ||
		headers.Get("X-Twilio-Signature") != "" && headers.Get("I-Twilio-Idempotency-Token") != "" ||
		headers.Get("X-Shopify-Hmac-Sha256") != "" && headers.Get("X-Shopify-Webhook-Id") != "" ||
		headers.Get("X-WC-Webhook-Signature") != "" && headers.Get("X-WC-Webhook-Delivery-ID") != "" ||
		headers.Get("Linear-Signature") != "" && headers.Get("Linear-Delivery") != "" ||
		(headers.Get("Stripe-Signature") != "" || headers.Get("X-Slack-Signature") != "" || headers.Get("Paddle-Signature") != "") &&
			errandapi.HookEventID(body) != ""
	err := c.do(ctx, call{method: "POST", path: []string{"v1", "hooks", instance, hook}, raw: body, header: headers,
		anonymous: true, out: &out, repeatable: named})
	if err != nil {
		return nil, err
	}
	return &out, nil
}
