package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/errandhq/errand/errandapi"
)

// TestTasksGetWaits: tasks_get with waitSeconds answers once the task has
// ended (here acked by another session while the call waited on the node),
// and refuses a wait past 30 s naming waitSeconds.
func TestTasksGetWaits(t *testing.T) {
	n := startNode(t, false)
	key := n.key("full:*")
	s := n.session(key)
	s.ok("create_instance", obj{"name": "jobs"}, nil)
	s.ok("tasks_set_queue", obj{"instance": "jobs", "queue": "work", "mode": "pull"}, nil)
	var added errandapi.AddResponse
	s.ok("tasks_add", obj{"instance": "jobs", "queue": "work", "tasks": []any{obj{"payload": 1}}}, &added)
	id := added.Tasks[0].ID

	waiter := n.session(key)
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := waiter.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "tasks_get",
			Arguments: obj{"instance": "jobs", "id": id, "waitSeconds": 30}})
		if err != nil {
			res = &mcp.CallToolResult{IsError: true}
		}
		done <- res
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.fake.WaitForSleeperAt(ctx, n.fake.Now().Add(50*time.Millisecond)); err != nil {
		t.Fatal("the call never waited on the node")
	}
	var leased errandapi.LeaseResponse
	s.ok("tasks_lease", obj{"instance": "jobs", "queue": "work"}, &leased)
	s.ok("tasks_ack", obj{"instance": "jobs", "id": id, "leaseId": leased.Tasks[0].LeaseID, "result": obj{"ok": true}}, nil)
	select {
	case res := <-done:
		var got errandapi.TaskResponse
		raw, _ := json.Marshal(res.StructuredContent)
		if res.IsError || json.Unmarshal(raw, &got) != nil || got.Task.State != errandapi.StateSucceeded || string(got.Task.Result) != `{"ok":true}` {
			t.Fatalf("tasks_get waiting: %s %s", raw, text(res))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("tasks_get did not answer when the task ended")
	}
	if e := s.refused("tasks_get", obj{"instance": "jobs", "id": id, "waitSeconds": 31}, "INVALID_ARGUMENT"); !strings.HasPrefix(fmt.Sprint(e["message"]), "waitSeconds: ") {
		t.Fatalf("a wait of 31 s: %v", e)
	}
}
