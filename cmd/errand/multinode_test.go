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
	heldPort := make(chan int, 1)  // the sender's local port of the delivery held
	started := make(chan struct{}) // closed at the receiver's 301st call
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
		if calls == 301 {
			close(started)
		}
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
	// Each success is an event the test can wait on: a task rule chains
	// every task of q that finishes to the pull queue outcomes, which the
	// test long-polls (see outcomes).
	o := watchOutcomes(t, apiClient(t, n0, key), "q")
	// Add through every node in turn.
	batch := "[" + strings.TrimSuffix(strings.Repeat(`{"payload":{"n":1}},`, 100), ",") + "]"
	for i := 0; i < total; i += 100 {
		if st, body := call(t, key, "POST", nodes[(i/100)%3].url+"/v1/tasks/jobs/queues/q/tasks", batch); st != 201 {
			t.Fatalf("add: %d %s", st, body)
		}
	}
	// Kill, mid-flight, the node of a delivery the receiver holds: /proc
	// tells which process owns the local port it comes from.
	select {
	case <-started:
	case <-time.After(60 * time.Second):
		t.Fatal("timed out waiting for deliveries to start")
	}
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
	// Every task reaches succeeded (read through a surviving node): wait
	// for each one's chained task in outcomes, then read the queue's counts.
	o.c = apiClient(t, alive.url, key)
	o.wait(t, "every task to succeed", 3*time.Minute, func() bool { return len(o.state) == total })
	for id, state := range o.state {
		if state != "succeeded" {
			t.Fatalf("task %s %s", id, state)
		}
	}
	st, body := call(t, key, "GET", alive.url+"/v1/tasks/jobs/queues/q", "")
	var v struct {
		Queue struct {
			Counts map[string]int `json:"counts"`
		} `json:"queue"`
	}
	if err := json.Unmarshal([]byte(body), &v); st != 200 || err != nil {
		t.Fatalf("queue q: %d %s", st, body)
	}
	if got := v.Queue.Counts["succeeded"]; got != total {
		t.Fatalf("%d tasks of q succeeded, want %d", got, total)
	}
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
func startNodes(t *testing.T, bin, storeURL string, n int, extra ...string) (string, []*nodeProc) {
	t.Helper()
	key := adminKey(t, storeURL)
	var nodes []*nodeProc
	for range n {
		cmd, url, logs := startServe(t, bin, append([]string{"--store", storeURL, "--webhook-allow", "127.0.0.0/8"}, extra...)...)
		nodes = append(nodes, &nodeProc{cmd: cmd, url: url, logs: logs})
	}
	if st, body := call(t, key, "POST", nodes[0].url+"/v1/instances", `{"name":"jobs"}`); st != 201 {
		t.Fatalf("instance: %d %s", st, body)
	}
	return key, nodes
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
	// Cut returns once every connection to the database is closed and
	// nothing listens: the node's next round trip fails at once, so no
	// waiting is needed.
	p.Cut()
	if st, _ := call(t, "", "GET", base+"/healthz", ""); st != 503 {
		t.Fatalf("healthz with the store gone: %d, want 503", st)
	}
	if st, body := call(t, key, "POST", base+"/v1/tasks/jobs/queues", `{"name":"q","mode":"pull"}`); st != 503 {
		t.Fatalf("a write with the store gone answered %d %s", st, body)
	}
	// Start returns once the proxy listens again: the database is back
	// now. What remains are the node's pooled connections that died with
	// the proxy: each may fail one call (503) and is dropped by the pool
	// when it does, so the node answers 200 within one call more than its
	// pool holds (16, the store's default), never after a time.
	p.Start(p.Addr)
	for try := 0; ; try++ {
		st, _ := call(t, "", "GET", base+"/healthz", "")
		if st == 200 {
			break
		}
		if st != 503 || try == 16 {
			t.Fatalf("healthz after the store came back: %d after %d calls", st, try+1)
		}
	}
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

// TestServeThroughPgBouncer: `errand keys` and two `errand serve` nodes
// reach PostgreSQL through a real PgBouncer in session mode with nothing
// set for errand, their store URL naming, in its search_path, a schema
// that does not exist yet: the first command creates and migrates it
// through the pooler, a pull task added through one node is leased and
// acked through the other, and the first reads it succeeded.
func TestServeThroughPgBouncer(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two server processes")
	}
	// A name only (the create is a no-op): the schema is the first
	// command's to make; it is dropped at cleanup.
	u, schema := pgFresh(t, "errand_pgb_", "SELECT '%s'", "DROP SCHEMA IF EXISTS %s CASCADE")
	bouncer := testkit.PgBouncer(t, u.String(), "session", "", 40)
	storeURL := bouncer + "&search_path=" + strings.ToUpper(schema)
	bin := buildErrand(t)
	key, nodes := startNodes(t, bin, storeURL, 2)
	a, b := nodes[0].url, nodes[1].url
	if st, body := call(t, key, "POST", a+"/v1/tasks/jobs/queues", `{"name":"q","mode":"pull"}`); st != 201 {
		t.Fatalf("queue: %d %s", st, body)
	}
	id := addOne(t, key, a, "q")
	st, body := call(t, key, "POST", b+"/v1/tasks/jobs/queues/q/lease", `{"count":1,"leaseSeconds":60,"waitSeconds":10}`)
	var leased struct {
		Tasks []struct{ ID, LeaseID string } `json:"tasks"`
	}
	if err := json.Unmarshal([]byte(body), &leased); st != 200 || err != nil || len(leased.Tasks) != 1 || leased.Tasks[0].ID != id {
		t.Fatalf("lease through the other node: %d %s", st, body)
	}
	if st, body := call(t, key, "POST", b+"/v1/tasks/jobs/tasks/"+id+"/ack", `{"leaseId":"`+leased.Tasks[0].LeaseID+`"}`); st != 200 {
		t.Fatalf("ack: %d %s", st, body)
	}
	st, body = call(t, key, "GET", a+"/v1/tasks/jobs/tasks/"+id, "")
	if st != 200 || !strings.Contains(body, `"state":"succeeded"`) {
		t.Fatalf("the task through the first node: %d %s", st, body)
	}
	var tables int
	conn, err := pgx.Connect(context.Background(), u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM pg_tables WHERE schemaname = $1`,
		strings.ToLower(schema)).Scan(&tables); err != nil || tables == 0 {
		t.Fatalf("tables in schema %s: %d, %v", strings.ToLower(schema), tables, err)
	}
}

// addOne adds one task ({"n":1}) to queue through the node at base and
// returns its id.
func addOne(t *testing.T, key, base, queue string) string {
	t.Helper()
	st, body := call(t, key, "POST", base+"/v1/tasks/jobs/queues/"+queue+"/tasks", `[{"payload":{"n":1}}]`)
	if st != 201 {
		t.Fatalf("add: %d %s", st, body)
	}
	var added struct {
		Tasks []struct {
			ID string `json:"id"`
		} `json:"tasks"`
	}
	if err := json.Unmarshal([]byte(body), &added); err != nil || len(added.Tasks) != 1 {
		t.Fatalf("add answered %s (%v)", body, err)
	}
	return added.Tasks[0].ID
}
