package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/errandhq/errand/internal/testkit"
)

// TestPostgresCrashAfterClaimDeliversOnce is defect 0 of issue 19: a
// private PostgreSQL is crashed (pg_ctl stop -m immediate) while a push
// delivery is in flight on a {maxConcurrent: 1, maxAttempts: 1} queue, and
// restarted. The claim must have been durable before the delivery began:
// the task is never delivered again beside itself, as the same attempt, and
// ends succeeded after exactly one delivery. The cluster's WAL writer is
// slowed to 10 s so that a commit that did not wait for its flush is surely
// lost in the crash, as it would be under load.
func TestPostgresCrashAfterClaimDeliversOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a private PostgreSQL cluster and a server process")
	}
	pg := testkit.StartPGCluster(t, "wal_writer_delay = 10000ms", "synchronous_commit = on")
	bin := buildErrand(t)

	var mu sync.Mutex
	var attempts []int // attempt numbers in delivery order
	open := 0          // deliveries inside the handler now
	beside := false    // a delivery started while another was open
	arrived := make(chan struct{}, 8)
	release := make(chan struct{})
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Task struct {
				Attempt int `json:"attempt"`
			} `json:"task"`
		}
		raw, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(raw, &body)
		mu.Lock()
		attempts = append(attempts, body.Task.Attempt)
		if open > 0 {
			beside = true
		}
		open++
		mu.Unlock()
		arrived <- struct{}{}
		select { // the first delivery is held until the database is back
		case <-release:
		case <-r.Context().Done():
		}
		mu.Lock()
		open--
		mu.Unlock()
	}))
	defer rcv.Close()
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()

	key, url, logs, o, taskID := onePushTask(t, pg, bin, rcv.URL, `"maxConcurrent":1,"maxAttempts":1`)

	select {
	case <-arrived:
	case <-time.After(60 * time.Second):
		t.Fatalf("the delivery never arrived\n%s", logs)
	}
	pg.Crash()
	pg.Start()
	// With the claim lost, the task is due again and its slot free: errand
	// delivers it a second time, beside the first, as attempt 1 again,
	// before or after the first one answers. With the claim durable, the
	// first delivery's answer is stored once the database is back, and the
	// task ends succeeded.
	//
	// Crash returns once the server is down and Start once it accepts
	// connections again: the database is back now. What remains are the
	// node's pooled connections that died in the crash: each may fail one
	// call (503) and is dropped by the pool when it does, so the node
	// answers 200 within one call more than its pool holds (16, the
	// store's default), never after a time.
	for try := 0; ; try++ {
		st, body := call(t, key, "GET", url+"/v1/tasks/jobs/tasks/"+taskID, "")
		if st == 200 {
			break
		}
		if st != 503 || try == 16 {
			t.Fatalf("errand did not reach the restarted database: %d %s after %d calls", st, body, try+1)
		}
	}
	close(release)
	// Either way the task ends, succeeded or failed, and its outcome is
	// chained to outcomes: the first delivery's answer stored, or (the
	// claim lost) a second delivery's; the attempts the receiver saw tell
	// them apart.
	state := o.waitIDs(t, []string{taskID}, 90*time.Second)[taskID]
	mu.Lock()
	defer mu.Unlock()
	if len(attempts) != 1 || beside {
		t.Fatalf("after the crash the task was delivered %d times (attempts %v, beside itself: %v); want once", len(attempts), attempts, beside)
	}
	if state != "succeeded" {
		t.Fatalf("task %s is %s after its one delivery answered 200", taskID, state)
	}
}

// onePushTask starts a serve node on pg with a full key, makes instance
// jobs and its push queue q to receiver with the queue's extra settings
// (JSON members), watches q's outcomes and adds one task: it returns the
// key, the node's URL and log, the watch and the task's id.
func onePushTask(t *testing.T, pg *testkit.PGCluster, bin, receiver, settings string) (string, string, *lockedBuffer, *outcomes, string) {
	t.Helper()
	code, key, stderr := runMain("keys", "create", "--store", pg.URL(), "--org", "acme", "--grant", "full:*")
	if code != 0 {
		t.Fatalf("keys create: %s", stderr)
	}
	key = strings.TrimSpace(key)
	// At debug: the outcome writer's later tries are debug lines, which
	// the outage tests wait on.
	_, url, logs := startServe(t, bin, "--store", pg.URL(), "--webhook-allow", "127.0.0.0/8", "--log-level", "debug")
	if st, body := call(t, key, "POST", url+"/v1/instances", `{"name":"jobs"}`); st != 201 {
		t.Fatalf("instance: %d %s", st, body)
	}
	q := fmt.Sprintf(`{"name":"q","target":{"webhook":%q},%s}`, receiver, settings)
	if st, body := call(t, key, "POST", url+"/v1/tasks/jobs/queues", q); st != 201 {
		t.Fatalf("queue: %d %s", st, body)
	}
	o := watchOutcomes(t, apiClient(t, url, key), "q")
	st, body := call(t, key, "POST", url+"/v1/tasks/jobs/queues/q/tasks", `{"payload":{"n":1}}`)
	if st != 201 {
		t.Fatalf("add: %d %s", st, body)
	}
	var added struct {
		Tasks []struct {
			ID string `json:"id"`
		} `json:"tasks"`
	}
	_ = json.Unmarshal([]byte(body), &added)
	return key, url, logs, o, added.Tasks[0].ID
}
