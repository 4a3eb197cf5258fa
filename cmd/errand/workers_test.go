package main

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/errandhq/errand/client"
	"github.com/errandhq/errand/errandapi"
)

// serveNode starts `errand serve` on store (sqlite or postgres) and returns
// its URL, an admin client and a key with only the write grant on jobs.
func serveNode(t *testing.T, kind string) (url string, admin *client.Client, writer string, store string) {
	t.Helper()
	switch kind {
	case "sqlite":
		store = "sqlite://" + filepath.Join(t.TempDir(), "errand.db")
	case "postgres":
		store = pgSchemaURL(t)
	}
	key := func(grant string) string {
		code, out, errOut := runMain("keys", "create", "--store", store, "--create", "--org", "acme", "--grant", grant)
		if code != 0 {
			t.Fatalf("keys create: %s", errOut)
		}
		return strings.TrimSpace(out)
	}
	adminKey, writer := key("full:jobs"), key("write:jobs")
	_, url, logs := startServe(t, buildErrand(t), "--store", store)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("serve log:\n%s", logs)
		}
	})
	c, err := client.New(url, client.Options{APIKey: adminKey})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateInstance(context.Background(), "jobs"); err != nil {
		t.Fatal(err)
	}
	return url, c, writer, store
}

// functionQueue creates a push queue of jobs whose target is app/work.
func functionQueue(t *testing.T, c *client.Client, name string, maxConcurrent int) {
	t.Helper()
	q := errandapi.QueueRequest{Target: errandapi.Value(errandapi.Target{Function: "app/work"}),
		MinBackoffSeconds: new(0.2), MaxBackoffSeconds: new(1.0)}
	if maxConcurrent > 0 {
		q.MaxConcurrent = errandapi.Value(maxConcurrent)
	}
	if _, err := c.CreateQueue(context.Background(), "jobs", name, q); err != nil {
		t.Fatal(err)
	}
}

// waitTasks waits until every task of ids has finished, as o tells, and
// returns them read through c; it fails t if one failed.
func waitTasks(t *testing.T, o *outcomes, c *client.Client, ids []string, within time.Duration) map[string]*errandapi.Task {
	t.Helper()
	out := map[string]*errandapi.Task{}
	for id := range o.waitIDs(t, ids, within) {
		tk, err := c.GetTask(context.Background(), "jobs", id)
		if err != nil {
			t.Fatal(err)
		}
		if tk.State != errandapi.StateSucceeded {
			t.Fatalf("task %s %s: %v", id, tk.State, derefStr(tk.LastError))
		}
		out[id] = tk
	}
	return out
}

// TestWorkersServeFunctions: `errand serve` on SQLite and on PostgreSQL,
// two SDK workers as separate processes on a function queue with
// maxConcurrent: every task runs, never beside itself, the cap holds and
// both workers get work; a worker killed mid-attempt has its attempt
// retried on the other with a higher attempt number; a handler's add gets
// depth parent+1 and source function, and a chain reaching depth 9 is
// refused with DEPTH_EXCEEDED.
func TestWorkersServeFunctions(t *testing.T) {
	if testing.Short() {
		t.Skip("runs server and worker processes")
	}
	for _, kind := range []string{"sqlite", "postgres"} {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			start := time.Now()
			url, c, writer, _ := serveNode(t, kind)
			rs := &reports{running: map[string]string{}}
			rec := httptest.NewServer(rs)
			defer rec.Close()

			// Tasks added before any worker wait, no attempt used.
			const total, maxConcurrent = 60, 3
			functionQueue(t, c, "work", maxConcurrent)
			o := watchOutcomes(t, c, "work")
			var ids []string
			for i := range total {
				res, err := c.AddTask(ctx, "jobs", "work", errandapi.NewTask{Payload: json.RawMessage(`{"sleepMs":` + []string{"5", "20"}[i%2] + `}`)})
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, res.ID)
			}
			if tk, err := c.GetTask(ctx, "jobs", ids[0]); err != nil || tk.State != errandapi.StateScheduled || tk.Attempt != 0 ||
				!strings.HasPrefix(derefStr(tk.LastError), "no worker serves app/work") {
				t.Fatalf("before any worker: %+v %v; want scheduled, attempt 0, lastError no worker serves app/work", tk, err)
			}
			t.Logf("%d tasks added (at %v)", total, time.Since(start))
			procs := map[string]*exec.Cmd{
				"A": startWorker(t, "A", url, writer, rec.URL, 4),
				"B": startWorker(t, "B", url, writer, rec.URL, 4),
			}

			done := waitTasks(t, o, c, ids, 60*time.Second)
			by := map[string]int{}
			for _, tk := range done {
				if len(tk.Attempts) != 1 {
					t.Fatalf("task %s took attempts %+v; want one", tk.ID, tk.Attempts)
				}
				var r struct{ By string }
				if err := json.Unmarshal(tk.Result, &r); err != nil || r.By == "" {
					t.Fatalf("task %s result %s", tk.ID, tk.Result)
				}
				by[r.By]++
			}
			rs.mu.Lock()
			overlap, peak := rs.overlap, rs.peak
			rs.mu.Unlock()
			if overlap != "" {
				t.Fatal(overlap)
			}
			if peak > maxConcurrent {
				t.Fatalf("%d attempts ran at once under maxConcurrent %d", peak, maxConcurrent)
			}
			if by["A"] == 0 || by["B"] == 0 {
				t.Fatalf("work by worker: %v; want both", by)
			}
			t.Logf("%d tasks, peak %d in flight, by worker %v (at %v)", total, peak, by, time.Since(start))

			// SIGKILL a worker mid-attempt: the attempt is retried on the
			// other, with attempt 2.
			functionQueue(t, c, "hang", 0)
			o.watch(t, "hang")
			killed := make(chan report, 1)
			rs.mu.Lock()
			rs.onStart = func(r report) {
				if r.Attempt == 1 {
					select {
					case killed <- r:
					default:
					}
				}
			}
			rs.mu.Unlock()
			res, err := c.AddTask(ctx, "jobs", "hang", errandapi.NewTask{Payload: json.RawMessage(`{"hangOn1":true}`)})
			if err != nil {
				t.Fatal(err)
			}
			var first report
			select {
			case first = <-killed:
			case <-time.After(30 * time.Second):
				t.Fatal("the hanging attempt never started")
			}
			if err := procs[first.Worker].Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			rs.forget(first.Worker)
			tk := waitTasks(t, o, c, []string{res.ID}, 60*time.Second)[res.ID]
			var r struct{ By string }
			_ = json.Unmarshal(tk.Result, &r)
			if tk.Attempt != 2 || r.By == first.Worker || r.By == "" {
				t.Fatalf("after killing %s: attempt %d by %q; want attempt 2 by the other", first.Worker, tk.Attempt, r.By)
			}
			if a1 := tk.Attempts[0]; a1.Status != errandapi.AttemptFailed || !strings.HasPrefix(derefStr(a1.Error), "the worker disconnected during the attempt: the connection broke without a close frame") {
				t.Fatalf("the killed attempt is recorded as %+v", a1)
			}

			t.Logf("killed attempt retried (at %v)", time.Since(start))

			// A chain of adds from handlers: depth 1 with source function,
			// and the add that would make depth 9 refused.
			functionQueue(t, c, "chain", 0)
			cut := make(chan report, 1) // the first add refused
			rs.mu.Lock()
			rs.onAdd = func(r report) {
				if r.Code != "" {
					select {
					case cut <- r:
					default:
					}
				}
			}
			rs.mu.Unlock()
			root, err := c.AddTask(ctx, "jobs", "chain", errandapi.NewTask{Payload: json.RawMessage(`{"chain":"chain"}`)})
			if err != nil {
				t.Fatal(err)
			}
			var refused report
			select {
			case refused = <-cut:
			case <-time.After(60 * time.Second):
				t.Fatal("timed out waiting for the chain to be cut")
			}
			if refused.Code != string(errandapi.CodeDepthExceeded) || refused.Depth != 8 {
				t.Fatalf("the chain was cut by %+v; want DEPTH_EXCEEDED from depth 8", refused)
			}
			page, err := c.ListTasks(ctx, "jobs", "chain", client.ListOptions{Limit: 50})
			if err != nil {
				t.Fatal(err)
			}
			depths := map[int]string{}
			for _, tk := range page.Tasks {
				depths[tk.Depth] = tk.Source
			}
			if len(page.Tasks) != 9 || depths[0] != "api" || depths[1] != "function" || depths[8] != "function" {
				t.Fatalf("chain of %d tasks from %s, depth→source %v; want 9, depths 0–8, function from 1", len(page.Tasks), root.ID, depths)
			}
		})
	}
}

func derefStr(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// TestWorkerOnOneOfTwoNodes: two `errand serve` nodes on one PostgreSQL,
// the worker connected to only one: tasks added through the other run,
// each once, on the first attempt (the node without the worker never
// claims them, so it spends no attempt on them).
func TestWorkerOnOneOfTwoNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("runs server and worker processes")
	}
	ctx := context.Background()
	urlA, adminA, writer, store := serveNode(t, "postgres")
	_, urlB, logsB := startServe(t, buildErrand(t), "--store", store)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("node B log:\n%s", logsB)
		}
	})
	code, out, errOut := runMain("keys", "create", "--store", store, "--org", "acme", "--grant", "write:jobs")
	if code != 0 {
		t.Fatal(errOut)
	}
	viaB, err := client.New(urlB, client.Options{APIKey: strings.TrimSpace(out)})
	if err != nil {
		t.Fatal(err)
	}
	functionQueue(t, adminA, "work", 0)
	o := watchOutcomes(t, adminA, "work")
	rs := &reports{running: map[string]string{}}
	rec := httptest.NewServer(rs)
	defer rec.Close()
	startWorker(t, "A", urlA, writer, rec.URL, 4)
	var ids []string
	for range 20 {
		res, err := viaB.AddTask(ctx, "jobs", "work", errandapi.NewTask{Payload: json.RawMessage(`{"sleepMs":5}`)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.ID)
	}
	for id, tk := range waitTasks(t, o, viaB, ids, 30*time.Second) {
		if tk.Attempt != 1 || len(tk.Attempts) != 1 {
			t.Fatalf("task %s took %d attempts: %+v", id, tk.Attempt, tk.Attempts)
		}
	}
}
