package jsonstrict

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"testing"

	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/task"
)

// exactKeysByMaps is the check as it was before it walked the bytes, each
// object decoded by encoding/json, recursively, its members in document
// order (a key given twice is refused). It is the oracle
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
	fields := jsonFields(t)
	seen := map[string]bool{}
	for _, m := range membersInOrder(raw) {
		key, val := m.key, m.val
		ft, ok := fields[key]
		if !ok {
			if key == "" {
				key = `""`
			}
			return task.FieldErrorf(task.CodeInvalidArgument, Join(prefix, key), "unknown field")
		}
		if seen[key] {
			return task.FieldErrorf(task.CodeInvalidArgument, Join(prefix, key), "is given twice")
		}
		seen[key] = true
		if err := exactKeysByMaps(val, ft, Join(prefix, key)); err != nil {
			return err
		}
	}
	return nil
}

// member is one key and value of an object.
type member struct {
	key string
	val json.RawMessage
}

// membersInOrder lists the members of the object raw in document order, as
// encoding/json's decoder reads them (a key given twice, twice); nil for
// anything but an object.
func membersInOrder(raw []byte) []member {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	var out []member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		var val json.RawMessage
		if dec.Decode(&val) != nil {
			return nil
		}
		out = append(out, member{tok.(string), val})
	}
	return out
}

// FuzzCheckExactKeys: on any JSON the walk over the bytes refuses exactly
// what the decoder-based check refuses, naming the same field: the first
// offending key in document order (an unknown one, or one given twice).
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
			// Both go in document order: the same key is named.
			if g, w := got.(*task.Error), want.(*task.Error); *g != *w {
				t.Fatalf("%s on %q: walk %#v, oracle %#v", typ, raw, g, w)
			}
		}
	})
}
