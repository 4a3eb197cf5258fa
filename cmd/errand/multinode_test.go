package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/errandhq/errand/internal/id"
	"github.com/errandhq/errand/internal/testkit"
)

// pgSchemaURL makes a fresh schema on the test PostgreSQL and returns a store
// URL that uses it; the schema is dropped at cleanup.
func pgSchemaURL(t *testing.T) string {
	t.Helper()
	u, schema := pgFresh(t, "errand_mn_", "CREATE SCHEMA %s", "DROP SCHEMA %s CASCADE")
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// pgFresh makes a fresh object (a schema, a database) on the test
// PostgreSQL with create, its name put for %s, drops it at cleanup with
// drop, and returns the server's URL and the name. It skips t when
// ERRAND_TEST_POSTGRES is unset.
func pgFresh(t *testing.T, prefix, create, drop string) (*url.URL, string) {
	t.Helper()
	base := os.Getenv("ERRAND_TEST_POSTGRES")
	if base == "" {
		testkit.SkipPostgres(t)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("ERRAND_TEST_POSTGRES is set but PostgreSQL does not answer: %v", err)
	}
	defer conn.Close(ctx)
	name := prefix + id.Secret(6)
	if _, err := conn.Exec(ctx, fmt.Sprintf(create, name)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), base)
		if err == nil {
			_, _ = c.Exec(context.Background(), fmt.Sprintf(drop, name))
			c.Close(context.Background())
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	return u, name
}

// TestThreeNodesShareTheWorkAndSurviveAKill: three `errand serve` processes
// on one PostgreSQL deliver thousands of tasks to a loopback receiver while
// one node is killed with SIGKILL mid-flight. Every task succeeds, the
// queue's maxConcurrent holds across the nodes, and no task is ever
// delivered beside itself.
func TestThreeNodesShareTheWorkAndSurviveAKill(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three server processes")
	}
	storeURL := pgSchemaURL(t)
	bin := buildErrand(t)

	const total, maxConcurrent = 2000, 8
	var mu sync.Mutex
	inFlight, peak, calls := 0, 0, 0
	running := map[string]bool{} // task ids inside the handler now
	overlap := ""
	succeeded := map[string]bool{}
	attempts := map[string][]int{} // attempt numbers each task was delivered with
	// The kill: the receiver holds one delivery until its node is killed,
	// so that node surely dies with an attempt in flight.
	holdOne := false
	heldPort := make(chan int, 1) // the sender's local port of the delivery held
	killed := make(chan struct{})
	release := sync.OnceFunc(func() { close(killed) })
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Task struct {
				ID      string `json:"id"`
				Attempt int    `json:"attempt"`
			} `json:"task"`
		}
		raw, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(raw, &body)
		mu.Lock()
		calls++
		inFlight++
		peak = max(peak, inFlight)
		if running[body.Task.ID] && overlap == "" {
			overlap = body.Task.ID
		}
		running[body.Task.ID] = true
		attempts[body.Task.ID] = append(attempts[body.Task.ID], body.Task.Attempt)
		hold := holdOne
		holdOne = false
		mu.Unlock()
		if hold {
			port, _ := strconv.Atoi(r.RemoteAddr[strings.LastIndex(r.RemoteAddr, ":")+1:])
			heldPort <- port
			<-killed
		}
		time.Sleep(20 * time.Millisecond) // a target that does some work
		mu.Lock()
		inFlight--
		delete(running, body.Task.ID)
		succeeded[body.Task.ID] = true
		mu.Unlock()
	}))
	defer rcv.Close()
	defer release() // before the receiver closes: it waits for its handlers

	key, nodes := startNodes(t, bin, storeURL, 3)
	n0 := nodes[0].url
	if st, body := call(t, key, "PATCH", n0+"/v1/tasks/jobs/settings", `{"maxInFlight":1000}`); st != 200 {
		t.Fatalf("settings: %d %s", st, body)
	}
	q := fmt.Sprintf(`{"name":"q","target":{"webhook":%q},"maxConcurrent":%d,"minBackoffSeconds":0.1,"maxBackoffSeconds":0.5}`, rcv.URL, maxConcurrent)
	if st, body := call(t, key, "POST", n0+"/v1/tasks/jobs/queues", q); st != 201 {
		t.Fatalf("queue: %d %s", st, body)
	}
	// Add through every node in turn.
	batch := "[" + strings.TrimSuffix(strings.Repeat(`{"payload":{"n":1}},`, 100), ",") + "]"
	for i := 0; i < total; i += 100 {
		if st, body := call(t, key, "POST", nodes[(i/100)%3].url+"/v1/tasks/jobs/queues/q/tasks", batch); st != 201 {
			t.Fatalf("add: %d %s", st, body)
		}
	}
	// Kill, mid-flight, the node of a delivery the receiver holds: /proc
	// tells which process owns the local port it comes from.
	waitUntil(t, 60*time.Second, "deliveries to start", func() bool { mu.Lock(); defer mu.Unlock(); return calls > 300 })
	mu.Lock()
	holdOne = true
	mu.Unlock()
	var port int
	select {
	case port = <-heldPort:
	case <-time.After(60 * time.Second):
		t.Fatal("no delivery came to hold")
	}
	victim := -1
	for i, n := range nodes {
		if localPorts(t, n.cmd.Process.Pid)[port] {
			victim = i
		}
	}
	if victim < 0 {
		t.Fatalf("no node owns port %d of the delivery held", port)
	}
	if err := nodes[victim].cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = nodes[victim].cmd.Wait()
	release()
	alive := nodes[(victim+1)%3]
	// Every task reaches succeeded (read through a surviving node).
	waitUntil(t, 3*time.Minute, "every task to succeed", func() bool {
		st, body := call(t, key, "GET", alive.url+"/v1/tasks/jobs/queues/q", "")
		if st != 200 {
			return false
		}
		var v struct {
			Queue struct {
				Counts map[string]int `json:"counts"`
			} `json:"queue"`
		}
		_ = json.Unmarshal([]byte(body), &v)
		return v.Queue.Counts["succeeded"] == total
	})
	mu.Lock()
	defer mu.Unlock()
	if len(succeeded) != total {
		t.Fatalf("the receiver saw %d distinct tasks, want %d", len(succeeded), total)
	}
	if peak > maxConcurrent {
		t.Fatalf("peak concurrency across nodes %d, above maxConcurrent %d", peak, maxConcurrent)
	}
	if overlap != "" {
		t.Fatalf("task %s was delivered beside itself", overlap)
	}
	// A task delivered again (its first node died mid-flight) carries a
	// higher attempt number each time.
	for id, as := range attempts {
		for i := 1; i < len(as); i++ {
			if as[i] <= as[i-1] {
				t.Fatalf("task %s delivered with attempts %v", id, as)
			}
		}
	}
	if calls == total {
		t.Fatal("no delivery was repeated: the killed node had nothing in flight, so the test proved nothing")
	}
	t.Logf("%d tasks, %d deliveries (%d repeated after killing node %d), peak concurrency %d", total, calls, calls-total, victim, peak)
}

type nodeProc struct {
	cmd  *exec.Cmd
	url  string
	logs *lockedBuffer
}

// adminKey makes a full:* key for organization acme in the store at
// storeURL and returns it.
func adminKey(t *testing.T, storeURL string) string {
	t.Helper()
	code, key, stderr := runMain("keys", "create", "--store", storeURL, "--org", "acme", "--grant", "full:*")
	if code != 0 {
		t.Fatalf("keys create: %s", stderr)
	}
	return strings.TrimSpace(key)
}

// startNodes makes an admin key, starts n serve nodes on storeURL that may
// deliver to loopback webhooks, and creates the instance jobs through the
// first; it returns the key and the nodes.
func startNodes(t *testing.T, bin, storeURL string, n int) (string, []*nodeProc) {
	t.Helper()
	key := adminKey(t, storeURL)
	var nodes []*nodeProc
	for range n {
		cmd, url, logs := startServe(t, bin, "--store", storeURL, "--webhook-allow", "127.0.0.0/8")
		nodes = append(nodes, &nodeProc{cmd: cmd, url: url, logs: logs})
	}
	if st, body := call(t, key, "POST", nodes[0].url+"/v1/instances", `{"name":"jobs"}`); st != 201 {
		t.Fatalf("instance: %d %s", st, body)
	}
	return key, nodes
}

func waitUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestPostgresGoneAndBack: while PostgreSQL cannot be reached, /healthz and
// every call answer 503 (never a 2xx without a commit); when it is back the
// node recovers without a restart.
func TestPostgresGoneAndBack(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a server process")
	}
	storeURL := pgSchemaURL(t)
	u, _ := url.Parse(storeURL)
	target := u.Host
	if u.Port() == "" {
		target += ":5432"
	}
	p := testkit.NewProxy(t, target)
	u.Host = p.Addr
	viaProxy := u.String()
	bin := buildErrand(t)
	key := adminKey(t, storeURL)
	_, base, _ := startServe(t, bin, "--store", viaProxy)
	if st, body := call(t, key, "POST", base+"/v1/instances", `{"name":"jobs"}`); st != 201 {
		t.Fatalf("instance: %d %s", st, body)
	}
	if st, _ := call(t, "", "GET", base+"/healthz", ""); st != 200 {
		t.Fatalf("healthz: %d", st)
	}
	p.Cut()
	waitUntil(t, 20*time.Second, "/healthz to say the store is gone", func() bool {
		st, _ := call(t, "", "GET", base+"/healthz", "")
		return st == 503
	})
	if st, body := call(t, key, "POST", base+"/v1/tasks/jobs/queues", `{"name":"q","mode":"pull"}`); st != 503 {
		t.Fatalf("a write with the store gone answered %d %s", st, body)
	}
	p.Start(p.Addr)
	waitUntil(t, 30*time.Second, "the node to recover", func() bool {
		st, _ := call(t, "", "GET", base+"/healthz", "")
		return st == 200
	})
	if st, body := call(t, key, "POST", base+"/v1/tasks/jobs/queues", `{"name":"q","mode":"pull"}`); st != 201 {
		t.Fatalf("after recovery: %d %s", st, body)
	}
}

// localPorts lists the local TCP ports of the sockets process pid holds
// (Linux: its fds' socket inodes, looked up in /proc/net/tcp and tcp6).
func localPorts(t *testing.T, pid int) map[int]bool {
	t.Helper()
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Skipf("needs /proc: %v", err)
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if err == nil && strings.HasPrefix(link, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
		}
	}
	ports := map[int]bool{}
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		raw, err := os.ReadFile(table)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(raw), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) < 10 || !inodes[f[9]] {
				continue
			}
			if _, hexPort, ok := strings.Cut(f[1], ":"); ok {
				if p, err := strconv.ParseInt(hexPort, 16, 32); err == nil {
					ports[int(p)] = true
				}
			}
		}
	}
	return ports
}
