package errandapi_test

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"testing"

	"github.com/errandhq/errand/errandapi"
)

// TestHookEventID: a Stripe event's id and a Slack Events API callback's
// event_id are read from the body; anything else has none.
func TestHookEventID(t *testing.T) {
	for body, want := range map[string]string{
		`{"id":"evt_1","object":"event","type":"invoice.paid"}`:   "evt_1",
		`{"type":"event_callback","event_id":"Ev1","event":{}}`:   "Ev1",
		`{"id":"in_1","object":"invoice"}`:                        "",
		`{"type":"url_verification","challenge":"c"}`:             "",
		`{"type":"event_callback"}`:                               "",
		`{"object":"event"}`:                                      "",
		`[1,2]`:                                                   "",
		`command=%2Fdeploy&text=x`:                                "",
		``:                                                        "",
		`{"id":"evt_1","object":"event","id":"evt_2"}`:            "evt_2",
		`{"event_id":"Ev1","type":"event_callback","object":"x"}`: "Ev1",
		`{"event_id":"evt_9","event_type":"transaction.completed","notification_id":"ntf_1"}`:    "evt_9",
		`{"event_id":"evt_9","event_type":"transaction.completed"}`:                              "",
		`{"event_id":"01HM3K8N","event_type":"form_response","form_response":{}}`:                "01HM3K8N",
		`{"event_id":"01HM3K8P","event_type":"form_response_partial"}`:                           "01HM3K8P",
		`{"event":{"id":"01DEN5","event_type":"incident.triggered","resource_type":"incident"}}`: "01DEN5",
		`{"event":"meeting.ended","event_ts":1626230691572}`:                                     "",
		`{"event":{"id":"01DEN5","event_type":"incident.triggered"}}`:                            "",
		`{"type":"event_callback","event_id":"Ev2","event":{"type":"message","id":"m1"}}`:        "Ev2",
		`{"event_id":"01HM3K8Q","event_type":"form_submitted"}`:                                  "",
	} {
		if got := errandapi.HookEventID([]byte(body)); got != want {
			t.Errorf("HookEventID(%s) = %q, want %q", body, got, want)
		}
	}
}

// TestHookMessageID: the first sender whose signature header a call sends
// says what names its task: its id header (svix-id for a Svix-signed
// call), or the event id in the body, or nothing; a call with no sender's
// header whose body has Mailgun's signature is named by its token.
func TestHookMessageID(t *testing.T) {
	event := `{"id":"evt_1","object":"event"}`
	eventSum := sha256.Sum256([]byte(event))
	for _, c := range []struct {
		name   string
		header http.Header
		body   string
		want   string
	}{
		{"standard", http.Header{"Webhook-Signature": {"v1,x"}, "Webhook-Id": {"msg_1"}}, "", "msg_1"},
		{"svix", http.Header{"Svix-Signature": {"v1,x"}, "Svix-Id": {"msg_2"}}, "", "msg_2"},
		{"svix signature, webhook-id", http.Header{"Svix-Signature": {"v1,x"}, "Webhook-Id": {"msg_3"}, "Svix-Id": {"msg_4"}}, "", "msg_3"},
		{"github", http.Header{"X-Hub-Signature-256": {"sha256=x"}, "X-Github-Delivery": {"d1"}}, "", "d1"},
		{"github and its older header", http.Header{"X-Hub-Signature": {"sha1=x"}, "X-Hub-Signature-256": {"sha256=x"}, "X-Github-Delivery": {"d1"}}, "", "d1"},
		{"github before stripe", http.Header{"X-Hub-Signature-256": {"sha256=x"}, "Stripe-Signature": {"t=1,v1=x"}}, event, ""},
		{"twilio", http.Header{"X-Twilio-Signature": {"x"}, "I-Twilio-Idempotency-Token": {"tok"}}, "", "tok"},
		{"shopify", http.Header{"X-Shopify-Hmac-Sha256": {"x"}, "X-Shopify-Webhook-Id": {"s1"}}, "", "s1"},
		{"woocommerce", http.Header{"X-Wc-Webhook-Signature": {"x"}, "X-Wc-Webhook-Delivery-Id": {"w1"}}, "", "w1"},
		{"linear", http.Header{"Linear-Signature": {"x"}, "Linear-Delivery": {"l1"}}, "", "l1"},
		{"stripe event", http.Header{"Stripe-Signature": {"t=1,v1=x"}}, event, "evt_1"},
		{"stripe, no event", http.Header{"Stripe-Signature": {"t=1,v1=x"}}, `{"object":"invoice","id":"in_1"}`, ""},
		{"calendly", http.Header{"Calendly-Webhook-Signature": {"t=1,v1=x"}}, event, "body-" + hex.EncodeToString(eventSum[:16])},
		{"calendly, no body", http.Header{"Calendly-Webhook-Signature": {"t=1,v1=x"}}, "", ""},
		{"zoom", http.Header{"X-Zm-Signature": {"v0=x"}}, event, "body-" + hex.EncodeToString(eventSum[:16])},
		{"discord interaction", http.Header{"X-Signature-Ed25519": {"x"}}, `{"id":"1184","type":2,"token":"t"}`, "1184"},
		{"discord event, no id", http.Header{"X-Signature-Ed25519": {"x"}}, `{"version":1,"type":1,"event":{"type":"APPLICATION_AUTHORIZED"}}`, ""},
		{"discord, a numeric id", http.Header{"X-Signature-Ed25519": {"x"}}, `{"id":1184}`, ""},
		{"discord, no JSON", http.Header{"X-Signature-Ed25519": {"x"}}, `id=1184`, ""},
		{"sentry", http.Header{"Sentry-Hook-Signature": {"x"}, "X-Github-Delivery": {"d1"}}, "", ""},
		{"forgejo, with gitea's and gogs's headers too", http.Header{"X-Forgejo-Signature": {"x"}, "X-Forgejo-Delivery": {"f1"},
			"X-Gitea-Signature": {"x"}, "X-Gitea-Delivery": {"g1"}, "X-Gogs-Signature": {"x"}, "X-Gogs-Delivery": {"o1"}}, "", "f1"},
		{"gitea", http.Header{"X-Gitea-Signature": {"x"}, "X-Gitea-Delivery": {"g1"}}, "", "g1"},
		{"gogs", http.Header{"X-Gogs-Signature": {"x"}, "X-Gogs-Delivery": {"o1"}}, "", "o1"},
		{"pagerduty", http.Header{"X-Pagerduty-Signature": {"v1=x"}}, `{"event":{"id":"01DEN5D5WM7UPBANQJ0EVLWQ0D","event_type":"incident.triggered","resource_type":"incident","data":{}}}`, "01DEN5D5WM7UPBANQJ0EVLWQ0D"},
		{"pagerduty, another shape", http.Header{"X-Pagerduty-Signature": {"v1=x"}}, `{"event":{"id":"e1","type":"message"}}`, ""},
		{"segment", http.Header{"X-Signature": {"x"}}, `{"type":"identify","messageId":"m-1","traits":{}}`, "m-1"},
		{"clickup (x-signature), no messageId", http.Header{"X-Signature": {"x"}}, `{"event":"taskCreated","webhook_id":"w1","task_id":"t1"}`, ""},
		{"x-signature, another type", http.Header{"X-Signature": {"x"}}, `{"type":"orders","messageId":"m-2"}`, ""},
		{"todoist", http.Header{"X-Todoist-Hmac-Sha256": {"x"}, "X-Todoist-Delivery-Id": {"t1"}}, "", "t1"},
		{"razorpay", http.Header{"X-Razorpay-Signature": {"x"}, "X-Razorpay-Event-Id": {"evt_r1"}}, "", "evt_r1"},
		{"cal.com", http.Header{"X-Cal-Signature-256": {"x"}}, event, ""},
		{"jira", http.Header{"X-Hub-Signature": {"sha256=x"}, "X-Atlassian-Webhook-Identifier": {"j1"}}, "", "j1"},
		{"intercom", http.Header{"X-Hub-Signature": {"sha1=x"}}, `{"type":"notification_event","id":"notif_1"}`, ""},
		{"gitlab's token", http.Header{"X-Gitlab-Token": {"x"}, "X-Gitlab-Event-Uuid": {"u1"}}, "", ""},
		{"gitlab signed", http.Header{"X-Gitlab-Token": {"x"}, "Webhook-Signature": {"v1,x"}, "Webhook-Id": {"msg_g"}}, "", "msg_g"},
		{"typeform", http.Header{"Typeform-Signature": {"sha256=x"}}, `{"event_id":"01HM","event_type":"form_response"}`, "01HM"},
		{"unsigned", http.Header{"Webhook-Id": {"msg_1"}, "X-Github-Delivery": {"d1"}}, event, ""},
		{"sendgrid batch", http.Header{"X-Twilio-Email-Event-Webhook-Signature": {"x"}}, `[{"sg_event_id":"b2","event":"open"},{"sg_event_id":"a1","event":"delivered"}]`, "a1,b2"},
		{"sendgrid, an event without its id", http.Header{"X-Twilio-Email-Event-Webhook-Signature": {"x"}}, `[{"sg_event_id":"a1"},{"event":"open"}]`, ""},
		{"hubspot batch, numeric ids", http.Header{"X-Hubspot-Signature-V3": {"x"}}, `[{"eventId":100,"attemptNumber":2},{"eventId":7,"attemptNumber":2},{"eventId":7}]`, "100,7"},
		{"hubspot, not a batch", http.Header{"X-Hubspot-Signature-V3": {"x"}}, `{"eventId":1}`, ""},
		{"hubspot, an empty batch", http.Header{"X-Hubspot-Signature-V3": {"x"}}, `[]`, ""},
		{"mailgun", http.Header{"Content-Type": {"application/json"}}, `{"signature":{"timestamp":"1529006854","token":"tk1","signature":"ab"},"event-data":{"id":"e1"}}`, "tk1"},
		{"mailgun, a numeric timestamp", nil, `{"signature":{"timestamp":1529006854,"token":"tk2","signature":"ab"}}`, "tk2"},
		{"mailgun form", http.Header{"Content-Type": {"application/x-www-form-urlencoded; charset=utf-8"}}, "timestamp=1529006854&token=tk3&signature=ab&event=opened", "tk3"},
		{"mailgun without its token", nil, `{"signature":{"timestamp":"1529006854","signature":"ab"}}`, ""},
		{"a header sender before mailgun", http.Header{"Sentry-Hook-Signature": {"x"}}, `{"signature":{"timestamp":"1","token":"tk4","signature":"ab"}}`, ""},
	} {
		if got := errandapi.HookMessageID(c.header.Get, []byte(c.body)); got != c.want {
			t.Errorf("%s: HookMessageID = %q, want %q", c.name, got, c.want)
		}
		if named := errandapi.HookNamesTask(c.header.Get, []byte(c.body)); named != (c.want != "") {
			t.Errorf("%s: HookNamesTask = %v, want %v", c.name, named, c.want != "")
		}
	}
	if !errandapi.HookNamesTask(http.Header{"Idempotency-Key": {"k"}}.Get, nil) || errandapi.HookNamesTask(http.Header(nil).Get, nil) {
		t.Error("an Idempotency-Key names the task; no header does not")
	}
}
