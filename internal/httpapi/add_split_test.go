package httpapi

import (
	"encoding/json"
	"reflect"
	"strconv"
	"testing"

	"github.com/errandhq/errand/internal/jsonstrict"
	"github.com/errandhq/errand/internal/task"
)

// parseAddDecodingTwice is parseAdd as it was before it split bodies by a walk:
// the array or envelope decoded first, then each task. It is the oracle
// FuzzParseAddSplit compares parseAdd with.
func parseAddDecodingTwice(raw []byte, source string) ([]task.AddInput, error) {
	raw = jsonstrict.TrimSpace(raw)
	var items []json.RawMessage
	prefix := func(i int) string { return "tasks[" + strconv.Itoa(i) + "]" }
	switch {
	case len(raw) > 0 && raw[0] == '[':
		if err := jsonstrict.Decode(raw, &items, "tasks"); err != nil {
			return nil, err
		}
	case len(raw) > 0 && raw[0] == '{':
		var env map[string]json.RawMessage
		if err := jsonstrict.Decode(raw, &env, ""); err != nil {
			return nil, err
		}
		if t, ok := env["tasks"]; ok && len(env) == 1 {
			// The map keeps the last of a key given twice: the exact-keys
			// check of an envelope struct tells.
			var once struct {
				Tasks json.RawMessage `json:"tasks"`
			}
			if err := jsonstrict.Decode(raw, &once, ""); err != nil {
				return nil, err
			}
			if err := jsonstrict.Decode(t, &items, "tasks"); err != nil {
				return nil, err
			}
			if items == nil {
				return nil, task.FieldErrorf(task.CodeInvalidArgument, "tasks", "must be an array of tasks")
			}
		} else {
			items = []json.RawMessage{raw}
			prefix = func(int) string { return "" }
		}
	default:
		return nil, badAddBody
	}
	return parseItems(items, prefix, source)
}

// FuzzParseAddSplit: splitting a body by a walk over its bytes reads every
// body as decoding it first did: the same tasks, or the same refusal.
func FuzzParseAddSplit(f *testing.F) {
	for _, s := range []string{
		`{"payload":{"orderId":"o-1"},"name":"r-1","delay":60}`, `[{"payload":1},{"name":"a"}]`, ` [ {"payload" : [1,"]"]} , {} ] `,
		`{"tasks":[{"payload":[1,2]},{"runAt":5}]}`, `[null]`, `{"tasks":[null]}`, `{"PAYLOAD":1}`, `{"tasks":5}`, `{"tasks":{}}`,
		`{"target":{"webhook":"https://example.com/h"}}`, "{\"payload\":\"\xff\"}", `{"tasks":null}`, `[]`, `{}`, `{"tasks":[]}`,
		`{"tasks":[{"name":"a"}],"tasks":[{"name":"b"},{}]}`, `{"ta\u0073ks":[{"name":"a"}]}`, `{"tasks":[{}],"name":"x"}`,
		`[{"name":1}] x`, `[{"name":"a"},]`, `{"tasks":[1]`, `["x"]`, `[{"Name":"a"}]`, `[{"target":{"Webhook":"h"}}]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, gotErr := parseAdd(raw, task.SourceAPI)
		want, wantErr := parseAddDecodingTwice(raw, task.SourceAPI)
		if !reflect.DeepEqual(gotErr, wantErr) {
			t.Fatalf("%q: error %#v, decoding first %#v", raw, gotErr, wantErr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: tasks %+v, decoding first %+v", raw, got, want)
		}
	})
}
