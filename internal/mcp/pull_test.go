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

// pullLoop is an agent as a pull worker, through tools alone: it adds n
// tasks to the pull queue jobs/thumbs, leases and acks them one by one until a lease
// finds none due, and checks that every task succeeded with its result.
func pullLoop(t *testing.T, s *session, n int) {
	t.Helper()
	tasks := make([]any, n)
	for i := range tasks {
		tasks[i] = obj{"payload": obj{"i": i}, "name": fmt.Sprintf("t%d", i)}
	}
	s.ok("tasks_add", obj{"instance": "jobs", "queue": "thumbs", "tasks": tasks}, nil)
	done := 0
	for {
		var leased errandapi.LeaseResponse
		s.ok("tasks_lease", obj{"instance": "jobs", "queue": "thumbs", "leaseSeconds": 120}, &leased)
		if len(leased.Tasks) == 0 {
			break
		}
		lt := leased.Tasks[0]
		var p struct{ I int }
		if err := json.Unmarshal(lt.Payload, &p); err != nil || lt.Source != "mcp" || lt.Attempts != 1 {
			t.Fatalf("leased %+v", lt)
		}
		var acked errandapi.TaskResponse
		s.ok("tasks_ack", obj{"instance": "jobs", "id": lt.ID, "leaseId": lt.LeaseID, "result": obj{"doubled": 2 * p.I}}, &acked)
		if acked.Task.State != errandapi.StateSucceeded {
			t.Fatalf("acked %+v", acked.Task)
		}
		// The same ack again is done (its answer lost, an agent sends it
		// again): the task as the first ack stored it; the lease extends
		// nothing any more.
		var again errandapi.TaskResponse
		s.ok("tasks_ack", obj{"instance": "jobs", "id": lt.ID, "leaseId": lt.LeaseID}, &again)
		if again.Task.State != errandapi.StateSucceeded || string(again.Task.Result) != string(acked.Task.Result) {
			t.Fatalf("a repeated ack: %+v", again.Task)
		}
		s.refused("tasks_extend", obj{"instance": "jobs", "id": lt.ID, "leaseId": lt.LeaseID, "leaseSeconds": 60}, "LEASE_LOST")
		done++
		if done > n {
			t.Fatal("leased more tasks than were added")
		}
	}
	var page errandapi.TaskPage
	s.ok("tasks_list", obj{"instance": "jobs", "queue": "thumbs", "state": "succeeded"}, &page)
	if done != n || len(page.Tasks) != n {
		t.Fatalf("acked %d, %d succeeded, want %d", done, len(page.Tasks), n)
	}
	for _, tk := range page.Tasks {
		var got errandapi.TaskResponse
		s.ok("tasks_get", obj{"instance": "jobs", "id": tk.ID}, &got)
		var p, r struct{ I, Doubled int }
		_ = json.Unmarshal(got.Task.Payload, &p)
		_ = json.Unmarshal(got.Task.Result, &r)
		if r.Doubled != 2*p.I || got.Task.Source != "mcp" {
			t.Fatalf("task %s: payload %s result %s source %s", tk.ID, got.Task.Payload, got.Task.Result, got.Task.Source)
		}
	}
}

// TestPullLoopOverHTTP: the pull loop through /mcp in serve mode with a
// write key on a queue a full key made; then a lease that runs out is
// LEASE_LOST for its worker.
func TestPullLoopOverHTTP(t *testing.T) {
	n := startNode(t, false)
	admin := n.session(n.key("full:jobs"))
	admin.ok("create_instance", obj{"name": "jobs"}, nil)
	admin.ok("tasks_set_queue", obj{"instance": "jobs", "queue": "thumbs", "mode": "pull"}, nil)
	worker := n.session(n.key("write:jobs"))
	// The worker cannot change the queue: tasks_set_queue is not its tool.
	worker.refused("tasks_set_queue", obj{"instance": "jobs", "queue": "thumbs", "paused": true}, "PERMISSION_DENIED")
	pullLoop(t, worker, 3)

	worker.ok("tasks_add", obj{"instance": "jobs", "queue": "thumbs", "tasks": []any{obj{}}}, nil)
	var leased errandapi.LeaseResponse
	worker.ok("tasks_lease", obj{"instance": "jobs", "queue": "thumbs", "leaseSeconds": 10}, &leased)
	n.fake.Advance(11 * time.Second)
	lt := leased.Tasks[0]
	worker.refused("tasks_extend", obj{"instance": "jobs", "id": lt.ID, "leaseId": lt.LeaseID, "leaseSeconds": 60}, "LEASE_LOST")
	worker.refused("tasks_ack", obj{"instance": "jobs", "id": lt.ID, "leaseId": lt.LeaseID}, "LEASE_LOST")
}

// TestQueueResource: a queue reads as the resource
// errand://tasks/{instance}/queues/{queue}, cached by its caller only; an
// unknown one is not found.
func TestQueueResource(t *testing.T) {
	n := startNode(t, true)
	s := n.session("")
	s.ok("tasks_set_queue", obj{"instance": "jobs", "queue": "work", "mode": "pull"}, nil)
	s.ok("tasks_add", obj{"instance": "jobs", "queue": "work", "tasks": []any{obj{}, obj{}}}, nil)
	res, err := s.cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "errand://tasks/jobs/queues/work"})
	if err != nil {
		t.Fatal(err)
	}
	var q errandapi.QueueResponse
	if err := json.Unmarshal([]byte(res.Contents[0].Text), &q); err != nil || q.Queue.Name != "work" || q.Queue.Counts[errandapi.StateScheduled] != 2 {
		t.Fatalf("queue resource %s (%v)", res.Contents[0].Text, err)
	}
	// One organization's queue is its caller's to cache, no one else's.
	if res.CacheScope != "private" {
		t.Fatalf("queue resource cacheScope %q, want private", res.CacheScope)
	}
	if _, err := s.cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "errand://tasks/jobs/queues/nosuch"}); err == nil {
		t.Fatal("an unknown queue was read")
	}
	tmpl, err := s.cs.ListResourceTemplates(context.Background(), nil)
	if err != nil || len(tmpl.ResourceTemplates) != 1 {
		t.Fatalf("templates %+v %v", tmpl, err)
	}
}

// TestLeaseDeliveryToken: tasks_lease answers each task's deliveryToken,
// and tasks_add with it makes follow-ups of depth + 1 and source lease, so
// an agent that adds to its own queue from its work stops at the depth
// bound; a token that is not one is refused naming deliveryToken.
func TestLeaseDeliveryToken(t *testing.T) {
	n := startNode(t, true)
	s := n.session("")
	s.ok("tasks_set_queue", obj{"instance": "jobs", "queue": "loop", "mode": "pull"}, nil)
	s.ok("tasks_add", obj{"instance": "jobs", "queue": "loop", "tasks": []any{obj{"payload": 0}}}, nil)
	for depth := 0; ; depth++ {
		var leased errandapi.LeaseResponse
		s.ok("tasks_lease", obj{"instance": "jobs", "queue": "loop"}, &leased)
		if len(leased.Tasks) != 1 {
			t.Fatalf("depth %d: leased %d tasks, want 1", depth, len(leased.Tasks))
		}
		lt := leased.Tasks[0]
		wantSource := "mcp"
		if depth > 0 {
			wantSource = "lease"
		}
		if lt.DeliveryToken == "" || lt.Depth != depth || lt.Source != wantSource {
			t.Fatalf("depth %d: leased %+v; want a token, depth %d, source %s", depth, lt, depth, wantSource)
		}
		follow := obj{"instance": "jobs", "queue": "loop", "tasks": []any{obj{"payload": depth + 1}}, "deliveryToken": lt.DeliveryToken}
		if depth == 8 {
			// The ninth link of the chain is the loop the bound stops.
			s.refused("tasks_add", follow, "DEPTH_EXCEEDED")
			break
		}
		s.ok("tasks_add", follow, nil)
		s.ok("tasks_ack", obj{"instance": "jobs", "id": lt.ID, "leaseId": lt.LeaseID}, nil)
	}
	data := s.refused("tasks_add", obj{"instance": "jobs", "queue": "loop", "tasks": []any{obj{}}, "deliveryToken": "nonsense"}, "INVALID_ARGUMENT")
	if msg, _ := data["message"].(string); !strings.HasPrefix(msg, "deliveryToken: ") {
		t.Fatalf("a bad token: %q; want it to name deliveryToken", msg)
	}
}
