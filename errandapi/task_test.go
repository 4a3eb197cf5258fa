package errandapi_test

import (
	"testing"

	"github.com/errandhq/errand/errandapi"
)

// TestTargetString: a target named for people, a webhook's headers by
// name only.
func TestTargetString(t *testing.T) {
	for _, c := range []struct {
		t    *errandapi.Target
		want string
	}{
		{nil, ""},
		{&errandapi.Target{Webhook: "https://x/in"}, "webhook https://x/in"},
		{&errandapi.Target{Webhook: "https://x/in", Headers: map[string]string{"X-Api-Key": "k", "Authorization": "b"}}, "webhook https://x/in with headers Authorization, X-Api-Key"},
		{&errandapi.Target{Function: "app/f"}, "function app/f"},
		{&errandapi.Target{Channel: "room-1"}, "channel room-1"},
	} {
		if got := c.t.String(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.t, got, c.want)
		}
	}
}
