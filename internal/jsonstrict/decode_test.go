package jsonstrict

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/task"
)

// TestDecodeNamesTheField: every refusal is INVALID_ARGUMENT, its message
// starts with the field's full path (an unknown key nested in an object or
// an array included, which encoding/json names without its path), and no
// message carries encoding/json's or Go's words.
func TestDecodeNamesTheField(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		raw, prefix, want string
		v                 func() any
	}{
		// Unknown keys, at every depth.
		{`{"payload":1,"target":{"webhook":"http://x","Extra":1}}`, "", "target.Extra: unknown field", newTask},
		{`{"payload":1,"target":{"function":"a/b","x":1}}`, "tasks[1]", "tasks[1].target.x: unknown field", newTask},
		{`{"acks":[{"id":"x","leaseId":"y"},{"id":"x","leaseId":"y","extra":1}]}`, "", "acks[1].extra: unknown field", batchAck},
		{`{"queue":"jobs/pq","hook":{"bogus":1}}`, "", "hook.bogus: unknown field", trigger},
		{`{"queue":"jobs/pq","schedule":{"cron":"@daily","Bogus":1}}`, "", "schedule.Bogus: unknown field", trigger},
		{`{"queue":"jobs/pq","task":{"queue":"jobs/q","x":1}}`, "", "task.x: unknown field", trigger},
		{`{"x":1}`, "", "x: unknown field", newTask},
		// A field given twice, at every depth; the same field in two
		// objects of a list is two fields.
		{`{"name":"a","payload":1,"name":"b"}`, "", "name: is given twice", newTask},
		{`{"target":{"webhook":"http://x","webhook":"http://y"}}`, "", "target.webhook: is given twice", newTask},
		{`{"acks":[{"id":"x","leaseId":"y"},{"id":"x","leaseId":"y","id":"z"}]}`, "", "acks[1].id: is given twice", batchAck},
		{`{"queue":"jobs/pq","queue":"jobs/default","hook":{}}`, "", "queue: is given twice", trigger},
		// Trailing data does not hide where the unknown key is.
		{`{"target":{"function":"a/b","x":1}} }`, "", "target.x: unknown field", newTask},
		// An operations payload, under "payload".
		{`"x"`, "payload", "payload: must be an object, not string", dlq},
		{`{"queue":1}`, "payload", "payload.queue: must be a string, not number", dlq},
		{`{"instance":"jobs","x":1}`, "payload", "payload.x: unknown field", dlq},
		{`{"Queue":"q"}`, "payload", "payload.Queue: unknown field", dlq},
		{`{"instance":"jobs"`, "payload", "payload: malformed JSON", dlq},
		// Integers, numbers and the value sent.
		{`{"maxAttempts":1.0}`, "", "maxAttempts: must be an integer, not 1.0", queue},
		{`{"maxAttempts":1e2}`, "", "maxAttempts: must be an integer, not 1e2", queue},
		{`{"maxAttempts":"3"}`, "", "maxAttempts: must be an integer, not string", queue},
		{`{"maxAttempts":99999999999999999999}`, "", "maxAttempts: is out of range: 99999999999999999999", queue},
		{`{"delay":1e400}`, "", "delay: is out of range: 1e400", newTask},
		{`{"delay":"soon"}`, "", "delay: must be a number, not string", newTask},
		{`{"name":true}`, "", "name: must be a string, not boolean", newTask},
		{`{"paused":1}`, "", "paused: must be true or false, not number", queue},
		{`5`, "tasks", "tasks: must be an array, not number", tasks},
	} {
		err := Decode([]byte(c.raw), c.v(), c.prefix)
		te, ok := err.(*task.Error)
		if !ok || te.Code != task.CodeInvalidArgument || !strings.HasPrefix(te.Message, c.want) {
			t.Errorf("%s: %v, want %q", c.raw, err, c.want)
			continue
		}
		if !strings.HasPrefix(c.want, te.Field+":") {
			t.Errorf("%s: field %q, message %q", c.raw, te.Field, te.Message)
		}
		for _, goWords := range []string{"json:", "Go ", "errandapi.", "int64", "float64", "struct"} {
			if strings.Contains(te.Message, goWords) {
				t.Errorf("%s: %q says %q", c.raw, te.Message, goWords)
			}
		}
	}
}

func newTask() any  { return new(errandapi.NewTask) }
func batchAck() any { return new(errandapi.BatchAckRequest) }
func trigger() any  { return new(errandapi.TriggerRequest) }
func dlq() any      { return new(errandapi.DLQSelector) }
func queue() any    { return new(errandapi.QueueRequest) }
func tasks() any    { return new([]json.RawMessage) }

// TestMembers: the members of an object in document order, duplicates
// and escaped keys as a decoder reads them.
func TestMembers(t *testing.T) {
	t.Parallel()
	var got []string
	for k, v := range Members([]byte(` { "a" : 1 , "t\u0061sks":[1,{"b":"}"}], "a":"x" } `[1:])) {
		got = append(got, k+"="+string(v))
	}
	if want := `a=1|tasks=[1,{"b":"}"}]|a="x"`; strings.Join(got, "|") != want {
		t.Fatalf("%q, want %q", got, want)
	}
}
