package jsonstrict

import (
	"reflect"

	"github.com/errandhq/errand/internal/task"
)

// DecodePatch is Decode for the body of a PATCH, where a field left out
// keeps its setting: it also refuses a null that cannot clear its field.
// Only an errandapi.Nullable or a json.RawMessage field takes null (to
// clear the setting); encoding/json decodes null into any other field as
// if it were left out, which would answer a change as made while making
// none. The objects of the body that are patches themselves (a plain
// pointer to a struct, such as a trigger's schedule) are checked alike; a
// Nullable's value or an array's elements replace the setting whole, and
// their nulls mean "left out", as in a create. A body of null changes
// nothing, as {} does.
func DecodePatch(raw []byte, v any, prefix string) error {
	if err := Decode(raw, v, prefix); err != nil {
		return err
	}
	return checkNulls(TrimSpace(raw), reflect.TypeOf(v), prefix)
}

// checkNulls refuses the first null member of the object b (valid JSON,
// its keys exact) whose field of t cannot take null, and checks the
// members that are patches themselves.
func checkNulls(b []byte, t reflect.Type, prefix string) error {
	fields := patchFields(t)
	if fields == nil || len(b) == 0 || b[0] != '{' {
		return nil
	}
	for key, v := range Members(b) {
		ft, ok := fields[key]
		if !ok {
			continue
		}
		path := Join(prefix, key)
		if string(v) != "null" {
			if err := checkNulls(v, ft, path); err != nil {
				return err
			}
			continue
		}
		if _, nullable := nullableValue(ft); !nullable && ft != rawMessageType {
			return task.FieldErrorf(task.CodeInvalidArgument, path, "cannot be null: leave it out to keep the current value")
		}
	}
	return nil
}

// patchFields are the fields by exact JSON name of t, pointers unwrapped,
// when it is a struct other than a Nullable; nil otherwise.
func patchFields(t reflect.Type) map[string]reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if _, nullable := nullableValue(t); nullable || t.Kind() != reflect.Struct {
		return nil
	}
	return shapeOf(t).fields
}
