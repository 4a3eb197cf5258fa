// Package jsonstrict decodes JSON strictly, as errand's APIs promise: an
// unknown field (matched by its exact name), a wrong type or trailing data
// is refused with an INVALID_ARGUMENT whose message starts with the full
// path of the field (`tasks[1].target.x: unknown field`), in the API's
// words rather than encoding/json's. The v1 handlers and the operations
// API's payloads both decode through it.
package jsonstrict

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strconv"
	"strings"

	"github.com/errandhq/errand/internal/task"
)

// Decode decodes raw into v, refusing unknown fields, wrong types and
// trailing data; the error names the field, under prefix ("" for a request
// body, "payload" for an operations payload, "tasks[3]" for one task of a
// batch).
func Decode(raw []byte, v any, prefix string) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		// raw up to the offset reached is the value decoded, without any
		// trailing data.
		return decodeError(err, raw[:dec.InputOffset()], reflect.TypeOf(v), prefix)
	}
	// dec.More() is false before a stray '}' or ']': look at the bytes.
	if len(TrimSpace(raw[dec.InputOffset():])) > 0 {
		return task.FieldErrorf(task.CodeInvalidArgument, PathOr(prefix, "body"), "unexpected data after the JSON value")
	}
	return checkExactKeys(raw, reflect.TypeOf(v), prefix)
}

// decodeError turns an error of encoding/json decoding value into t into
// the API's INVALID_ARGUMENT naming the field.
func decodeError(err error, value []byte, t reflect.Type, prefix string) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &te):
		field := typeErrorPath(value, t, te.Field, prefix)
		return task.FieldErrorf(task.CodeInvalidArgument, field, "%s", TypeMismatch(te.Type.Kind(), te.Value))
	case errors.As(err, &se):
		return task.FieldErrorf(task.CodeInvalidArgument, PathOr(prefix, "body"), "malformed JSON at byte %d: %v", se.Offset, se)
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return task.FieldErrorf(task.CodeInvalidArgument, PathOr(prefix, "body"), "malformed JSON: unexpected end")
	}
	msg := err.Error()
	if f, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		// encoding/json names the key but not where it is: the walk over
		// the keys (which assumes valid JSON) finds it with its path.
		if json.Valid(value) {
			if kerr := checkExactKeys(value, t, prefix); kerr != nil {
				return kerr
			}
		}
		f, _ = strconv.Unquote(f)
		if f == "" {
			f = `""`
		}
		return task.FieldErrorf(task.CodeInvalidArgument, Join(prefix, f), "unknown field")
	}
	return task.FieldErrorf(task.CodeInvalidArgument, PathOr(prefix, "body"), "%s", strings.TrimPrefix(msg, "json: "))
}

// TypeMismatch says what a field of kind must be, given encoding/json's
// description of the value sent (json.UnmarshalTypeError's Value):
// "string", "bool", or "number 1.5" for a number that does not fit the
// field (a fraction or an exponent for an integer, or a value past the
// type's range). The APIs' decoders and the worker protocol's frames word
// a wrong type with it alike.
func TypeMismatch(kind reflect.Kind, value string) string {
	want := jsonType(kind)
	lit, isNumber := strings.CutPrefix(value, "number ")
	switch {
	case !isNumber:
		if value == "bool" {
			value = "boolean"
		}
		return "must be " + want + ", not " + value
	case want == "an integer" && strings.ContainsAny(lit, ".eE"):
		return "must be an integer, not " + lit
	}
	return "is out of range: " + lit
}

// jsonType names the JSON a Go kind decodes from.
func jsonType(kind reflect.Kind) string {
	switch kind {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map, reflect.Pointer:
		return "an object"
	}
	return "a JSON value"
}

// Join is the path of field under prefix.
func Join(prefix, field string) string {
	if prefix == "" {
		return field
	}
	return prefix + "." + field
}

// PathOr is prefix, or def when prefix is "" (a whole request body).
func PathOr(prefix, def string) string {
	if prefix == "" {
		return def
	}
	return prefix
}

// TrimSpace trims the whitespace JSON allows (space, tab, CR, LF) and
// nothing else: bytes.TrimSpace would also take a form feed or U+0085,
// which JSON refuses.
func TrimSpace(b []byte) []byte {
	return bytes.Trim(b, " \t\r\n")
}
