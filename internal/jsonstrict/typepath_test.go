package jsonstrict

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/task"
)

// grid has arrays in arrays, of objects and of scalars.
type grid struct {
	Rows  []gridRow  `json:"rows"`
	Cells [][]string `json:"cells"`
}

type gridRow struct {
	Cells []int `json:"cells"`
}

func newGrid() any     { return new(grid) }
func taskArray() any   { return new([]errandapi.NewTask) }
func triggerPtr() any  { return new(*errandapi.TriggerRequest) }
func settingsReq() any { return new(errandapi.SettingsRequest) }

// TestTypeErrorNamesTheIndex: a wrong type inside an array is named with
// the index of each element on the way, at any depth, in a top-level
// array, after a key sent twice or in another case, and whatever the
// offsets before it (a Nullable's value decodes on its own).
func TestTypeErrorNamesTheIndex(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		raw, prefix, want string
		v                 func() any
	}{
		{`{"acks":[{"id":"a","leaseId":"b"},{"id":5,"leaseId":"b"}]}`, "", "acks[1].id: must be a string, not number", batchAck},
		{` { "acks" : [ {"id":"a"} , { "id" : 7 } ] } `, "", "acks[1].id: must be a string, not number", batchAck},
		{`{"acks":[{"id":"a"},5]}`, "", "acks[1]: must be an object, not number", batchAck},
		{`{"acks":5}`, "", "acks: must be an array, not number", batchAck},
		{`{"acks":[{"id":"a"}],"acks":[{"id":"a"},{"id":"b"},{"id":true}]}`, "", "acks[2].id: must be a string, not boolean", batchAck},
		{`{"ACKS":[{"id":"a"},{"ID":1}]}`, "", "acks[1].id: must be a string, not number", batchAck},
		{`{"acks":[{"id":5}]}`, "payload", "payload.acks[0].id: must be a string, not number", batchAck},
		// A top-level array, of objects and of what is not one.
		{`[{"payload":1},{"payload":[1,2],"delay":"x"}]`, "tasks", "tasks[1].delay: must be a number, not string", taskArray},
		{`[{"payload":1},{"target":{"webhook":5}}]`, "tasks", "tasks[1].target.webhook: must be a string, not number", taskArray},
		{`[{},{},"x"]`, "tasks", "tasks[2]: must be an object, not string", taskArray},
		{`[{},{"runAt":1.5}]`, "", "[1].runAt: must be an integer, not 1.5", taskArray},
		// Arrays of scalars, behind pointers.
		{`{"queue":"jobs/pq","hook":{"headers":["a",5]}}`, "", "hook.headers[1]: must be a string, not number", trigger},
		{`{"queue":"jobs/pq","task":{"queue":"jobs/q","on":["succeeded",true]}}`, "", "task.on[1]: must be a string, not boolean", triggerPtr},
		{`{"hook":{"secret":"whsec_x","headers":"X-A"}}`, "", "hook.headers: must be an array, not string", trigger},
		// Arrays in arrays.
		{`{"rows":[{"cells":[1]},{"cells":[1,2,"x"]}]}`, "", "rows[1].cells[2]: must be an integer, not string", newGrid},
		{`{"rows":[{"cells":[1]},{"cells":[1,2.5]}]}`, "", "rows[1].cells[1]: must be an integer, not 2.5", newGrid},
		{`{"cells":[["a"],["b",{"c":1}]]}`, "", "cells[1][1]: must be a string, not object", newGrid},
		{`{"cells":[["a"],"b"]}`, "", "cells[1]: must be an array, not string", newGrid},
		// In a Nullable, whose error's offset counts from its own value.
		{`{"name":"a-queue-with-a-long-name","ratePerSecond":"x"}`, "", "ratePerSecond: must be a number, not string", queue},
		{`{"name":"a-queue-with-a-long-name","target":{"webhook":5}}`, "", "target.webhook: must be a string, not number", queue},
		{`{"rateLimit":true}`, "", "rateLimit: must be a number, not boolean", settingsReq},
		{`{"hook":{"secret":1}}`, "", "hook.secret: must be a string, not number", trigger},
	} {
		err := Decode([]byte(c.raw), c.v(), c.prefix)
		te, ok := err.(*task.Error)
		if !ok || te.Code != task.CodeInvalidArgument || te.Message != c.want {
			t.Errorf("%s: %v, want %q", c.raw, err, c.want)
			continue
		}
		if field, _, _ := strings.Cut(c.want, ": "); te.Field != field {
			t.Errorf("%s: field %q, want %q", c.raw, te.Field, field)
		}
	}
}

// FuzzTypeErrorPath: on any JSON, a type error's path is encoding/json's
// field with indexes added, nothing else changed.
func FuzzTypeErrorPath(f *testing.F) {
	for _, s := range []string{
		`{"acks":[{"id":"a"},{"id":5}]}`, `{"acks":[1]}`, `[{"payload":1},{"delay":"x"}]`, `{"rows":[{"cells":[1,"x"]}]}`,
		`{"cells":[["a"],["b",1]]}`, `{"hook":{"headers":["a",5]}}`, `{"target":{"webhook":1}}`, `{"Acks":[{},{"leaseId":2}]}`,
	} {
		f.Add([]byte(s))
	}
	types := []reflect.Type{
		reflect.TypeFor[errandapi.BatchAckRequest](), reflect.TypeFor[[]errandapi.NewTask](), reflect.TypeFor[grid](),
		reflect.TypeFor[errandapi.TriggerRequest](), reflect.TypeFor[errandapi.QueueRequest](),
	}
	index := regexp.MustCompile(`\[([0-9]+)\]`)
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return
		}
		for _, typ := range types {
			var te *json.UnmarshalTypeError
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.DisallowUnknownFields()
			if err := dec.Decode(reflect.New(typ).Interface()); !errors.As(err, &te) {
				continue
			}
			path := typeErrorPath(raw, reflect.PointerTo(typ), te.Field, "p")
			want := "p"
			if te.Field != "" {
				want += "." + te.Field
			}
			if got := index.ReplaceAllString(path, ""); got != want {
				t.Fatalf("%s on %q: %q is not %q with indexes", typ, raw, path, want)
			}
		}
	})
}
