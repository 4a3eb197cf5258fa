package jsonstrict

import (
	"testing"

	"github.com/errandhq/errand/internal/task"
)

// TestDecodePatchRefusesNull: in a PATCH, null is refused for a field it
// cannot clear, at any depth of the objects that are patches, and taken
// for a Nullable or a raw JSON value; Decode (a create) still reads it as
// left out.
func TestDecodePatchRefusesNull(t *testing.T) {
	t.Parallel()
	const tail = ": cannot be null: leave it out to keep the current value"
	for _, c := range []struct {
		raw, want string
		v         func() any
	}{
		{`{"maxAttempts":null}`, "maxAttempts" + tail, queue},
		{`{"paused":true,"mode":null}`, "mode" + tail, queue},
		{`{"maxAttempts":3,"maxAttempts":null}`, "maxAttempts: is given twice", queue},
		{`{"max\u0041ttempts":null}`, "maxAttempts" + tail, queue},
		{`{"name":null}`, "name" + tail, queue},
		{`{"retentionDays":null}`, "retentionDays" + tail, settingsReq},
		{`{"enabled":null}`, "enabled" + tail, trigger},
		{`{"id":null}`, "id" + tail, trigger},
		{`{"schedule":null}`, "schedule" + tail, trigger},
		{`{"schedule":{"cron":"@daily","timeZone":null}}`, "schedule.timeZone" + tail, trigger},
		{`{"hook":{"secret":null,"headers":null}}`, "hook.headers" + tail, triggerPtr},
		{`{"task":{"queue":"jobs/q","on":null}}`, "task.on" + tail, trigger},
		// Decode's refusals come first.
		{`{"maxAttempts":null,"x":1}`, "x: unknown field", queue},
		{`{"maxAttempts":null,"paused":1}`, "paused: must be true or false, not number", queue},
		// Null clears a Nullable or a raw JSON value.
		{`{"target":null,"ratePerSecond":null,"maxConcurrent":null,"maxAgeSeconds":null,"deadLetterQueue":null}`, "", queue},
		{`{"rateLimit":null}`, "", settingsReq},
		{`{"params":null,"payload":null,"hook":{"secret":null}}`, "", trigger},
		// A Nullable's value and an array replace the setting whole.
		{`{"target":{"webhook":null,"function":"a/b"}}`, "", queue},
		{`{"hook":{"headers":["X-A",null]}}`, "", trigger},
		// A body of null changes nothing, as {} does.
		{` null `, "", queue},
		{`{}`, "", trigger},
	} {
		err := DecodePatch([]byte(c.raw), c.v(), "")
		if c.want == "" {
			if err != nil {
				t.Errorf("%s: %v", c.raw, err)
			}
			continue
		}
		te, ok := err.(*task.Error)
		if !ok || te.Code != task.CodeInvalidArgument || te.Message != c.want {
			t.Errorf("%s: %v, want %q", c.raw, err, c.want)
		}
	}
	// A create reads null as left out.
	if err := Decode([]byte(`{"name":"q","maxAttempts":null,"mode":null}`), queue(), ""); err != nil {
		t.Fatal(err)
	}
}
