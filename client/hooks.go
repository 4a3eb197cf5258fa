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
// capability. The answer is the task added (its ID "" when the call is
// answered as its sender wants: a Slack-signed form with a bare 200, a
// Discord-signed one with Discord's answer or 204), or with Duplicate the
// one an earlier call with the same Idempotency-Key (or, to a hook with a
// secret, the same sender's message id: errandapi.HookMessageID) added.
// A call that names its task so (errandapi.HookNamesTask) is retried like
// any repeatable call; one that does not is not sent twice once it may
// have reached the server, as a second call would add a second task.
func (c *Client) FireHook(ctx context.Context, instance, hook string, body []byte, headers http.Header) (*errandapi.HookResponse, error) {
	var out errandapi.HookResponse
	named := errandapi.HookNamesTask(headers.Get, body)
	err := c.do(ctx, call{method: "POST", path: []string{"v1", "hooks", instance, hook}, raw: body, header: headers,
		anonymous: true, out: &out, repeatable: named, bareOK: true})
	if err != nil {
		return nil, err
	}
	return &out, nil
}
