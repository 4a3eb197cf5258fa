package httpapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestKeySelf: a key reads its own organization and grants, sorted by
// instance; dev's implicit caller is full on every instance; no key is 401.
func TestKeySelf(t *testing.T) {
	s := setupServe(t)
	key := s.key("acme", "write:b", "read:a", "full:c")
	r := s.as(key).do("GET", "/v1/keys/self", nil)
	if r.status != 200 {
		t.Fatalf("self: %d %s", r.status, r.raw)
	}
	var got struct {
		Org    string  `json:"org"`
		KeyID  *string `json:"keyId"`
		Dev    bool    `json:"dev"`
		Grants []struct {
			Instance, Role string
		} `json:"grants"`
	}
	if err := json.Unmarshal(r.raw, &got); err != nil {
		t.Fatal(err)
	}
	if got.Org != "acme" || got.KeyID == nil || *got.KeyID == "" || got.Dev {
		t.Fatalf("self %s", r.raw)
	}
	want := [][2]string{{"a", "read"}, {"b", "write"}, {"c", "full"}}
	if len(got.Grants) != len(want) {
		t.Fatalf("grants %s", r.raw)
	}
	for i, g := range got.Grants {
		if g.Instance != want[i][0] || g.Role != want[i][1] {
			t.Fatalf("grant %d = %+v, want %v (%s)", i, g, want[i], r.raw)
		}
	}
	if r := s.header("").do("GET", "/v1/keys/self", nil); r.status != http.StatusUnauthorized || r.body["error"].(map[string]any)["code"] != "UNAUTHENTICATED" {
		t.Fatalf("no key: %d %s", r.status, r.raw)
	}
	if r := s.as(s.revokedKey("acme", "full:*")).do("GET", "/v1/keys/self", nil); r.status != http.StatusUnauthorized {
		t.Fatalf("revoked key: %d %s", r.status, r.raw)
	}

	d := setup(t)
	r = d.do("GET", "/v1/keys/self", nil)
	if r.status != 200 || string(r.raw) != `{"org":"dev","keyId":null,"dev":true,"grants":[{"instance":"*","role":"full"}]}`+"\n" {
		t.Fatalf("dev self: %d %s", r.status, r.raw)
	}
}

// TestAddSourceHeader: X-Errand-Source labels the added tasks with one of
// the client surfaces (api, console, mcp); a source errand sets itself, or
// anything else, is refused naming the header, and nothing is added.
func TestAddSourceHeader(t *testing.T) {
	b := setup(t)
	if r := b.do("POST", "/v1/tasks/jobs/queues", `{"name":"q","mode":"pull"}`); r.status != 201 {
		t.Fatalf("queue: %d %s", r.status, r.raw)
	}
	add := func(source string) res {
		t.Helper()
		req, _ := http.NewRequest("POST", b.srv.URL+"/v1/tasks/jobs/queues/q/tasks", strings.NewReader(`{"payload":1}`))
		req.Header.Set("Content-Type", "application/json")
		if source != "" {
			req.Header.Set("X-Errand-Source", source)
		}
		resp, err := b.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		r := res{status: resp.StatusCode}
		r.raw, _ = io.ReadAll(resp.Body)
		if err := json.Unmarshal(r.raw, &r.body); err != nil {
			t.Fatalf("%s: %v", r.raw, err)
		}
		return r
	}
	for source, want := range map[string]string{"": "api", "api": "api", "mcp": "mcp", "console": "console"} {
		r := add(source)
		if r.status != 201 {
			t.Fatalf("source %q: %d %s", source, r.status, r.raw)
		}
		id := r.body["tasks"].([]any)[0].(map[string]any)["id"].(string)
		got := b.do("GET", "/v1/tasks/jobs/tasks/"+id, nil)
		if src := got.body["task"].(map[string]any)["source"]; src != want {
			t.Fatalf("header %q: source %v, want %s", source, src, want)
		}
	}
	for _, bad := range []string{"trigger", "schedule", "hook", "task", "deadletter", "function", "rerun", "MCP", "x"} {
		r := add(bad)
		e := r.body["error"].(map[string]any)
		if r.status != 400 || e["code"] != "INVALID_ARGUMENT" || e["message"] != `X-Errand-Source: must be api, console or mcp, not "`+bad+`"` {
			t.Fatalf("source %q: %d %s", bad, r.status, r.raw)
		}
	}
	if r := b.do("GET", "/v1/tasks/jobs/queues/q/tasks", nil); len(r.body["tasks"].([]any)) != 4 {
		t.Fatalf("a refused add added tasks: %s", r.raw)
	}
}
