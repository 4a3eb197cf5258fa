package main

// errand.go drives a real `errand serve` process over HTTP, as a user of the
// v1 API would: the binary is built once from the repository (or given with
// --errand-bin), each run gets a fresh store (a temp dir for SQLite, a fresh
// database for PostgreSQL), a key made with `errand keys create`, a server
// started with startExternal, an instance `bench` with maxInFlight raised,
// and the queues its workload needs.
//
// Workloads:
//   - insert:   arrays of 100 tasks per POST …/queues/{q}/tasks from several
//     concurrent clients, into a paused push queue.
//   - burndown: a pull queue: workers lease {count 500, leaseSeconds 60} and
//     ack every task with concurrent requests; done = the last ack answered
//     (an ack answers after its group commit).
//   - push:     a paused push queue targeting the loopback webhookReceiver is
//     unpaused; done = the receiver saw every task and the queue's counts
//     say nothing is left scheduled, running or retrying.
//   - steady:   producers add batches of 100 to a push queue while the
//     dispatcher delivers (latency = add call → webhook arrives).
//   - backlog:  AddFuture adds tasks with "delay" a day ahead to the steady
//     queue (arrays of 100, concurrent clients), then steady runs on it; the
//     future tasks must stay scheduled and undelivered.
//   - idle:     one task at a time into a push queue → webhook arrival.
//
// Every workload checks that each task was done exactly once: per id at the
// receiver (push), per id over the leases and acks (pull).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// errandTuning is the client-side and instance settings of one errand run.
type errandTuning struct {
	InsertClients  int // concurrent add callers (insert, preloads, steady producers)
	LeaseWorkers   int // burndown: workers, each leasing LeaseCount and acking them
	LeaseCount     int // burndown: tasks per lease call (errand allows 1–1,000)
	AckConcurrency int // burndown: concurrent ack requests per worker (single acks)
	// BatchAck acks each leased batch in one call of errand's batch ack
	// (POST …/queues/{q}/ack); 0 sends one ack request per task.
	BatchAck    int
	MaxInFlight int // the instance's maxInFlight (push deliveries in flight)
	SteadyMode  string
}

// defaultErrandTuning is what the measurements on the 2-core machine chose
// (README.md, "Settings per system", says what was tried).
var defaultErrandTuning = errandTuning{
	InsertClients:  4,
	LeaseWorkers:   4,
	LeaseCount:     500,
	AckConcurrency: 16,
	BatchAck:       1,
	MaxInFlight:    1000,
	SteadyMode:     "push",
}

// parseErrandTuning applies "key=value,…" (the --errand-tuning flag) to t.
func parseErrandTuning(t errandTuning, s string) (errandTuning, error) {
	for _, kv := range splitList(s) {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return t, fmt.Errorf("--errand-tuning: %q is not key=value", kv)
		}
		if k == "steadyMode" {
			if v != "push" && v != "pull" {
				return t, fmt.Errorf("--errand-tuning: steadyMode is push or pull, not %q", v)
			}
			t.SteadyMode = v
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || (n == 0 && k != "batchAck") {
			return t, fmt.Errorf("--errand-tuning: %s wants a positive integer, not %q", k, v)
		}
		switch k {
		case "insertClients":
			t.InsertClients = n
		case "leaseWorkers":
			t.LeaseWorkers = n
		case "leaseCount":
			t.LeaseCount = n
		case "ackConcurrency":
			t.AckConcurrency = n
		case "maxInFlight":
			t.MaxInFlight = n
		case "batchAck":
			t.BatchAck = n
		default:
			return t, fmt.Errorf("--errand-tuning: unknown key %q (insertClients, leaseWorkers, leaseCount, ackConcurrency, batchAck, maxInFlight, steadyMode)", k)
		}
	}
	return t, nil
}

const (
	errandInstance = "bench"
	errandOrg      = "bench"
)

// errandSystem drives a real `errand serve` over HTTP.
type errandSystem struct {
	o     Options
	store string // "sqlite" or "postgres"
	tun   errandTuning

	dir      string // temp dir of the run: the SQLite file, the server's log
	dbName   string // postgres: the fresh database of the run
	storeURL string
	key      string
	base     string // http://127.0.0.1:PORT
	client   *http.Client

	proc *externalProcess
	hook *webhookReceiver
	p    *probe

	steadyMade bool // the steady queue exists (AddFuture made it before Steady)
	future     int  // tasks AddFuture scheduled in the future in the steady queue
}

func newErrandSystem(o Options, store string) System {
	return &errandSystem{o: o, store: store, tun: o.ErrandTuning}
}

func (e *errandSystem) Name() string {
	return "errand-" + map[string]string{"sqlite": "sqlite", "postgres": "pg"}[e.store]
}
func (e *errandSystem) Store() string {
	if e.store == "postgres" {
		return "postgresql"
	}
	return "sqlite"
}

func (e *errandSystem) storeNote() string {
	if e.store == "postgres" {
		return "errand serve --store postgres://… (fresh database per run)"
	}
	return "errand serve --store sqlite://… (fresh file per run; --sync NORMAL, the default)"
}

func (e *errandSystem) Settings(workload string, tuned bool) string {
	t := e.tun
	switch workload {
	case "insert":
		return fmt.Sprintf("%s; POST arrays of 100 from %d concurrent HTTP clients into a paused push queue", e.storeNote(), t.InsertClients)
	case "burndown":
		if t.BatchAck > 0 {
			return fmt.Sprintf("pull queue; preload %d clients × 100; %d workers × lease {count %d, leaseSeconds 60}, each acking its batch in one batch-ack call; done = last ack answered",
				t.InsertClients, t.LeaseWorkers, t.LeaseCount)
		}
		return fmt.Sprintf("pull queue; preload %d clients × 100; %d workers × lease {count %d, leaseSeconds 60}, each acking with %d concurrent requests; done = last ack answered (acks are group-committed)",
			t.InsertClients, t.LeaseWorkers, t.LeaseCount, t.AckConcurrency)
	case "push":
		return fmt.Sprintf("push queue → loopback webhook receiver in the harness; maxInFlight %d; preload into the paused queue, then PATCH paused=false; done = receiver saw all and the queue's counts show none scheduled/running/retrying", t.MaxInFlight)
	case "steady":
		if t.SteadyMode == "pull" {
			return fmt.Sprintf("pull queue; producers %d × add 100; %d workers × lease {count 100, waitSeconds 1}, %d concurrent acks each; latency = add → lease answer; done = ack answered", t.InsertClients, t.LeaseWorkers, t.AckConcurrency)
		}
		return fmt.Sprintf("push queue, maxInFlight %d; producers %d × add 100; latency = add → webhook arrives; done = webhook answered 2xx (store checked after the window)", t.MaxInFlight, t.InsertClients)
	case "backlog":
		return fmt.Sprintf(`preload POST arrays of 100 with "delay": %d from %d concurrent HTTP clients into the steady queue; then steady: %s`,
			int(futureDelay.Seconds()), t.InsertClients, e.Settings("steady", tuned))
	case "idle":
		return "push queue; no poll: the dispatcher wakes on add; settle 5 ms (the outcome write), period 20 ms"
	}
	return ""
}

// Preflight builds the binary and, for PostgreSQL, checks that errand can
// use the store at all; an error skips the system with that message.
func (e *errandSystem) Preflight(ctx context.Context) error {
	if _, err := errandBinary(e.o); err != nil {
		return err
	}
	if e.store != "postgres" {
		return nil
	}
	if err := e.Setup(ctx); err != nil {
		_ = e.Teardown(context.WithoutCancel(ctx))
		return skipf("errand serve --store postgres://… does not work in this build yet: %v", err)
	}
	return e.Teardown(ctx)
}

// --- the binary ----------------------------------------------------------------

var errandBuild struct {
	once     sync.Once
	bin, dir string
	err      error
}

// errandBinary builds ./cmd/errand of the repository once per harness run
// (untimed), or returns --errand-bin.
func errandBinary(o Options) (string, error) {
	if o.ErrandBin != "" {
		return o.ErrandBin, nil
	}
	b := &errandBuild
	b.once.Do(func() {
		root, err := filepath.Abs(o.ErrandRoot)
		if err != nil {
			b.err = err
			return
		}
		if _, err := os.Stat(filepath.Join(root, "cmd", "errand")); err != nil {
			b.err = fmt.Errorf("no errand source at %s (run the harness from bench/, or give --errand-src or --errand-bin): %v", root, err)
			return
		}
		b.dir, b.err = os.MkdirTemp("", "bench-errand-bin-")
		if b.err != nil {
			return
		}
		atExit(func() { os.RemoveAll(b.dir) })
		b.bin = filepath.Join(b.dir, "errand")
		cmd := exec.Command("go", "build", "-o", b.bin, "./cmd/errand")
		cmd.Dir = root
		out, err := cmd.CombinedOutput()
		if err != nil {
			b.err = fmt.Errorf("go build ./cmd/errand in %s: %v\n%s", root, err, out)
			return
		}
		logf("bench: built %s from %s", b.bin, root)
	})
	return b.bin, b.err
}

// --- setup / teardown ----------------------------------------------------------

func (e *errandSystem) Setup(ctx context.Context) error {
	bin, err := errandBinary(e.o)
	if err != nil {
		return err
	}
	e.dir, err = os.MkdirTemp("", "bench-errand-")
	if err != nil {
		return err
	}
	switch e.store {
	case "sqlite":
		e.storeURL = "sqlite://" + filepath.Join(e.dir, "errand.db")
	case "postgres":
		if e.dbName, e.storeURL, err = freshDatabase(ctx, e.o.PGAdminURL, "bench_errand"); err != nil {
			return err
		}
	}

	// The key: the one line `errand keys create` prints on stdout.
	var stdout, stderr bytes.Buffer
	kc := exec.CommandContext(ctx, bin, "keys", "create", "--store", e.storeURL, "--org", errandOrg, "--grant", "full:*")
	kc.Stdout, kc.Stderr = &stdout, &stderr
	if err := kc.Run(); err != nil {
		return fmt.Errorf("errand keys create: %v: %s", err, firstLine(stderr.String()))
	}
	e.key = strings.TrimSpace(stdout.String())
	if !strings.HasPrefix(e.key, "errk_") {
		return fmt.Errorf("errand keys create printed %q, not a key", e.key)
	}

	port, err := freePort()
	if err != nil {
		return err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	e.base = "http://" + addr
	logPath := filepath.Join(e.dir, "serve.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	e.proc, err = startExternal(ctx, e.base+"/healthz", 30*time.Second, nil, logFile, bin,
		"serve", "--addr", addr, "--store", e.storeURL, "--webhook-allow", "127.0.0.0/8")
	logFile.Close() // the child has its own descriptor
	if err != nil {
		return fmt.Errorf("%v: %s", err, tailFile(logPath, 3))
	}

	tr := &http.Transport{
		Proxy:               nil,
		MaxIdleConns:        1024,
		MaxIdleConnsPerHost: 1024, // ≥ every concurrency the workloads use
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	e.client = &http.Client{Transport: tr, Timeout: 2 * time.Minute}

	if err := e.call(ctx, "POST", "/v1/instances", []byte(`{"name":"`+errandInstance+`"}`), nil); err != nil {
		return fmt.Errorf("create instance: %w", err)
	}
	if err := e.call(ctx, "PATCH", e.path("/settings"), fmt.Appendf(nil, `{"maxInFlight":%d}`, e.tun.MaxInFlight), nil); err != nil {
		return fmt.Errorf("settings: %w", err)
	}
	e.p = newProbe()
	e.steadyMade, e.future = false, 0
	e.hook, err = newWebhookReceiver(e.p, errandDelivery)
	return err
}

func (e *errandSystem) Teardown(ctx context.Context) error {
	var err error
	// Close this side's idle connections first: a connection the Transport
	// dialled but never used is "new" to the server, and http.Server's
	// graceful shutdown waits 5 s before it treats such a one as idle.
	if e.client != nil {
		e.client.CloseIdleConnections()
		e.client = nil
	}
	if e.proc != nil {
		err = e.proc.Stop()
		e.proc = nil
	}
	if e.hook != nil {
		err = errors.Join(err, e.hook.Close())
		e.hook = nil
	}
	if e.dbName != "" {
		err = errors.Join(err, pgAdmin(ctx, e.o.PGAdminURL, "DROP DATABASE IF EXISTS "+e.dbName+" WITH (FORCE)"))
		e.dbName = ""
	}
	if e.dir != "" {
		err = errors.Join(err, os.RemoveAll(e.dir))
		e.dir = ""
	}
	e.p = nil
	return err
}

// PeakRSSMB reports the errand process's peak RSS, not this harness's.
func (e *errandSystem) PeakRSSMB() float64 {
	if e.proc == nil {
		return 0
	}
	return e.proc.PeakRSSMB()
}

// ResetPeakRSS resets the errand process's peak RSS to its current RSS.
func (e *errandSystem) ResetPeakRSS() {
	if e.proc != nil {
		e.proc.ResetPeakRSS()
	}
}

// --- HTTP ------------------------------------------------------------------------

func (e *errandSystem) path(rest string) string { return "/v1/tasks/" + errandInstance + rest }

// call sends body (JSON bytes, or nil) and decodes a 2xx answer into out (if
// not nil); anything else is an error carrying the answer.
func (e *errandSystem) call(ctx context.Context, method, path string, body []byte, out any) error {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, e.base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+e.key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := e.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("%s %s: HTTP %d: %s", method, path, resp.StatusCode, bytes.TrimSpace(b))
	}
	if out == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		return err
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// createQueue makes a queue: pull, or push to the receiver (paused or not).
func (e *errandSystem) createQueue(ctx context.Context, name, mode string, paused bool) error {
	body := map[string]any{"name": name, "mode": mode}
	if mode == "push" {
		body["target"] = map[string]string{"webhook": e.hook.URL()}
		body["paused"] = paused
	}
	b, _ := json.Marshal(body)
	return e.call(ctx, "POST", e.path("/queues"), b, nil)
}

// addBody is an array of k bench tasks, each {"payload":{"t":at}} followed
// by extra (e.g. `,"delay":86400`, or "").
func addBody(k int, at int64, extra string) []byte {
	b := make([]byte, 0, k*(32+len(extra))+2)
	b = append(b, '[')
	for i := range k {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"payload":{"t":`...)
		b = strconv.AppendInt(b, at, 10)
		b = append(b, '}')
		b = append(b, extra...)
		b = append(b, '}')
	}
	return append(b, ']')
}

type addAnswer struct {
	Tasks []struct {
		OK   bool   `json:"ok"`
		ID   string `json:"id"`
		Code string `json:"code"`
	} `json:"tasks"`
}

// add adds k tasks to queue in one call and returns their ids.
func (e *errandSystem) add(ctx context.Context, queue string, k int) ([]string, error) {
	return e.addWith(ctx, queue, k, "")
}

// addWith is add with extra fields in every task (see addBody).
func (e *errandSystem) addWith(ctx context.Context, queue string, k int, extra string) ([]string, error) {
	var a addAnswer
	if err := e.call(ctx, "POST", e.path("/queues/"+queue+"/tasks"), addBody(k, time.Now().UnixNano(), extra), &a); err != nil {
		return nil, err
	}
	if len(a.Tasks) != k {
		return nil, fmt.Errorf("add of %d answered %d results", k, len(a.Tasks))
	}
	ids := make([]string, k)
	for i, r := range a.Tasks {
		if !r.OK {
			return nil, fmt.Errorf("add refused task %d: %s", i, r.Code)
		}
		ids[i] = r.ID
	}
	return ids, nil
}

// addMany adds n tasks in batches of batch from clients concurrent callers
// and returns every id the server answered.
func (e *errandSystem) addMany(ctx context.Context, queue string, n, batch, clients int) ([]string, error) {
	var next atomic.Int64
	var mu sync.Mutex
	all := make([]string, 0, n)
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for range clients {
		wg.Go(func() {
			for {
				from := next.Add(int64(batch)) - int64(batch)
				if from >= int64(n) {
					return
				}
				ids, err := e.add(ctx, queue, int(min(int64(batch), int64(n)-from)))
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				all = append(all, ids...)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return nil, err
	}
	return all, nil
}

type queueAnswer struct {
	Queue struct {
		Paused bool           `json:"paused"`
		Counts map[string]int `json:"counts"`
		Capped []string       `json:"capped"`
	} `json:"queue"`
}

func (e *errandSystem) counts(ctx context.Context, queue string) (map[string]int, error) {
	c, _, err := e.countsCapped(ctx, queue)
	return c, err
}

// countsCapped is the queue's counts by state and the states whose count
// reached errand's cap (10,000: the count says "at least").
func (e *errandSystem) countsCapped(ctx context.Context, queue string) (map[string]int, map[string]bool, error) {
	var q queueAnswer
	if err := e.call(ctx, "GET", e.path("/queues/"+queue), nil, &q); err != nil {
		return nil, nil, err
	}
	capped := map[string]bool{}
	for _, st := range q.Queue.Capped {
		capped[st] = true
	}
	return q.Queue.Counts, capped, nil
}

// scheduledIs reports whether a queue's scheduled count (c, capped) reads
// as n: exactly, or capped below n (errand counts no further).
func scheduledIs(c map[string]int, capped map[string]bool, n int) bool {
	return c["scheduled"] == n || (capped["scheduled"] && c["scheduled"] > 0 && c["scheduled"] < n)
}

// listIDs pages through a queue's tasks in one state (untimed checks).
func (e *errandSystem) listIDs(ctx context.Context, queue, state string) (map[string]int, error) {
	ids := map[string]int{}
	cursor := ""
	for {
		p := e.path("/queues/"+queue+"/tasks") + "?limit=200&state=" + state
		if cursor != "" {
			p += "&cursor=" + url.QueryEscape(cursor)
		}
		var page struct {
			Tasks []struct {
				ID string `json:"id"`
			} `json:"tasks"`
			Cursor *string `json:"cursor"`
		}
		if err := e.call(ctx, "GET", p, nil, &page); err != nil {
			return nil, err
		}
		for _, t := range page.Tasks {
			ids[t.ID]++
		}
		if page.Cursor == nil || *page.Cursor == "" {
			return ids, nil
		}
		cursor = *page.Cursor
	}
}

// expectAll checks (untimed) that the store lists exactly the ids added, once
// each, in state.
func (e *errandSystem) expectAll(ctx context.Context, queue, state string, added []string) error {
	got, err := e.listIDs(ctx, queue, state)
	if err != nil {
		return err
	}
	return sameIDs(fmt.Sprintf("the store's %s tasks", state), got, added)
}

// sameIDs checks that got holds every id of want exactly once and nothing else.
func sameIDs(what string, got map[string]int, want []string) error {
	var missing, dup int
	seen := make(map[string]bool, len(want))
	for _, id := range want {
		if seen[id] {
			return fmt.Errorf("the server answered id %s twice on add", id)
		}
		seen[id] = true
		switch got[id] {
		case 0:
			missing++
		case 1:
		default:
			dup++
		}
	}
	extra := 0
	for id := range got {
		if !seen[id] {
			extra++
		}
	}
	if missing+dup+extra > 0 {
		return fmt.Errorf("%s: %d of %d missing, %d more than once, %d unknown ids", what, missing, len(want), dup, extra)
	}
	return nil
}

// waitSettled polls the queue until nothing is left scheduled, running,
// leased or retrying, and none failed; it returns when that was seen.
func (e *errandSystem) waitSettled(ctx context.Context, queue string, every, timeout time.Duration) (time.Time, error) {
	return e.waitSettledBut(ctx, queue, 0, every, timeout)
}

// waitSettledBut is waitSettled on a queue that also holds future tasks
// scheduled far ahead (the backlog workload's): settled is nothing running,
// leased or retrying and the scheduled count reading future. errand caps its
// counts (10,000), so with a larger backlog a capped reading is all it can
// say; the caller must already know that its own tasks are no longer
// scheduled (Steady: every one was delivered or acked).
func (e *errandSystem) waitSettledBut(ctx context.Context, queue string, future int, every, timeout time.Duration) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	for {
		c, capped, err := e.countsCapped(ctx, queue)
		if err != nil {
			return time.Time{}, err
		}
		if c["failed"] > 0 || c["cancelled"] > 0 {
			return time.Time{}, fmt.Errorf("queue %s: counts %v", queue, c)
		}
		if c["running"]+c["leased"]+c["retrying"] == 0 {
			if scheduledIs(c, capped, future) {
				return time.Now(), nil
			}
			if c["scheduled"] < future && !capped["scheduled"] {
				return time.Time{}, fmt.Errorf("queue %s: %d scheduled, want the %d future tasks: counts %v", queue, c["scheduled"], future, c)
			}
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("queue %s not settled after %s: counts %v", queue, timeout, c)
		}
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-time.After(every):
		}
	}
}

// --- insert --------------------------------------------------------------------

func (e *errandSystem) Insert(ctx context.Context, n, batch int) (time.Duration, error) {
	if err := e.createQueue(ctx, "insert", "push", true); err != nil {
		return 0, err
	}
	ecpu, hcpu := e.proc.CPUSeconds(), selfCPUSeconds()
	start := time.Now()
	ids, err := e.addMany(ctx, "insert", n, batch, e.tun.InsertClients)
	d := time.Since(start)
	if err != nil {
		return 0, err
	}
	logf("  %s insert: %s", e.Name(), e.cpuNote(n, ecpu, hcpu, d))
	return d, e.expectAll(ctx, "insert", "scheduled", ids)
}

// --- burndown (pull) -----------------------------------------------------------

type leased struct {
	ID      string `json:"id"`
	LeaseID string `json:"leaseId"`
	Payload struct {
		T int64 `json:"t"`
	} `json:"payload"`
}

func (e *errandSystem) lease(ctx context.Context, queue string, count, wait int) ([]leased, error) {
	var a struct {
		Tasks []leased `json:"tasks"`
	}
	body := fmt.Appendf(nil, `{"count":%d,"leaseSeconds":60,"waitSeconds":%d}`, count, wait)
	if err := e.call(ctx, "POST", e.path("/queues/"+queue+"/lease"), body, &a); err != nil {
		return nil, err
	}
	return a.Tasks, nil
}

// ackBatch acks ts in one call of errand's batch ack; every result must be ok.
func (e *errandSystem) ackBatch(ctx context.Context, queue string, ts []leased) error {
	var b strings.Builder
	b.WriteString(`{"acks":[`)
	for i, t := range ts {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"id":"` + t.ID + `","leaseId":"` + t.LeaseID + `"}`)
	}
	b.WriteString(`]}`)
	var a struct {
		Results []struct {
			OK   bool   `json:"ok"`
			ID   string `json:"id"`
			Code string `json:"code"`
		} `json:"results"`
	}
	if err := e.call(ctx, "POST", e.path("/queues/"+queue+"/ack"), []byte(b.String()), &a); err != nil {
		return err
	}
	if len(a.Results) != len(ts) {
		return fmt.Errorf("batch ack: %d results for %d acks", len(a.Results), len(ts))
	}
	for _, r := range a.Results {
		if !r.OK {
			return fmt.Errorf("batch ack of %s: %s", r.ID, r.Code)
		}
	}
	return nil
}

func (e *errandSystem) ack(ctx context.Context, t leased) error {
	return e.call(ctx, "POST", e.path("/tasks/"+t.ID+"/ack"), []byte(`{"leaseId":"`+t.LeaseID+`"}`), nil)
}

// pullWorkers runs workers that lease and ack until stop says so. Each
// worker leases up to 100 and acks them with AckConcurrency concurrent
// requests, then leases again. onTask is called when a task is leased,
// onAck after its ack answered.
func (e *errandSystem) pullWorkers(ctx context.Context, queue string, wait int, stop func() bool, onTask func(leased), onAck func(leased)) error {
	var wg sync.WaitGroup
	errs := make(chan error, e.tun.LeaseWorkers)
	for range e.tun.LeaseWorkers {
		wg.Go(func() {
			sem := make(chan struct{}, e.tun.AckConcurrency)
			for !stop() && ctx.Err() == nil {
				ts, err := e.lease(ctx, queue, e.tun.LeaseCount, wait)
				if err != nil {
					if ctx.Err() == nil {
						errs <- err
					}
					return
				}
				if len(ts) == 0 {
					if wait == 0 {
						time.Sleep(time.Millisecond)
					}
					continue
				}
				if e.tun.BatchAck > 0 {
					for _, t := range ts {
						onTask(t)
					}
					if err := e.ackBatch(ctx, queue, ts); err != nil {
						if ctx.Err() == nil {
							errs <- err
						}
						return
					}
					for _, t := range ts {
						onAck(t)
					}
					continue
				}
				var awg sync.WaitGroup
				var aerr atomic.Pointer[error]
				for _, t := range ts {
					onTask(t)
					sem <- struct{}{}
					awg.Go(func() {
						defer func() { <-sem }()
						if err := e.ack(ctx, t); err != nil {
							aerr.CompareAndSwap(nil, &err)
							return
						}
						onAck(t)
					})
				}
				awg.Wait()
				if p := aerr.Load(); p != nil {
					if ctx.Err() == nil {
						errs <- *p
					}
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// idCounter counts how often each id was seen (safe for concurrent use).
type idCounter struct {
	mu sync.Mutex
	m  map[string]int
}

func newIDCounter(n int) *idCounter { return &idCounter{m: make(map[string]int, n)} }

func (c *idCounter) add(id string) {
	c.mu.Lock()
	c.m[id]++
	c.mu.Unlock()
}

// snapshot is the counts; read it once the counting is over.
func (c *idCounter) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m
}

func (e *errandSystem) BurnDown(ctx context.Context, n int) (time.Duration, error) {
	if err := e.createQueue(ctx, "work", "pull", false); err != nil {
		return 0, err
	}
	ids, err := e.addMany(ctx, "work", n, 100, e.tun.InsertClients)
	if err != nil {
		return 0, fmt.Errorf("preload: %w", err)
	}
	leases, acks := newIDCounter(n), newIDCounter(n)
	var leasedN, acked atomic.Int64
	ecpu, hcpu := e.proc.CPUSeconds(), selfCPUSeconds()
	start := time.Now()
	err = e.pullWorkers(ctx, "work", 0,
		func() bool { return leasedN.Load() >= int64(n) },
		func(t leased) { leasedN.Add(1); leases.add(t.ID) },
		func(t leased) { acked.Add(1); acks.add(t.ID) })
	d := time.Since(start)
	if err != nil {
		return 0, err
	}
	logf("  %s burndown: %s", e.Name(), e.cpuNote(n, ecpu, hcpu, d))
	if err := sameIDs("leased", leases.snapshot(), ids); err != nil {
		return 0, err
	}
	if err := sameIDs("acked", acks.snapshot(), ids); err != nil {
		return 0, err
	}
	if _, err := e.waitSettled(ctx, "work", 10*time.Millisecond, 30*time.Second); err != nil {
		return 0, err
	}
	return d, nil
}

// --- push ------------------------------------------------------------------------

// Push preloads n tasks into a paused push queue, unpauses it, and times
// until the receiver has seen every task and the store agrees.
func (e *errandSystem) Push(ctx context.Context, n int) (time.Duration, error) {
	if err := e.createQueue(ctx, "push", "push", true); err != nil {
		return 0, err
	}
	ids, err := e.addMany(ctx, "push", n, 100, e.tun.InsertClients)
	if err != nil {
		return 0, fmt.Errorf("preload: %w", err)
	}
	ecpu, hcpu := e.proc.CPUSeconds(), selfCPUSeconds()
	start := time.Now()
	if err := e.call(ctx, "PATCH", e.path("/queues/push"), []byte(`{"paused":false}`), nil); err != nil {
		return 0, err
	}
	if err := waitCount(ctx, &e.p.finished, int64(n), 15*time.Minute); err != nil {
		return 0, fmt.Errorf("%w (%d of %d delivered)", err, e.p.finished.Load(), n)
	}
	done, err := e.waitSettled(ctx, "push", time.Millisecond, time.Minute)
	if err != nil {
		return 0, err
	}
	if err := sameIDs("receiver", e.hook.ids(), ids); err != nil {
		return 0, err
	}
	logf("  %s push: %s; the receiver accepted %d connections", e.Name(), e.cpuNote(n, ecpu, hcpu, done.Sub(start)), e.hook.conns.Load())
	return done.Sub(start), nil
}

// --- steady ------------------------------------------------------------------------

// steadyQueue is the queue Steady works (and AddFuture fills first): made
// once per run, a push queue to the receiver, or a pull queue with
// --errand-tuning steadyMode=pull.
func (e *errandSystem) steadyQueue(ctx context.Context) (string, error) {
	const q = "steady"
	if e.steadyMade {
		return q, nil
	}
	mode := "push"
	if e.tun.SteadyMode == "pull" {
		mode = "pull"
	}
	if err := e.createQueue(ctx, q, mode, false); err != nil {
		return "", err
	}
	e.steadyMade = true
	return q, nil
}

// AddFuture adds n tasks with "delay": futureDelay to the steady queue (not
// paused: the tasks are not due), in arrays of 100 from InsertClients
// concurrent clients like the insert workload, and checks that the queue's
// counts show n scheduled.
func (e *errandSystem) AddFuture(ctx context.Context, n int) error {
	q, err := e.steadyQueue(ctx)
	if err != nil {
		return err
	}
	extra := `,"delay":` + strconv.Itoa(int(futureDelay.Seconds()))
	ecpu, hcpu := e.proc.CPUSeconds(), selfCPUSeconds()
	start := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, e.tun.InsertClients)
	for range e.tun.InsertClients {
		wg.Go(func() {
			for {
				from := next.Add(100) - 100
				if from >= int64(n) {
					return
				}
				if _, err := e.addWith(ctx, q, int(min(100, int64(n)-from)), extra); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	logf("  %s backlog preload: %s", e.Name(), e.cpuNote(n, ecpu, hcpu, time.Since(start)))
	// Every add answered ok per task; errand's counts stop at 10,000.
	c, capped, err := e.countsCapped(ctx, q)
	if err != nil {
		return err
	}
	if !scheduledIs(c, capped, n) || c["running"]+c["leased"]+c["retrying"]+c["succeeded"]+c["failed"]+c["cancelled"] != 0 {
		return fmt.Errorf("after adding %d future tasks, queue %s counts %v (capped: %v)", n, q, c, capped)
	}
	e.future = n
	return nil
}

func (e *errandSystem) Steady(ctx context.Context, d time.Duration, maxBacklog int) (SteadyResult, error) {
	pull := e.tun.SteadyMode == "pull"
	q, err := e.steadyQueue(ctx)
	if err != nil {
		return SteadyResult{}, err
	}
	p := e.p
	start := time.Now()
	end := start.Add(d)
	p.recordLatencies(latencyCapacity(d), end)
	pctx, cancel := context.WithDeadline(ctx, end)
	defer cancel()

	var workersDone chan error
	var acks *idCounter
	if pull {
		acks = newIDCounter(int(d.Seconds() * 10_000))
		wctx, wcancel := context.WithCancel(ctx)
		defer wcancel()
		workersDone = make(chan error, 1)
		var stopping atomic.Bool
		go func() {
			workersDone <- e.pullWorkers(wctx, q, 1,
				stopping.Load,
				func(t leased) { p.onStart(t.Payload.T) },
				func(t leased) { p.onFinish(); acks.add(t.ID) })
		}()
		defer func() { stopping.Store(true); wcancel(); <-workersDone }()
	}

	var added atomic.Int64
	var mu sync.Mutex
	var ids []string
	var wg sync.WaitGroup
	errs := make(chan error, e.tun.InsertClients)
	for range e.tun.InsertClients {
		wg.Go(func() {
			// The window closes the gate; a batch under way finishes.
			for backlogGate(pctx, &added, p, int64(maxBacklog)) {
				added.Add(100)
				got, err := e.add(ctx, q, 100)
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				ids = append(ids, got...)
				mu.Unlock()
			}
		})
	}
	<-pctx.Done()
	worked := p.finished.Load()
	elapsed := time.Since(start)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return SteadyResult{}, err
	}
	if ctx.Err() != nil {
		return SteadyResult{}, ctx.Err()
	}
	// Untimed: let the rest drain, then check every task was done once.
	if err := waitCount(ctx, &p.finished, int64(len(ids)), 2*time.Minute); err != nil {
		return SteadyResult{}, fmt.Errorf("after the window: %w (%d of %d done)", err, p.finished.Load(), len(ids))
	}
	if _, err := e.waitSettledBut(ctx, q, e.future, 10*time.Millisecond, time.Minute); err != nil {
		return SteadyResult{}, err
	}
	seen := e.hook.ids()
	what := "receiver"
	if pull {
		seen, what = acks.snapshot(), "acked"
	}
	if err := sameIDs(what, seen, ids); err != nil {
		return SteadyResult{}, err
	}
	return SteadyResult{Worked: int(worked), Elapsed: elapsed, Latency: p.latencies()}, nil
}

// --- idle ------------------------------------------------------------------------

type errandIdle struct {
	e       *errandSystem
	samples int64
}

func (e *errandSystem) Idle(ctx context.Context, tuned bool) (IdleProbe, error) {
	if err := e.createQueue(ctx, "idle", "push", false); err != nil {
		return nil, err
	}
	return &errandIdle{e: e}, nil
}

func (i *errandIdle) Once(ctx context.Context) (time.Duration, error) {
	if err := i.check(); err != nil {
		return 0, err
	}
	i.e.p.drainIdle()
	if _, err := i.e.add(ctx, "idle", 1); err != nil {
		return 0, err
	}
	i.samples++
	return i.e.p.waitIdle(ctx, 30*time.Second)
}

// check: every sample so far was delivered exactly once.
func (i *errandIdle) check() error {
	if got, distinct := i.e.hook.count(); got != i.samples || distinct != i.samples {
		return fmt.Errorf("idle: %d tasks added, %d deliveries of %d distinct tasks", i.samples, got, distinct)
	}
	return nil
}

// Pacing: errand has no poll timer (the dispatcher wakes on add), so the
// period is small; settle leaves time for the previous outcome's write.
func (i *errandIdle) Pacing() (time.Duration, time.Duration) {
	return 5 * time.Millisecond, 20 * time.Millisecond
}

func (i *errandIdle) Close(ctx context.Context) error {
	_, err := i.e.waitSettled(ctx, "idle", 10*time.Millisecond, 30*time.Second)
	if err == nil {
		err = i.check()
	}
	if err != nil {
		logf("  %s idle: %v", i.e.Name(), err) // the harness does not read Close's error
	}
	return err
}

// --- helpers -----------------------------------------------------------------------

// errandDelivery reads a webhook delivery of errand ({"task": {"id": …},
// "payload": {"t": …}}): the add time and the task id.
func errandDelivery(body []byte) (int64, string, error) {
	var v struct {
		Task struct {
			ID string `json:"id"`
		} `json:"task"`
		Payload noopArgs `json:"payload"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		return 0, "", err
	}
	if v.Payload.T == 0 || v.Task.ID == "" {
		return 0, "", errors.New(`no task.id or payload.t in the body`)
	}
	return v.Payload.T, v.Task.ID, nil
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// tailFile returns the last n lines of a file, for error messages.
func tailFile(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], " | ")
}

// --- external process ----------------------------------------------------------

// externalProcess is a server process started for one run.
type externalProcess struct {
	cmd  *exec.Cmd
	done chan error
}

// startExternal starts bin with args and waits until GET healthURL answers
// 200 (or the process exits, or timeout passes). Its output goes to out
// (os.Stderr if nil).
func startExternal(ctx context.Context, healthURL string, timeout time.Duration, env []string, out io.Writer, bin string, args ...string) (*externalProcess, error) {
	if out == nil {
		out = os.Stderr
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &externalProcess{cmd: cmd, done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait() }()
	deadline := time.Now().Add(timeout)
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, healthURL, nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p, nil
			}
		}
		select {
		case err := <-p.done:
			return nil, fmt.Errorf("%s exited before it was healthy: %v", bin, err)
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
			p.Stop()
			return nil, ctx.Err()
		}
		if time.Now().After(deadline) {
			p.Stop()
			return nil, fmt.Errorf("%s not healthy after %s", bin, timeout)
		}
	}
}

// Pid is the process id, for /proc readings.
func (p *externalProcess) Pid() string { return strconv.Itoa(p.cmd.Process.Pid) }

// CPUSeconds is the user+system CPU time the process has used so far.
func (p *externalProcess) CPUSeconds() float64 {
	b, err := os.ReadFile("/proc/" + p.Pid() + "/stat")
	if err != nil {
		return 0
	}
	// Fields after the command (which is in parentheses): state is field 3,
	// utime and stime are fields 14 and 15, in clock ticks (100 per second).
	s := string(b)
	fs := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fs) < 13 {
		return 0
	}
	u, _ := strconv.ParseFloat(fs[11], 64)
	st, _ := strconv.ParseFloat(fs[12], 64)
	return (u + st) / 100
}

// selfCPUSeconds is this process's user+system CPU time so far.
func selfCPUSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// cpuNote describes the CPU errand and the harness used for n tasks since
// (errandCPU, selfCPU) were read.
func (e *errandSystem) cpuNote(n int, errandCPU, selfCPU float64, d time.Duration) string {
	ec, hc := e.proc.CPUSeconds()-errandCPU, selfCPUSeconds()-selfCPU
	return fmt.Sprintf("errand %.2f CPU-s (%.0f µs/task, %.0f%% of a core), harness %.2f CPU-s, over %.2fs",
		ec, ec/float64(n)*1e6, ec/d.Seconds()*100, hc, d.Seconds())
}

// PeakRSSMB is the process's peak RSS so far (a fresh process per run, so
// this is the run's peak, or the peak since ResetPeakRSS).
func (p *externalProcess) PeakRSSMB() float64 { return peakRSSMB(p.Pid()) }

// ResetPeakRSS resets the process's peak RSS (VmHWM) to its current RSS.
func (p *externalProcess) ResetPeakRSS() { resetPeakRSSOf(p.Pid()) }

// Stop sends SIGTERM to the process group, and SIGKILL after 15 s.
func (p *externalProcess) Stop() error {
	pgid := p.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(15 * time.Second):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-p.done
		return errors.New("process did not stop on SIGTERM; killed")
	}
}

// --- webhook receiver ----------------------------------------------------------

// webhookReceiver is the push target: every request's JSON body carries the
// add time and an id, which the extract function finds. It feeds the probe
// and counts deliveries per id (to check exactly-once).
type webhookReceiver struct {
	srv *http.Server
	ln  net.Listener
	p   *probe

	mu    sync.Mutex
	seen  map[string]int
	conns atomic.Int64 // connections accepted: a client that reuses them opens few
}

// newWebhookReceiver listens on 127.0.0.1 on a free port. extract returns
// the add time and the task id from a request body.
func newWebhookReceiver(p *probe, extract func(body []byte) (int64, string, error)) (*webhookReceiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	w := &webhookReceiver{ln: ln, p: p, seen: map[string]int{}}
	w.srv = &http.Server{Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(rw, err.Error(), http.StatusBadRequest)
			return
		}
		t, id, err := extract(body)
		if err != nil {
			http.Error(rw, err.Error(), http.StatusBadRequest)
			return
		}
		p.onStart(t)
		w.mu.Lock()
		w.seen[id]++
		w.mu.Unlock()
		p.onFinish()
		rw.WriteHeader(http.StatusOK)
	})}
	w.srv.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			w.conns.Add(1)
		}
	}
	go w.srv.Serve(ln)
	return w, nil
}

// URL is the receiver's address (http://127.0.0.1:PORT/hook); errand serve
// needs `--webhook-allow 127.0.0.0/8` to deliver to it.
func (w *webhookReceiver) URL() string { return "http://" + w.ln.Addr().String() + "/hook" }

// ids is how many deliveries each id got: a copy, safe to read while
// deliveries go on.
func (w *webhookReceiver) ids() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	m := make(map[string]int, len(w.seen))
	for k, v := range w.seen {
		m[k] = v
	}
	return m
}

// count is the deliveries so far and how many distinct ids they carried.
func (w *webhookReceiver) count() (deliveries, distinct int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, v := range w.seen {
		deliveries += int64(v)
	}
	return deliveries, int64(len(w.seen))
}

func (w *webhookReceiver) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return w.srv.Shutdown(ctx)
}

var (
	_ System      = (*errandSystem)(nil)
	_ RSSReporter = (*errandSystem)(nil)
	_ Pusher      = (*errandSystem)(nil)
	_ Preflighter = (*errandSystem)(nil)
	_ Backlogger  = (*errandSystem)(nil)
	_ RSSResetter = (*errandSystem)(nil)
)

// idleUntuned: errand has no poll to tune (see untunedIdle).
func (e *errandSystem) idleUntuned() {}
