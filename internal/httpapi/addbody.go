package httpapi

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/jsonstrict"
	"github.com/errandhq/errand/internal/task"
)

// parseAdd reads one task, an array, or {"tasks": [...]}. A well-formed
// body is split into its tasks by a walk over its bytes, so each task is
// decoded once; a malformed one is decoded whole, for the error to name
// the same byte and field whatever the body's shape.
func parseAdd(raw []byte, source string) ([]task.AddInput, error) {
	raw = jsonstrict.TrimSpace(raw)
	var items []json.RawMessage
	prefix := func(i int) string { return "tasks[" + strconv.Itoa(i) + "]" }
	switch {
	case len(raw) > 0 && raw[0] == '[':
		if !json.Valid(raw) {
			return nil, jsonstrict.Decode(raw, &items, "tasks")
		}
		items = jsonstrict.SplitArray(raw)
	case len(raw) > 0 && raw[0] == '{':
		if !json.Valid(raw) {
			var env map[string]json.RawMessage
			return nil, jsonstrict.Decode(raw, &env, "")
		}
		if t, ok, twice := envelopeTasks(raw); ok {
			if twice {
				return nil, task.FieldErrorf(task.CodeInvalidArgument, "tasks", "is given twice")
			}
			if t[0] != '[' {
				if err := jsonstrict.Decode(t, &items, "tasks"); err != nil {
					return nil, err
				}
				return nil, task.FieldErrorf(task.CodeInvalidArgument, "tasks", "must be an array of tasks")
			}
			items = jsonstrict.SplitArray(t)
		} else {
			items = []json.RawMessage{raw}
			prefix = func(int) string { return "" }
		}
	default:
		return nil, badAddBody
	}
	return parseItems(items, prefix, source)
}

// badAddBody refuses a body that is neither a task, an array nor an
// envelope.
var badAddBody = task.FieldErrorf(task.CodeInvalidArgument, "body", "send a task object, an array of tasks, or {\"tasks\": [...]}")

// parseItems decodes an add's tasks, item i's fields named under
// prefix(i), once their count is checked.
func parseItems(items []json.RawMessage, prefix func(int) string, source string) ([]task.AddInput, error) {
	if len(items) == 0 || len(items) > task.MaxAddBatch {
		return nil, task.FieldErrorf(task.CodeInvalidArgument, "tasks", "send 1–%d tasks, not %d", task.MaxAddBatch, len(items))
	}
	ins := make([]task.AddInput, len(items))
	for i, item := range items {
		in, err := parseTask(item, prefix(i), source)
		if err != nil {
			return nil, err
		}
		ins[i] = in
	}
	return ins, nil
}

// parseTask decodes one task of an add, whose fields' paths start with
// prefix ("" for a body of one task, "tasks[i]" in a batch).
func parseTask(item []byte, prefix, source string) (task.AddInput, error) {
	if t := jsonstrict.TrimSpace(item); len(t) == 0 || t[0] != '{' {
		return task.AddInput{}, task.FieldErrorf(task.CodeInvalidArgument, jsonstrict.PathOr(prefix, "body"), "a task must be a JSON object")
	}
	var b errandapi.NewTask
	if err := jsonstrict.Decode(item, &b, prefix); err != nil {
		return task.AddInput{}, err
	}
	// Most tasks have no name: the walk over the keys runs only for one
	// whose bytes hold the key's letters at all.
	if b.Name == "" && bytes.Contains(item, []byte("name")) && emptyName(item) {
		return task.AddInput{}, task.ValidateName("", jsonstrict.Join(prefix, "name"))
	}
	return addInput(&b, source), nil
}

// oneOfBatch names the task of a batch body of one (an array, or
// {"tasks": [...]}) in a refusal of one of its fields, tasks[0].field, as
// the engine names the tasks of a larger batch; a body of one task object,
// and any refusal that is not of a field, are left as they are.
func oneOfBatch(err error, raw []byte, n int) error {
	if n != 1 || err == nil {
		return err
	}
	switch b := jsonstrict.TrimSpace(raw); {
	case len(b) > 0 && b[0] == '[':
	case len(b) > 0 && b[0] == '{':
		if _, env, _ := envelopeTasks(b); !env {
			return err
		}
	default:
		return err
	}
	return task.OneOfBatch(err)
}

// envelopeTasks returns the value of "tasks" when the valid JSON object b
// has that key alone, and ok false for any other object; twice says the
// key came more than once (the add refuses it, as any field given twice).
func envelopeTasks(b []byte) (tasks []byte, ok, twice bool) {
	for key, v := range jsonstrict.Members(b) {
		if key != "tasks" {
			return nil, false, false
		}
		twice = ok
		tasks, ok = v, true
	}
	return tasks, ok, twice
}

// emptyName reports whether the task object item (valid JSON) names the
// task "": a name is 1–500 characters, and NewTask's Name cannot tell ""
// from no name.
func emptyName(item []byte) bool {
	empty := false
	for key, v := range jsonstrict.Members(item) {
		if key == "name" {
			empty = string(v) == `""`
		}
	}
	return empty
}
