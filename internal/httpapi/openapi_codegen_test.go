package httpapi_test

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/errandhq/errand/internal/httpapi"
)

// The rules below are the ones whose breach broke client generators on the
// document (oapi-codegen, ogen) or left their types loose. They are held
// here on the document alone, with no generator: each names what a
// generator makes of the document and why the rule keeps it working.

// codegenDoc is the repository's document as plain JSON.
func codegenDoc(t *testing.T) map[string]any {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(httpapi.OpenAPI, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// goName is a name as a generator turns it into a Go identifier, folded:
// letters and digits only, lowercase (oapi-codegen and ogen both drop
// separators and capitalize, so "instance", "Instance" and "in-stance"
// become one type name).
func goName(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			return unicode.ToLower(r)
		}
		return -1
	}, s)
}

// componentSections are the components a generator makes a named type of.
var componentSections = []string{"schemas", "parameters", "responses", "requestBodies", "headers"}

// operations calls f with every operation of doc.
func operations(doc map[string]any, f func(method, path string, op map[string]any)) {
	for path, item := range doc["paths"].(map[string]any) {
		for method, op := range item.(map[string]any) {
			switch method {
			case "get", "put", "post", "delete", "options", "head", "patch", "trace":
				f(method, path, op.(map[string]any))
			}
		}
	}
}

// walk calls f with every JSON object of v and its pointer.
func walk(v any, ptr string, f func(ptr string, m map[string]any)) {
	switch x := v.(type) {
	case map[string]any:
		f(ptr, x)
		for k, c := range x {
			walk(c, ptr+"/"+strings.NewReplacer("~", "~0", "/", "~1").Replace(k), f)
		}
	case []any:
		for i, c := range x {
			walk(c, ptr+"/"+strconv.Itoa(i), f)
		}
	}
}

// types returns a schema's "type" as a list (a 3.1 type may be a list).
func types(m map[string]any) []string {
	switch t := m["type"].(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, x := range t {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// isSchemaAt reports whether the object at ptr is a schema: a value under
// a "schema" key, or anything below a component schema, a schema's
// properties, items, …. Examples and enums hold plain values, not schemas.
func isSchemaAt(ptr string) bool {
	return !strings.Contains(ptr, "/example") && !strings.Contains(ptr, "/enum/") && !strings.Contains(ptr, "/const")
}

// TestOpenAPICodegenComponentNames: no two components that generators turn
// into named types fold to one Go name. oapi-codegen refused the document
// ("duplicate typename 'Instance'") when the path parameter component
// "instance" met the schema "Instance".
func TestOpenAPICodegenComponentNames(t *testing.T) {
	t.Parallel()
	doc := codegenDoc(t)
	comps := doc["components"].(map[string]any)
	seen := map[string]string{}
	for _, section := range componentSections {
		m, _ := comps[section].(map[string]any)
		for key := range m {
			where := "#/components/" + section + "/" + key
			if prev, ok := seen[goName(key)]; ok {
				t.Errorf("%s and %s fold to one generated type name %q", prev, where, goName(key))
				continue
			}
			seen[goName(key)] = where
		}
	}
	// The rule as the audit found it, named on its own.
	params, _ := comps["parameters"].(map[string]any)
	schemas, _ := comps["schemas"].(map[string]any)
	for p := range params {
		for s := range schemas {
			if strings.EqualFold(p, s) {
				t.Errorf("component parameter %q has the name of the schema %q", p, s)
			}
		}
	}
}

// TestOpenAPICodegenOperationNames: no type a generator derives from an
// operationId (oapi-codegen's <Op>Response, <Op>Params, <Op>JSONBody,
// <Op>JSONRequestBody, …) is the name of a component. oapi-codegen's
// output did not compile when the operation "lease" made LeaseResponse,
// the name of a schema.
func TestOpenAPICodegenOperationNames(t *testing.T) {
	t.Parallel()
	doc := codegenDoc(t)
	comps := doc["components"].(map[string]any)
	names := map[string]string{}
	for _, section := range componentSections {
		m, _ := comps[section].(map[string]any)
		for key := range m {
			names[goName(key)] = "#/components/" + section + "/" + key
		}
	}
	ids := map[string]string{}
	operations(doc, func(method, path string, op map[string]any) {
		id, _ := op["operationId"].(string)
		if id == "" {
			t.Errorf("%s %s has no operationId", strings.ToUpper(method), path)
			return
		}
		if prev, ok := ids[goName(id)]; ok {
			t.Errorf("operationIds of %s and %s %s fold to one name %q", prev, strings.ToUpper(method), path, id)
		}
		ids[goName(id)] = strings.ToUpper(method) + " " + path
		for _, suffix := range []string{"Response", "Request", "Body", "Params", "JSONBody", "JSONRequestBody", "RequestBody", "Res", "OK"} {
			derived := strings.ToUpper(id[:1]) + id[1:] + suffix
			if c, ok := names[goName(derived)]; ok {
				t.Errorf("operationId %q (%s %s) makes the type %s, the name of %s", id, strings.ToUpper(method), path, derived, c)
			}
		}
	})
}

// TestOpenAPICodegenFormats: every number says its format (double), and
// every integer that is a time (epoch milliseconds: a property whose name
// ends in "At", or at, from, to, start) is int64, so generators make
// float64 and int64 rather than a float32 or a 32-bit int (epoch
// milliseconds passed 2^31 in 1970).
func TestOpenAPICodegenFormats(t *testing.T) {
	t.Parallel()
	doc := codegenDoc(t)
	walk(doc, "#", func(ptr string, m map[string]any) {
		if !isSchemaAt(ptr) {
			return
		}
		if slices.Contains(types(m), "number") && m["format"] != "double" && m["format"] != "float" {
			t.Errorf("%s: a number without a format (double)", ptr)
		}
		props, _ := m["properties"].(map[string]any)
		for name, p := range props {
			pm, ok := p.(map[string]any)
			if !ok || !slices.Contains(types(pm), "integer") {
				continue
			}
			if strings.HasSuffix(name, "At") || slices.Contains([]string{"at", "from", "to", "start"}, name) {
				if pm["format"] != "int64" {
					t.Errorf("%s/properties/%s: a time in epoch milliseconds without format int64", ptr, name)
				}
			}
		}
	})
}

// TestOpenAPICodegenTags: every operation has a tag of the document's tags
// list (generators group clients and pages by tag; docs/api.md's sections).
func TestOpenAPICodegenTags(t *testing.T) {
	t.Parallel()
	doc := codegenDoc(t)
	declared := map[string]bool{}
	list, _ := doc["tags"].([]any)
	for _, x := range list {
		tag, _ := x.(map[string]any)
		name, _ := tag["name"].(string)
		if name == "" || declared[name] {
			t.Errorf("tags: %v is unnamed or named twice", x)
		}
		declared[name] = true
	}
	used := map[string]bool{}
	operations(doc, func(method, path string, op map[string]any) {
		tags, _ := op["tags"].([]any)
		ok := false
		for _, tg := range tags {
			s, _ := tg.(string)
			used[s] = true
			ok = ok || declared[s]
		}
		if !ok {
			t.Errorf("%s %s has no tag of the top-level tags list (tags %v)", strings.ToUpper(method), path, tags)
		}
	})
	for name := range declared {
		if !used[name] {
			t.Errorf("tag %q names no operation", name)
		}
	}
}

// TestOpenAPICodegenSums: a oneOf or anyOf is the whole schema, its
// branches self-contained: no properties, required or
// additionalProperties beside it for a generator to merge into (or drop
// from) every branch. oapi-codegen and ogen made loose or no types of the
// add result and the batch ack result when their branches only narrowed
// properties declared beside the oneOf.
func TestOpenAPICodegenSums(t *testing.T) {
	t.Parallel()
	doc := codegenDoc(t)
	walk(doc, "#", func(ptr string, m map[string]any) {
		if !isSchemaAt(ptr) {
			return
		}
		for _, kw := range []string{"oneOf", "anyOf"} {
			branches, ok := m[kw].([]any)
			if !ok {
				continue
			}
			for _, sib := range []string{"properties", "required", "additionalProperties"} {
				if _, ok := m[sib]; ok {
					t.Errorf("%s: %s beside %s", ptr, sib, kw)
				}
			}
			for i, b := range branches {
				bm, _ := b.(map[string]any)
				if _, ref := bm["$ref"]; ref || len(types(bm)) > 0 {
					continue
				}
				t.Errorf("%s/%s/%d: a branch that is neither a $ref nor a typed schema", ptr, kw, i)
			}
		}
	})
}
