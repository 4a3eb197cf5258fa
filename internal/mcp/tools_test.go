package mcp_test

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/errandhq/errand/errandapi"
	errandmcp "github.com/errandhq/errand/internal/mcp"
)

// toolsFor is the sorted names of the tools a key whose strongest grant
// is role lists.
func toolsFor(role errandapi.Role) []string {
	var out []string
	for name, need := range errandmcp.ToolNames() {
		if role.Includes(need) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// TestToolsPerGrant: over HTTP in serve mode, a session lists exactly the
// tools its key's strongest grant allows (a read key sees no write tool, a
// write key no full tool); a key without a valid token cannot open one;
// errand dev lists every tool.
func TestToolsPerGrant(t *testing.T) {
	n := startNode(t, false)
	all := slices.Sorted(maps.Keys(errandmcp.ToolNames()))
	if len(all) != 28 {
		t.Fatalf("%d tools: %v", len(all), all)
	}
	read := []string{"tasks_get", "tasks_get_trigger", "tasks_list", "tasks_list_functions", "tasks_list_queues", "tasks_list_triggers", "tasks_usage"}
	if got := toolsFor(errandapi.RoleRead); !slices.Equal(got, read) {
		t.Fatalf("read tools %v", got)
	}
	for _, c := range []struct {
		grants []string
		want   []string
	}{
		{[]string{"read:jobs"}, read},
		{[]string{"write:jobs"}, toolsFor(errandapi.RoleWrite)},
		{[]string{"read:jobs", "write:other"}, toolsFor(errandapi.RoleWrite)},
		{[]string{"full:*"}, all},
	} {
		s := n.session(n.key(c.grants...))
		got := s.tools()
		if !slices.Equal(got, c.want) {
			t.Errorf("key %v lists %v, want %v", c.grants, got, c.want)
		}
		// A tool not listed cannot be called either: the call is refused
		// as a tool error naming the grant it needs.
		if !slices.Contains(got, "tasks_add") {
			s.refused("tasks_add", obj{"instance": "jobs", "queue": "default", "tasks": []any{obj{}}}, "PERMISSION_DENIED")
			if m := text(s.call("tasks_add", obj{"instance": "jobs", "queue": "default"})); !strings.Contains(m, "tasks_add needs the write grant") {
				t.Errorf("key %v calling tasks_add: %q", c.grants, m)
			}
		}
	}
	if w := toolsFor(errandapi.RoleWrite); slices.Contains(w, "tasks_set_queue") || !slices.Contains(w, "tasks_ack") || len(w) != 17 {
		t.Fatalf("write tools %v", w)
	}
	for _, key := range []string{"", "errk_" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "not-a-key"} {
		if cs, err := n.connect(key); err == nil {
			cs.Close()
			t.Errorf("key %q opened a session", key)
		}
	}
	if got := startNode(t, true).session("").tools(); !slices.Equal(got, all) {
		t.Fatalf("dev lists %v", got)
	}
}

// TestGuideIsTheDoc: docs://tasks/guide is docs/agent-guide.md byte for
// byte, over HTTP, for every key.
func TestGuideIsTheDoc(t *testing.T) {
	n := startNode(t, false)
	s := n.session(n.key("read:jobs"))
	res, err := s.cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: errandmcp.GuideURI})
	if err != nil {
		t.Fatal(err)
	}
	checkGuide(t, res)
}

// checkGuide checks a read of the guide against docs/agent-guide.md.
func checkGuide(t *testing.T, res *mcp.ReadResourceResult) {
	t.Helper()
	want, err := os.ReadFile("../../docs/agent-guide.md")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Contents) != 1 || res.Contents[0].Text != string(want) || res.Contents[0].MIMEType != "text/markdown" || res.Contents[0].URI != errandmcp.GuideURI {
		t.Fatalf("the guide is not docs/agent-guide.md: %+v", res.Contents)
	}
	for _, topic := range []string{"## Targets", "## Retries", "## Triggers", "## Pull workers"} {
		if !strings.Contains(string(want), topic) {
			t.Errorf("the guide has no section %q", topic)
		}
	}
}

// TestDocsNameEveryTool: docs/mcp.md and the guide cannot fall behind the
// tools: each tool is in docs/mcp.md's table with the grant it needs.
func TestDocsNameEveryTool(t *testing.T) {
	doc, err := os.ReadFile("../../docs/mcp.md")
	if err != nil {
		t.Fatal(err)
	}
	for name, need := range errandmcp.ToolNames() {
		if !strings.Contains(string(doc), "| `"+name+"` | "+string(need)+" |") {
			t.Errorf("docs/mcp.md has no row | `%s` | %s |", name, need)
		}
	}
}

// TestToolSchemasAreObjects: every tool's input and output schema, as a
// client lists them, is of type "object", as MCP requires: the TypeScript
// SDK (Claude Desktop, Claude Code, the Inspector) refuses a tools/list
// with any other, and so lists no tool at all.
func TestToolSchemasAreObjects(t *testing.T) {
	res, err := startNode(t, true).session("").cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range res.Tools {
		for which, schema := range map[string]any{"input": tl.InputSchema, "output": tl.OutputSchema} {
			b, err := json.Marshal(schema)
			if err != nil {
				t.Fatal(err)
			}
			var s struct {
				Type any `json:"type"`
			}
			if err := json.Unmarshal(b, &s); err != nil || s.Type != "object" {
				t.Errorf("%s's %s schema has type %v, want \"object\"", tl.Name, which, s.Type)
			}
		}
	}
}

// TestChangeToolsAdvertiseOnlyClearingNulls: a tool that changes settings
// lists null as allowed only for a setting null clears (a rate, a limit, a
// target, params, payload), as a client lists it: an agent reading the
// schema is not told that null keeps maxAttempts or pauses nothing.
func TestChangeToolsAdvertiseOnlyClearingNulls(t *testing.T) {
	res, err := startNode(t, true).session("").cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	clears := map[string][]string{
		"tasks_set_queue":       {"target", "ratePerSecond", "maxConcurrent", "maxAgeSeconds", "deadLetterQueue"},
		"patch_instance_config": {"rateLimit"},
		"tasks_update_trigger":  {"params", "payload", "hook.secret", "hook.signature"},
	}
	for _, tl := range res.Tools {
		want, ok := clears[tl.Name]
		if !ok {
			continue
		}
		b, _ := json.Marshal(tl.InputSchema)
		var s schemaNode
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
		var got []string
		s.nullable("", &got)
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s: null allowed for %v, want only %v", tl.Name, got, want)
		}
	}
}

// schemaNode is the part of a listed JSON schema that says what takes null.
type schemaNode struct {
	Type       any                    `json:"type"`
	Properties map[string]*schemaNode `json:"properties"`
}

// nullable appends the properties under prefix whose type allows null (or
// that have no type: any JSON).
func (s *schemaNode) nullable(prefix string, out *[]string) {
	for name, p := range s.Properties {
		path := name
		if prefix != "" {
			path = prefix + "." + name
		}
		switch ty := p.Type.(type) {
		case nil:
			*out = append(*out, path)
		case []any:
			if slices.Contains(ty, any("null")) {
				*out = append(*out, path)
			}
		}
		p.nullable(path, out)
	}
}

// TestChangeToolsNullsAsTheAPI: for every setting of a tool that changes
// settings, null is allowed by the tool's schema exactly when the API's
// PATCH of the same setting takes null: the two are one rule, checked
// against the API itself rather than a list.
func TestChangeToolsNullsAsTheAPI(t *testing.T) {
	n := startNode(t, false)
	key := n.key("full:*")
	s := n.session(key)
	s.ok("create_instance", obj{"name": "jobs"}, nil)
	s.ok("tasks_set_queue", obj{"instance": "jobs", "queue": "work", "mode": "pull"}, nil)
	var rule errandapi.TriggerResponse
	s.ok("tasks_create_trigger", obj{"instance": "jobs", "queue": "work", "hook": obj{"headers": []any{"X-Event"}}}, &rule)
	res, err := s.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	patches := map[string]string{
		"tasks_set_queue":       "/v1/tasks/jobs/queues/work",
		"patch_instance_config": "/v1/tasks/jobs/settings",
		"tasks_update_trigger":  "/v1/tasks/jobs/triggers/" + rule.Trigger.ID,
	}
	args := map[string]bool{"instance": true, "queue": true, "id": true}
	for _, tl := range res.Tools {
		path, ok := patches[tl.Name]
		if !ok {
			continue
		}
		b, _ := json.Marshal(tl.InputSchema)
		var sch schemaNode
		if err := json.Unmarshal(b, &sch); err != nil {
			t.Fatal(err)
		}
		var nullable []string
		sch.nullable("", &nullable)
		for name, p := range sch.Properties {
			if args[name] || name == "mode" || (tl.Name == "tasks_update_trigger" && (name == "schedule" || name == "task")) {
				continue // not a setting of this PATCH (or of this rule's kind)
			}
			fields := []string{name}
			if len(p.Properties) > 0 {
				fields = nil
				for sub := range p.Properties {
					fields = append(fields, name+"."+sub)
				}
			}
			for _, f := range fields {
				body := `{"` + f + `":null}`
				if top, sub, nested := strings.Cut(f, "."); nested {
					body = `{"` + top + `":{"` + sub + `":null}}`
				}
				req, _ := http.NewRequest("PATCH", n.srv.URL+path, strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+key)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				apiTakes := resp.StatusCode == http.StatusOK
				if schemaTakes := slices.Contains(nullable, f); schemaTakes != apiTakes {
					t.Errorf("%s %s: the schema allows null %v, the API's PATCH takes it %v (%d)", tl.Name, f, schemaTakes, apiTakes, resp.StatusCode)
				}
			}
		}
	}
}
