package mcp

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/errandhq/errand/errandapi"
)

// typeSchemas are the schemas of the wire types jsonschema cannot infer:
// a raw JSON value is any JSON, and a setting a PATCH can clear
// (errandapi.Nullable) is its value or null.
var typeSchemas = func() map[reflect.Type]*jsonschema.Schema {
	target := mustSchema[errandapi.Target](nil)
	target.Types = []string{"object", "null"}
	target.Type = ""
	signature := mustSchema[hookSignatureDoc](nil)
	signature.Types = []string{"object", "null"}
	signature.Type = ""
	enum(signature, "hash", "sha1", "sha256", "sha384", "sha512")
	enum(signature, "encoding", "hex", "base64")
	return map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[json.RawMessage]():                             {},
		reflect.TypeFor[errandapi.Nullable[float64]]():                 {Types: []string{"number", "null"}},
		reflect.TypeFor[errandapi.Nullable[int]]():                     {Types: []string{"integer", "null"}},
		reflect.TypeFor[errandapi.Nullable[int64]]():                   {Types: []string{"integer", "null"}},
		reflect.TypeFor[errandapi.Nullable[string]]():                  {Types: []string{"string", "null"}},
		reflect.TypeFor[errandapi.Nullable[errandapi.Target]]():        target,
		reflect.TypeFor[errandapi.Nullable[errandapi.HookSignature]](): signature,
	}
}()

// mustSchema infers T's schema (descriptions from `jsonschema` tags) with
// schemas for the types in ts; it panics, as a wrong schema is a
// programming error caught by any test.
func mustSchema[T any](ts map[reflect.Type]*jsonschema.Schema) *jsonschema.Schema {
	s, err := jsonschema.For[T](&jsonschema.ForOptions{TypeSchemas: ts})
	if err != nil {
		panic(err)
	}
	return s
}

// schemaOf is T's schema with errand's wire types described.
func schemaOf[T any]() *jsonschema.Schema { return mustSchema[T](typeSchemas) }

// asObject is a tool's input or output schema as MCP requires it: of type
// "object". One inferred from a pointer type says ["null", "object"],
// which the TypeScript SDK (Claude Desktop, Claude Code, the Inspector)
// refuses, and with it the whole tools/list.
func asObject(s *jsonschema.Schema, tool string) *jsonschema.Schema {
	switch {
	case s.Type == "object":
	case slices.Contains(s.Types, "object"):
		s.Type, s.Types = "object", nil
	default:
		panic(fmt.Sprintf("tool %s: a schema of type %q %v, not an object", tool, s.Type, s.Types))
	}
	return s
}

// enum limits a string property of s to values.
func enum(s *jsonschema.Schema, prop string, values ...string) {
	p := s.Properties[prop]
	for _, v := range values {
		p.Enum = append(p.Enum, v)
	}
}

// bounds sets an integer or number property's range.
func bounds(s *jsonschema.Schema, prop string, lo, hi float64) {
	p := s.Properties[prop]
	p.Minimum, p.Maximum = &lo, &hi
}

// refuseNulls drops null from the types of s's properties whose field of
// t is a plain pointer, for a tool that changes settings: there only a
// Nullable setting (or a raw JSON value) is cleared by null, as in the
// API's PATCH, which refuses any other null rather than answer a change as
// made while making none. Objects that are patches themselves (a pointer
// to a struct, such as a rule's schedule) are walked alike.
func refuseNulls(s *jsonschema.Schema, t reflect.Type) {
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			refuseNulls(s, f.Type)
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		p := s.Properties[name]
		if p == nil || f.Type.Kind() != reflect.Pointer {
			continue
		}
		if rest := slices.DeleteFunc(slices.Clone(p.Types), func(ty string) bool { return ty == "null" }); len(rest) == 1 {
			p.Type, p.Types = rest[0], nil
		}
		if f.Type.Elem().Kind() == reflect.Struct {
			refuseNulls(p, f.Type.Elem())
		}
	}
}
