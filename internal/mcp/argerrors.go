package mcp

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/errandhq/errand/errandapi"
)

// nonEmpty are the string arguments that name something (an instance, a
// queue, a task, a lease, a schedule): an empty one is refused by the
// schema, naming it, rather than sent as "not given" (a task added
// without its name) or as a path with a hole in it.
var nonEmpty = map[string]bool{"instance": true, "queue": true, "id": true, "name": true, "leaseId": true, "cron": true, "timeZone": true}

// requireNames sets minLength 1 on s's nonEmpty string properties, at any
// depth (a task of tasks_add has a name).
func requireNames(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	for name, p := range s.Properties {
		if nonEmpty[name] && (p.Type == "string" || slices.Contains(p.Types, "string")) {
			one := 1
			p.MinLength = &one
		}
		requireNames(p)
	}
	requireNames(s.Items)
}

// argumentError words a schema's refusal of a call's arguments as the API
// words a field's: the argument first ("tasks[2].name: must not be
// empty"), then what it must be. The schema's error names a place in the
// schema, not in the arguments: badItem tells which item of a list
// argument is refused (-1 when it cannot tell). In a tool that changes
// settings (patch), a refused null says how to keep the setting.
func argumentError(err error, patch bool, badItem func(list string) int) error {
	// "validating root: validating /properties/x: <keyword>: <detail>":
	// the prefixes name the schema's place, the rest (which may quote the
	// caller's values) says what is wrong.
	field, reason := "", err.Error()
	for strings.HasPrefix(reason, "validating ") {
		path, rest, ok := strings.Cut(reason[len("validating "):], ": ")
		if !ok {
			break
		}
		field, reason = fieldOf(path), rest
	}
	kw, detail, _ := strings.Cut(reason, ": ")
	switch kw {
	case "required":
		if names := quotedNames(strings.TrimPrefix(detail, "missing properties: ")); len(names) > 0 {
			field, reason = join(field, names[0]), "is required"
		}
	case "minimum", "maximum":
		_, bound, _ := strings.Cut(detail, " than ")
		if f, err := strconv.ParseFloat(bound, 64); err == nil {
			reason = "must be at least " + strconv.FormatFloat(f, 'f', -1, 64)
			if kw == "maximum" {
				reason = "must be at most " + strconv.FormatFloat(f, 'f', -1, 64)
			}
		}
	case "minLength":
		reason = "must not be empty"
	case "minItems", "maxItems":
		_, bound, _ := strings.Cut(detail, " than ")
		if n, err := strconv.Atoi(bound); err == nil {
			reason = fmt.Sprintf("must hold at least %d item%s", n, plural(n))
			if kw == "maxItems" {
				reason = fmt.Sprintf("must hold at most %d item%s", n, plural(n))
			}
		}
	case "enum":
		if _, values, ok := strings.Cut(detail, "any of: "); ok {
			reason = "must be one of " + values
		}
	case "type":
		if strings.Contains(detail, `has type "null"`) {
			reason = "cannot be null"
			if patch {
				reason += ": leave it out to keep the current value"
			}
		} else if _, want, ok := strings.Cut(detail, ", want "); ok {
			// "one of \"null, string\"": null is "not given", not a type to ask for.
			want = strings.Trim(strings.TrimPrefix(want, "one of "), `"`)
			var types []string
			for _, ty := range strings.Split(want, ", ") {
				if ty != "null" {
					types = append(types, ty)
				}
			}
			reason = "must be of type " + strings.Join(types, " or ")
		}
	default:
		if names, ok := strings.CutPrefix(reason, "unexpected additional properties "); ok {
			if ns := quotedNames(names); len(ns) > 0 {
				field, reason = join(field, ns[0]), "is not an argument of this tool"
				if len(ns) > 1 {
					reason = fmt.Sprintf("is not an argument of this tool (nor are %s)", strings.Join(ns[1:], ", "))
				}
			}
		}
	}
	if field == "" {
		field = "arguments"
	}
	if list, rest, ok := strings.Cut(field, "[]"); ok && !strings.Contains(list, "[") {
		if i := badItem(list); i >= 0 {
			field = list + "[" + strconv.Itoa(i) + "]" + rest
		}
	}
	return refuse(errandapi.CodeInvalidArgument, "%s: %s", field, reason)
}

// quotedNames reads Go's %q of a list of names, ["b" "c"], sorted.
func quotedNames(s string) []string {
	var ns []string
	for _, q := range strings.Fields(strings.Trim(s, "[]")) {
		if n, err := strconv.Unquote(q); err == nil {
			ns = append(ns, n)
		}
	}
	slices.Sort(ns)
	return ns
}

// fieldOf is the argument a schema location names:
// "/properties/tasks/items/properties/name" is "tasks[].name", "root" "".
func fieldOf(path string) string {
	var b strings.Builder
	parts := strings.Split(strings.Trim(path, "/"), "/")
	for i := 0; i < len(parts); i++ {
		switch parts[i] {
		case "properties":
			if i+1 < len(parts) {
				i++
				if b.Len() > 0 {
					b.WriteByte('.')
				}
				b.WriteString(parts[i])
			}
		case "items":
			b.WriteString("[]")
		}
	}
	return b.String()
}

// join is field.name, or name at the top.
func join(field, name string) string {
	if field == "" {
		return name
	}
	return field + "." + name
}

// firstBadItem is the index of the first item of the list argument that
// resolved refuses as it refused the whole call (refused, the same error
// text), found by validating args with that item alone in the list; -1
// when none is (the refusal is of the list itself, or another argument
// is refused too and hides the item's).
func firstBadItem(resolved *jsonschema.Resolved, args map[string]any, list string, refused error) int {
	return firstItemWhere(args, list, func(one map[string]any) bool {
		err := resolved.Validate(one)
		return err != nil && err.Error() == refused.Error()
	})
}

// firstItemWhere is the index of the first item of args' list argument
// for which bad holds of args with that item alone in the list; -1 for
// none (or when the argument is not a list). list is the argument's path
// through objects: "tasks", or "task.on" for a list inside an object.
func firstItemWhere(args map[string]any, list string, bad func(one map[string]any) bool) int {
	path := strings.Split(list, ".")
	var at any = args
	for _, p := range path {
		m, _ := at.(map[string]any)
		at = m[p]
	}
	items, _ := at.([]any)
	for i, item := range items {
		if bad(withItem(args, path, item)) {
			return i
		}
	}
	return -1
}

// withItem is m with the list at path holding item alone; the objects
// along the path are copies.
func withItem(m map[string]any, path []string, item any) map[string]any {
	out := maps.Clone(m)
	if len(path) == 1 {
		out[path[0]] = []any{item}
		return out
	}
	inner, _ := m[path[0]].(map[string]any)
	out[path[0]] = withItem(inner, path[1:], item)
	return out
}

// plural is "s" but for one.
func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
