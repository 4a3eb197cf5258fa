package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"

	"github.com/errandhq/errand/internal/task"
)

// maxBody bounds a request body: 100 tasks with 64 KiB payloads and params.
const maxBody = 16 << 20

// readBody reads a whole request body up to maxBody.
func readBody(r *http.Request) ([]byte, error) {
	b, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, maxBody))
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return nil, task.Errorf(task.CodePayloadTooLarge, "the request body is over %d bytes", maxBody)
	}
	if err != nil {
		return nil, task.Errorf(task.CodeInvalidArgument, "reading the body: %v", err)
	}
	return b, nil
}

// decodeStrict decodes raw into v, refusing unknown fields, wrong types and
// trailing data; the error names the field (prefixed by prefix).
func decodeStrict(raw []byte, v any, prefix string) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err, prefix)
	}
	// dec.More() is false before a stray '}' or ']': look at the bytes.
	if len(trimJSONSpace(raw[dec.InputOffset():])) > 0 {
		return task.FieldErrorf(task.CodeInvalidArgument, fieldOr(prefix, "body"), "unexpected data after the JSON value")
	}
	return checkExactKeys(raw, reflect.TypeOf(v), prefix)
}

// decodeBody reads and strictly decodes a request body; an empty body
// decodes as {}.
func decodeBody(r *http.Request, v any) error {
	raw, err := readBody(r)
	if err != nil {
		return err
	}
	if len(trimJSONSpace(raw)) == 0 {
		raw = []byte("{}")
	}
	return decodeStrict(raw, v, "")
}

// trimJSONSpace trims the whitespace JSON allows (space, tab, CR, LF) and
// nothing else: bytes.TrimSpace would also take a form feed or U+0085,
// which JSON refuses.
func trimJSONSpace(b []byte) []byte {
	return bytes.Trim(b, " \t\r\n")
}

func jsonError(err error, prefix string) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &te):
		field := te.Field
		if field == "" {
			field = "body"
		}
		return task.FieldErrorf(task.CodeInvalidArgument, join(prefix, field), "must be %s, not %s", jsonType(te.Type.Kind().String()), te.Value)
	case errors.As(err, &se):
		return task.FieldErrorf(task.CodeInvalidArgument, fieldOr(prefix, "body"), "malformed JSON at byte %d: %v", se.Offset, se)
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return task.FieldErrorf(task.CodeInvalidArgument, fieldOr(prefix, "body"), "malformed JSON: unexpected end")
	}
	msg := err.Error()
	if f, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		f, _ = strconv.Unquote(f)
		if f == "" {
			f = `""`
		}
		return task.FieldErrorf(task.CodeInvalidArgument, join(prefix, f), "unknown field")
	}
	return task.FieldErrorf(task.CodeInvalidArgument, fieldOr(prefix, "body"), "%s", strings.TrimPrefix(msg, "json: "))
}

func jsonType(kind string) string {
	switch kind {
	case "int", "int64", "int32", "float64", "float32", "uint", "uint64":
		return "a number"
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	case "slice":
		return "an array"
	case "struct", "map", "ptr":
		return "an object"
	}
	return kind
}

func join(prefix, field string) string {
	if prefix == "" {
		return field
	}
	return prefix + "." + field
}

func fieldOr(prefix, def string) string {
	if prefix == "" {
		return def
	}
	return prefix
}

// writeJSON answers v as JSON with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// queryInt parses an optional integer query parameter.
func queryInt(r *http.Request, name string, def, lo, hi int) (int, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < lo || n > hi {
		return 0, task.FieldErrorf(task.CodeInvalidArgument, name, "must be an integer %d–%d", lo, hi)
	}
	return n, nil
}
