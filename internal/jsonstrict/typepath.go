package jsonstrict

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"strings"
)

// typeErrorPath is the full path, under prefix, of the value a type error
// of encoding/json names with field when it decodes value (valid JSON)
// into t: field with the index of each array element on the way
// (`acks.id` → `acks[0].id`, `hook.headers` → `hook.headers[1]`).
func typeErrorPath(value []byte, t reflect.Type, field, prefix string) string {
	rel := "." + field
	if field == "" {
		rel = ""
	}
	if json.Valid(value) {
		rel = indexedField(value, t, field)
	}
	switch {
	case rel == "":
		return PathOr(prefix, "body")
	case rel[0] == '[':
		return prefix + rel
	}
	return Join(prefix, rel[1:])
}

// indexedField is the path, relative to raw (valid JSON) decoded into t,
// of the value encoding/json names field in its type error: "" for raw
// itself, else ".name…" or "[i]…". encoding/json names no array index,
// and its offsets count from different points (past an object's brace, at
// a literal's end, from the start of a Nullable's value), so the elements
// of each array on the way are decoded again, one by one, until one fails
// as the whole did. It runs only for a refusal.
func indexedField(raw []byte, t reflect.Type, field string) string {
	t = valueType(t)
	raw = TrimSpace(raw)
	switch {
	case len(raw) == 0 || decodesItself(t):
		// Such a value is refused whole, or names its fields its own way.
	case raw[0] == '[' && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array):
		for i, item := range SplitArray(raw) {
			if te := typeError(item, t.Elem()); te != nil {
				return "[" + strconv.Itoa(i) + "]" + indexedField(item, t.Elem(), te.Field)
			}
		}
	case raw[0] == '{' && t.Kind() == reflect.Struct && field != "":
		name, _, _ := strings.Cut(field, ".")
		ft, ok := shapeOf(t).fields[name]
		if !ok {
			break
		}
		// encoding/json matches a key to a field without regard to case,
		// and a key sent twice is decoded twice: the first that fails.
		for key, v := range Members(raw) {
			if !strings.EqualFold(key, name) {
				continue
			}
			if te := typeError(v, ft); te != nil {
				return "." + name + indexedField(v, ft, te.Field)
			}
		}
	}
	if field == "" {
		return ""
	}
	return "." + field
}

// decodesItself reports whether a value of type t decodes itself from
// JSON or text.
func decodesItself(t reflect.Type) bool {
	p := reflect.PointerTo(t)
	return p.Implements(reflect.TypeFor[json.Unmarshaler]()) || p.Implements(reflect.TypeFor[encoding.TextUnmarshaler]())
}

// typeError is the type error of decoding raw alone into a new value of
// type t, as Decode does, or nil when it has none.
func typeError(raw []byte, t reflect.Type) *json.UnmarshalTypeError {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var te *json.UnmarshalTypeError
	if err := dec.Decode(reflect.New(t).Interface()); errors.As(err, &te) {
		return te
	}
	return nil
}
