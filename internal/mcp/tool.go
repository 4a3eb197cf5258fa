package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/errandhq/errand/client"
	"github.com/errandhq/errand/errandapi"
)

// tool is one MCP tool: its definition, the grant it needs (its key must
// hold it on some instance for a session to list it) and its handler.
type tool struct {
	def  *mcp.Tool
	need errandapi.Role
	// call runs the tool with a client carrying the session's key.
	call func(ctx context.Context, c *client.Client, args json.RawMessage) *mcp.CallToolResult
}

// spec describes a tool to define.
type spec struct {
	name, title, desc string
	need              errandapi.Role
	// readOnly, destructive and idempotent become the tool's annotations.
	readOnly, destructive, idempotent bool
	// shape adjusts the inferred input schema (enums, bounds).
	shape func(*jsonschema.Schema)
	// patch marks a tool that changes settings: a null is refused where
	// it cannot clear one (refuseNulls).
	patch bool
	// refused, if set, may answer an argument refusal otherwise (the API's
	// own refusal of the same call, when it would be another).
	refused func(ctx context.Context, c *client.Client, args json.RawMessage, err error) error
}

// define makes a tool whose input is In (its schema inferred from In's
// `jsonschema` tags) and whose structured output is Out. run returns the
// output and a one-line summary for the model, or an error that becomes a
// tool error with its API code.
func define[In, Out any](s spec, run func(ctx context.Context, c *client.Client, in In) (Out, string, error)) tool {
	in, out := asObject(schemaOf[In](), s.name), asObject(schemaOf[Out](), s.name)
	requireNames(in)
	if s.patch {
		refuseNulls(in, reflect.TypeFor[In]())
	}
	if s.shape != nil {
		s.shape(in)
	}
	resolved, err := in.Resolve(nil)
	if err != nil {
		panic(fmt.Sprintf("tool %s: input schema: %v", s.name, err))
	}
	destructive := s.destructive
	def := &mcp.Tool{
		Name: s.name, Title: s.title, Description: s.desc, InputSchema: in, OutputSchema: out,
		Annotations: &mcp.ToolAnnotations{Title: s.title, ReadOnlyHint: s.readOnly,
			DestructiveHint: &destructive, IdempotentHint: s.idempotent},
	}
	return tool{def: def, need: s.need, call: func(ctx context.Context, c *client.Client, args json.RawMessage) *mcp.CallToolResult {
		var v In
		if err := decodeArgs(args, resolved, s.patch, &v); err != nil {
			if s.refused != nil {
				err = s.refused(ctx, c, args, err)
			}
			return errorResult(err)
		}
		o, summary, err := run(ctx, c, v)
		if err != nil {
			return errorResult(err)
		}
		raw, err := errandapi.Marshal(o)
		if err != nil {
			return errorResult(err)
		}
		return &mcp.CallToolResult{
			StructuredContent: json.RawMessage(raw),
			// The summary first; the JSON too, for clients that give the
			// model only the content (a leased task's leaseId must reach it).
			Content: []mcp.Content{&mcp.TextContent{Text: summary}, &mcp.TextContent{Text: string(raw)}},
		}
	}}
}

// decodeArgs validates a call's arguments against the tool's input schema
// and decodes them into v; a refusal is INVALID_ARGUMENT. patch is the
// tool's spec.patch.
func decodeArgs(args json.RawMessage, resolved *jsonschema.Resolved, patch bool, v any) error {
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	var generic any
	if err := json.Unmarshal(args, &generic); err != nil {
		return refuse(errandapi.CodeInvalidArgument, "arguments: %v", err)
	}
	if err := resolved.Validate(generic); err != nil {
		return argumentError(err, patch, func(list string) int {
			args, _ := generic.(map[string]any)
			return firstBadItem(resolved, args, list, err)
		})
	}
	if err := json.Unmarshal(args, v); err != nil {
		// The schema passed it, so a value too big (or too precise) for
		// its Go field: 1e30 for an int64.
		var te *json.UnmarshalTypeError
		if !errors.As(err, &te) || te.Field == "" {
			return refuse(errandapi.CodeInvalidArgument, "arguments: %v", err)
		}
		field := te.Field
		if list, rest, ok := strings.Cut(field, "."); ok {
			if args, _ := generic.(map[string]any); args != nil {
				if _, isList := args[list].([]any); isList {
					field = list + "[]." + rest
					i := firstItemWhere(args, list, func(one map[string]any) bool {
						raw, _ := json.Marshal(one)
						return json.Unmarshal(raw, reflect.New(reflect.TypeOf(v).Elem()).Interface()) != nil
					})
					if i >= 0 {
						field = list + "[" + strconv.Itoa(i) + "]." + rest
					}
				}
			}
		}
		return refuse(errandapi.CodeInvalidArgument, "%s: %s is out of range (or not a whole number where one is needed)", field, te.Value)
	}
	return nil
}
