package mcp

import (
	"encoding/json"
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
		if nonEmpty[name] && (p.Type == "string" || p.Type == "" && len(p.Types) > 0 && p.Types[0] == "string") {
			one := 1
			p.MinLength = &one
		}
		requireNames(p)
	}
	requireNames(s.Items)
}

// argumentError words a schema's refusal of a call's arguments as the API
// words a field's: the argument first ("tasks[].name: must not be
// empty"), then what it must be.
func argumentError(err error) error {
	msg := err.Error()
	field, reason := "", msg
	if i := strings.LastIndex(msg, "validating "); i >= 0 {
		if path, rest, ok := strings.Cut(msg[i+len("validating "):], ": "); ok {
			field, reason = fieldOf(path), rest
		}
	}
	kw, detail, _ := strings.Cut(reason, ": ")
	switch kw {
	case "required":
		var names []string
		if json.Unmarshal([]byte(strings.TrimPrefix(detail, "missing properties: ")), &names) == nil && len(names) > 0 {
			field, reason = join(field, names[0]), "is required"
		}
	case "minimum", "maximum":
		_, bound, _ := strings.Cut(detail, " than ")
		if f, err := strconv.ParseFloat(bound, 64); err == nil {
			reason = "must be at least " + strconv.FormatFloat(f, 'g', -1, 64)
			if kw == "maximum" {
				reason = "must be at most " + strconv.FormatFloat(f, 'g', -1, 64)
			}
		}
	case "minLength":
		reason = "must not be empty"
	case "enum":
		if _, values, ok := strings.Cut(detail, "any of: "); ok {
			reason = "must be one of " + values
		}
	case "type":
		if _, want, ok := strings.Cut(detail, ", want "); ok {
			reason = "must be of type " + want
		}
	default:
		if names, ok := strings.CutPrefix(reason, "unexpected additional properties "); ok {
			var ns []string
			if json.Unmarshal([]byte(names), &ns) == nil && len(ns) > 0 {
				field, reason = join(field, ns[0]), "is not an argument of this tool"
			}
		}
	}
	if field == "" {
		field = "arguments"
	}
	return refuse(errandapi.CodeInvalidArgument, "%s: %s", field, reason)
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
