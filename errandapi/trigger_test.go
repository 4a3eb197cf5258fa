package errandapi_test

import (
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
		`{"event_id":"evt_9","event_type":"transaction.completed","notification_id":"ntf_1"}`: "evt_9",
		`{"event_id":"evt_9","event_type":"transaction.completed"}`:                           "",
	} {
		if got := errandapi.HookEventID([]byte(body)); got != want {
			t.Errorf("HookEventID(%s) = %q, want %q", body, got, want)
		}
	}
}
