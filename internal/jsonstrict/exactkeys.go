package jsonstrict

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/task"
)

// checkExactKeys refuses an object key that matches a field of t only
// without regard to case: encoding/json matches names case-insensitively,
// and the API promises that unknown fields are refused, so `"PAYLOAD"` or
// `"Delay"` is an unknown field. It also walks the value of a Nullable
// field, which encoding/json hands to Nullable's own UnmarshalJSON, so a
// nested object there gets the same check as any other. raw must be valid
// JSON: the check walks its bytes once, building nothing (no map, no copy
// of a value), and names the first offending key in the document with its
// full path. Decode also uses it to name where an unknown field is, which
// encoding/json does not say.
func checkExactKeys(raw []byte, t reflect.Type, prefix string) error {
	_, err := walkKeys(raw, skipSpace(raw, 0), t, prefix)
	return err
}

// walkKeys checks the keys of the value at b[i:] against type t and returns
// the index just past the value. Its two loops build a member's path only
// when that member's keys are walked: on the add path, a path built for
// every member cost 6 allocations a task (BenchmarkAddParse).
func walkKeys(b []byte, i int, t reflect.Type, prefix string) (int, error) {
	sh := shapeOf(t)
	switch {
	case sh.elem != nil && b[i] == '[':
		i = skipSpace(b, i+1)
		for n := 0; b[i] != ']'; n++ {
			var err error
			if shapeOf(sh.elem).walks() {
				i, err = walkKeys(b, i, sh.elem, prefix+"["+strconv.Itoa(n)+"]")
			} else {
				i = skipValue(b, i)
			}
			if err != nil {
				return 0, err
			}
			if i = skipSpace(b, i); b[i] == ',' {
				i = skipSpace(b, i+1)
			}
		}
		return i + 1, nil
	case sh.fields != nil && b[i] == '{':
		i = skipSpace(b, i+1)
		var seen uint64 // the fields met, by bit
		for b[i] != '}' {
			key, end := readKey(b, i)
			ft, ok := sh.fields[string(key)]
			if !ok {
				name := string(key)
				if name == "" {
					name = `""`
				}
				return 0, task.FieldErrorf(task.CodeInvalidArgument, Join(prefix, name), "unknown field")
			}
			// A field given twice would be decoded as the last, while
			// another reader of the same body (a proxy, a log) may take
			// the first: it is refused.
			bit := sh.bits[string(key)]
			if seen&bit != 0 {
				return 0, task.FieldErrorf(task.CodeInvalidArgument, Join(prefix, string(key)), "is given twice")
			}
			seen |= bit
			i = skipSpace(b, skipSpace(b, end)+1) // past the colon
			var err error
			if shapeOf(ft).walks() {
				i, err = walkKeys(b, i, ft, Join(prefix, string(key)))
			} else {
				i = skipValue(b, i)
			}
			if err != nil {
				return 0, err
			}
			if i = skipSpace(b, i); b[i] == ',' {
				i = skipSpace(b, i+1)
			}
		}
		return i + 1, nil
	}
	return skipValue(b, i), nil // null, or a value whose keys are not checked
}

// keyShape is what checkExactKeys needs to know of a type, with pointers
// and Nullable unwrapped: a slice's element type, or a struct's fields by
// exact JSON name; neither for a type whose keys are not checked
// (json.RawMessage, maps, scalars).
type keyShape struct {
	elem   reflect.Type
	fields map[string]reflect.Type
	// bits gives each field a bit of a set, to find one given twice (past
	// 64 fields, none: no errand type has so many).
	bits map[string]uint64
}

func (s *keyShape) walks() bool { return s.elem != nil || s.fields != nil }

var keyShapes sync.Map // reflect.Type → *keyShape

// shapeOf returns the keyShape of t, computed once per type.
func shapeOf(t reflect.Type) *keyShape {
	if s, ok := keyShapes.Load(t); ok {
		return s.(*keyShape)
	}
	u := valueType(t)
	s := &keyShape{}
	switch {
	case u == rawMessageType:
	case u.Kind() == reflect.Slice:
		s.elem = u.Elem()
	case u.Kind() == reflect.Struct:
		s.fields = jsonFields(u)
		s.bits = make(map[string]uint64, len(s.fields))
		n := 0
		for name := range s.fields {
			if n < 64 {
				s.bits[name] = 1 << n
			}
			n++
		}
	}
	keyShapes.Store(t, s)
	return s
}

var rawMessageType = reflect.TypeFor[json.RawMessage]()

// valueType is the type a value of type t decodes into, pointers and
// Nullable unwrapped.
func valueType(t reflect.Type) reflect.Type {
	for {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		inner, ok := nullableValue(t)
		if !ok {
			return t
		}
		t = inner
	}
}

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
