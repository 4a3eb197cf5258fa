package jsonstrict

import (
	"encoding/json"
	"reflect"
	"strconv"
	"testing"

	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/task"
)

// exactKeysByMaps is the check as it was before it walked the bytes: each
// object decoded into a map of raw values, recursively. It is the oracle
// FuzzCheckExactKeys compares the walk with.
func exactKeysByMaps(raw []byte, t reflect.Type, prefix string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == rawMessageType:
		return nil
	case t.Kind() == reflect.Slice:
		var items []json.RawMessage
		if json.Unmarshal(raw, &items) != nil {
			return nil
		}
		for i, item := range items {
			if err := exactKeysByMaps(item, t.Elem(), prefix+"["+strconv.Itoa(i)+"]"); err != nil {
				return err
			}
		}
		return nil
	case t.Kind() != reflect.Struct:
		return nil
	}
	if inner, ok := nullableValue(t); ok {
		return exactKeysByMaps(raw, inner, prefix)
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return nil
	}
	fields := jsonFields(t)
	for key, val := range obj {
		ft, ok := fields[key]
		if !ok {
			if key == "" {
				key = `""`
			}
			return task.FieldErrorf(task.CodeInvalidArgument, Join(prefix, key), "unknown field")
		}
		if err := exactKeysByMaps(val, ft, Join(prefix, key)); err != nil {
			return err
		}
	}
	return nil
}

// FuzzCheckExactKeys: on any JSON the walk over the bytes refuses exactly
// what the map-based check refused, naming the same field when the body
// holds one offending key (with several, the maps named one at random; the
// walk names the first).
func FuzzCheckExactKeys(f *testing.F) {
	for _, s := range []string{
		`{"payload":{"A":1},"name":"x","target":{"webhook":"h"}}`, `{"PAYLOAD":1}`, `{"target":{"Webhook":"h"}}`,
		`{"pay\u006coad":1}`, `{"pay\u004coad":1}`, `{"":1}`, `{"target":null}`, `[{"payload":1},{"Name":"x"}]`,
		`{"acks":[{"id":"a","leaseId":"b"},{"id":"a","LeaseId":"b"}]}`, `{"target":{"webhook":"h","x":[{"y":"]}"}]}}`,
		`{"name":"a\"b\\","params":[1,{"k":"v"}],"delay":1.5e3,"runAt":-1}`, `{"acks":null}`, `{"acks":[null, 5]}`,
		` { "target" : { "function" : "f" } , "mode" : "push" } `, `{"ratePerSecond":null,"target":{"channel":"c","Z":1}}`,
	} {
		f.Add([]byte(s))
	}
	types := []reflect.Type{
		reflect.TypeFor[errandapi.NewTask](), reflect.TypeFor[*errandapi.QueueRequest](),
		reflect.TypeFor[errandapi.BatchAckRequest](), reflect.TypeFor[[]errandapi.NewTask](),
		reflect.TypeFor[errandapi.SettingsRequest](), reflect.TypeFor[map[string]json.RawMessage](),
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return
		}
		for _, typ := range types {
			got, want := checkExactKeys(raw, typ, "p"), exactKeysByMaps(raw, typ, "p")
			if (got == nil) != (want == nil) {
				t.Fatalf("%s on %q: walk %v, maps %v", typ, raw, got, want)
			}
			if got == nil {
				continue
			}
			// The maps visit keys in random order: one of 50 tries names
			// what the walk names unless the walk names a key they never do.
			g := got.(*task.Error)
			same := false
			for range 50 {
				w := exactKeysByMaps(raw, typ, "p").(*task.Error)
				if same = *g == *w; same {
					break
				}
			}
			if !same {
				t.Fatalf("%s on %q: walk %#v, maps %#v", typ, raw, g, want)
			}
		}
	})
}
