package httpapi

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/task"
)

// checkExactKeys refuses an object key that matches a field of v only
// without regard to case: encoding/json matches names case-insensitively,
// and the API promises that unknown fields are refused, so `"PAYLOAD"` or
// `"Delay"` is an unknown field. It also walks the value of a Nullable
// field, which encoding/json hands to Nullable's own UnmarshalJSON, so a
// nested object there gets the same check as any other. raw has already
// decoded into v without error, so it is valid JSON: the check walks its
// bytes once, building nothing (no map, no copy of a value), and names the
// first offending key in the document.
func checkExactKeys(raw []byte, t reflect.Type, prefix string) error {
	_, err := walkKeys(raw, skipSpace(raw, 0), t, prefix)
	return err
}

// walkKeys checks the keys of the value at b[i:] against type t and returns
// the index just past the value.
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
		for b[i] != '}' {
			end := skipString(b, i)
			key := b[i+1 : end-1]
			if bytes.IndexByte(key, '\\') >= 0 || !utf8.Valid(key) {
				var s string                     // unescaped, invalid UTF-8 as U+FFFD: as the decoder reads a key
				_ = json.Unmarshal(b[i:end], &s) // valid JSON: cannot fail
				key = []byte(s)
			}
			ft, ok := sh.fields[string(key)]
			if !ok {
				name := string(key)
				if name == "" {
					name = `""`
				}
				return 0, task.FieldErrorf(task.CodeInvalidArgument, join(prefix, name), "unknown field")
			}
			i = skipSpace(b, skipSpace(b, end)+1) // past the colon
			var err error
			if shapeOf(ft).walks() {
				i, err = walkKeys(b, i, ft, join(prefix, string(key)))
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
}

func (s *keyShape) walks() bool { return s.elem != nil || s.fields != nil }

var keyShapes sync.Map // reflect.Type → *keyShape

// shapeOf returns the keyShape of t, computed once per type.
func shapeOf(t reflect.Type) *keyShape {
	if s, ok := keyShapes.Load(t); ok {
		return s.(*keyShape)
	}
	u := t
	for {
		for u.Kind() == reflect.Pointer {
			u = u.Elem()
		}
		inner, ok := nullableValue(u)
		if !ok {
			break
		}
		u = inner
	}
	s := &keyShape{}
	switch {
	case u == rawMessageType:
	case u.Kind() == reflect.Slice:
		s.elem = u.Elem()
	case u.Kind() == reflect.Struct:
		s.fields = jsonFields(u)
	}
	keyShapes.Store(t, s)
	return s
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

// The scanners below step over valid JSON (the decoder has checked it);
// each takes the index of a token's first byte and returns the index just
// past it.

// skipSpace skips the whitespace JSON allows.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString steps over the string starting at b[i] == '"'.
func skipString(b []byte, i int) int {
	for i++; ; i++ {
		switch b[i] {
		case '\\':
			i++ // the escaped byte (for \u, its hex digits are plain bytes)
		case '"':
			return i + 1
		}
	}
}

// skipValue steps over the value starting at b[i]: a string, an object or
// array (with everything in it), or a number or literal.
func skipValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for {
			switch b[i] {
			case '"':
				i = skipString(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
			i++
		}
	}
	for i < len(b) && !strings.ContainsRune(",]} \t\r\n", rune(b[i])) {
		i++
	}
	return i
}

// splitArray returns the elements of the valid JSON array b, as slices of b.
func splitArray(b []byte) []json.RawMessage {
	var items []json.RawMessage
	i := skipSpace(b, 1)
	for b[i] != ']' {
		end := skipValue(b, i)
		items = append(items, b[i:end:end])
		if i = skipSpace(b, end); b[i] == ',' {
			i = skipSpace(b, i+1)
		}
	}
	return items
}

// envelopeTasks returns the value of "tasks" when the valid JSON object b
// has that key alone (more than once, the last counts, as a decoder keeps
// it), and ok false for any other object.
func envelopeTasks(b []byte) (tasks []byte, ok bool) {
	i := skipSpace(b, 1)
	for b[i] != '}' {
		end := skipString(b, i)
		key := b[i+1 : end-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			var s string
			_ = json.Unmarshal(b[i:end], &s) // valid JSON: cannot fail
			key = []byte(s)
		}
		if string(key) != "tasks" {
			return nil, false
		}
		i = skipSpace(b, skipSpace(b, end)+1) // past the colon
		end = skipValue(b, i)
		tasks, ok = b[i:end:end], true
		if i = skipSpace(b, end); b[i] == ',' {
			i = skipSpace(b, i+1)
		}
	}
	return tasks, ok
}
