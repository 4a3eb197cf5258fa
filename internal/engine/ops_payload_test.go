package engine_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/task"
)

// TestCheckOpsPayloadNamesTheField: a bad payload is INVALID_ARGUMENT whose
// message starts with the field under payload, in the API's words, never
// encoding/json's ("json: cannot unmarshal … into Go struct field …").
func TestCheckOpsPayloadNamesTheField(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ kind, payload, want string }{
		{task.KindDLQReplay, `"x"`, "payload: must be an object, not string"},
		{task.KindDLQReplay, `{"instance":"jobs","queue":1}`, "payload.queue: must be a string, not number"},
		{task.KindDLQPurge, `{"instance":"jobs","queue":"q","x":1}`, "payload.x: unknown field"},
		{task.KindDLQPurge, `{"instance":"jobs","ids":[1]}`, "payload.ids[0]: must be a string, not number"},
		{task.KindDLQReplay, `{"instance":"jobs","Queue":"q"}`, "payload.Queue: unknown field"},
		{task.KindBackupExport, `{"surprise":true}`, "payload.surprise: unknown field"},
		{task.KindInstanceBackup, `{"instance":7}`, "payload.instance: must be a string, not number"},
	} {
		err := engine.CheckOpsPayload(c.kind, json.RawMessage(c.payload))
		te, ok := err.(*task.Error)
		if !ok || te.Code != task.CodeInvalidArgument || !strings.HasPrefix(te.Message, c.want) || strings.Contains(te.Message, "json:") {
			t.Errorf("%s %s: %v, want %q", c.kind, c.payload, err, c.want)
		}
	}
	if err := engine.CheckOpsPayload(task.KindDLQReplay, json.RawMessage(`{"instance":"jobs","queue":"q"}`)); err != nil {
		t.Fatal(err)
	}
}
