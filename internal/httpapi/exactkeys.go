package httpapi

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"

	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/task"
)

// checkExactKeys refuses an object key that matches a field of v only
// without regard to case: encoding/json matches names case-insensitively,
// and the API promises that unknown fields are refused, so `"PAYLOAD"` or
// `"Delay"` is an unknown field. It also walks the value of a Nullable
// field, which encoding/json hands to Nullable's own UnmarshalJSON, so a
// nested object there gets the same check as any other. raw has already
// decoded into v without error.
func checkExactKeys(raw []byte, t reflect.Type, prefix string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == rawMessageType:
		return nil
	case t.Kind() == reflect.Slice:
		var items []json.RawMessage
		if json.Unmarshal(raw, &items) != nil {
			return nil // null, or already refused by the decoder
		}
		for i, item := range items {
			if err := checkExactKeys(item, t.Elem(), prefix+"["+strconv.Itoa(i)+"]"); err != nil {
				return err
			}
		}
		return nil
	case t.Kind() != reflect.Struct:
		return nil
	}
	if inner, ok := nullableValue(t); ok {
		return checkExactKeys(raw, inner, prefix)
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
			return task.FieldErrorf(task.CodeInvalidArgument, join(prefix, key), "unknown field")
		}
		if err := checkExactKeys(val, ft, join(prefix, key)); err != nil {
			return err
		}
	}
	return nil
}

var rawMessageType = reflect.TypeFor[json.RawMessage]()

// nullableValue returns the type T of a Nullable[T].
func nullableValue(t reflect.Type) (reflect.Type, bool) {
	if t.PkgPath() != reflect.TypeFor[errandapi.Nullable[int]]().PkgPath() || !strings.HasPrefix(t.Name(), "Nullable[") {
		return nil, false
	}
	f, _ := t.FieldByName("Value")
	return f.Type, true
}

// jsonFields maps each exact JSON name of struct t to its field's type.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	m := make(map[string]reflect.Type, t.NumField())
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch name {
		case "-":
			continue
		case "":
			name = f.Name
		}
		m[name] = f.Type
	}
	return m
}
