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
//
// The errand system's files: errand.go (the system: settings, setup,
// teardown), errand_tuning.go (--errand-tuning), errand_process.go (the
// binary and the `errand serve` process), errand_receiver.go (the webhook
// receiver), errand_api.go (the calls to the v1 API), errand_checks.go
// (exactly-once and settled checks), errand_workloads.go (insert, burndown,
// push), errand_steady.go (steady, backlog, idle), errand_nodes.go (the
// nodes workload: several serve processes on one PostgreSQL database) and
// cpu.go (the CPU of errand, the harness and PostgreSQL in a timed window).
//
// errand-sqlite-full is this system with `--sync FULL` (the sync field):
// burn-down and steady only.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/errandhq/errand/errandapi"
)

const (
	errandInstance = "bench"
	errandOrg      = "bench"
)

// errandSystem drives a real `errand serve` over HTTP.
type errandSystem struct {
	o     Options
	store string // "sqlite" or "postgres"
	sync  string // SQLite: errand serve's --sync ("" = its default, NORMAL)
	tun   errandTuning

	dir        string // temp dir of the run: the SQLite file, the servers' logs
	dbName     string // postgres: the fresh database of the run
	storeURL   string
	errandConn // node 1, the one every run has (errand_api.go)

	proc  *externalProcess
	extra []*errandNode // nodes 2, 3, … on the same store (the nodes workload)
	hook  *webhookReceiver
	p     *probe

	steadyMade bool // the steady queue exists (AddFuture made it before Steady)
	future     int  // tasks AddFuture scheduled in the future in the steady queue

	lastCPU cpuWindow // the CPU of the last timed window cpuNote described
}

// errandNode is one more `errand serve` process on the run's store.
type errandNode struct {
	proc *externalProcess
	errandConn
}

func newErrandSystem(o Options, store string) System {
	return &errandSystem{o: o, store: store, tun: o.ErrandTuning}
}

// newErrandSQLiteFull is errand-sqlite with `errand serve --sync FULL`:
// SQLite's synchronous FULL, which survives power loss (NORMAL, the
// default, survives kill -9). Issue 18 reads it beside River on PostgreSQL,
// which survives power loss too.
func newErrandSQLiteFull(o Options) System {
	return &errandSystem{o: o, store: "sqlite", sync: "FULL", tun: o.ErrandTuning}
}

func (e *errandSystem) Name() string {
	if e.sync == "FULL" {
		return "errand-sqlite-full"
	}
	return "errand-" + map[string]string{"sqlite": "sqlite", "postgres": "pg"}[e.store]
}

// Supports: errand-sqlite-full runs burn-down and steady only (the rows
// issue 18 asks for: the rest is errand-sqlite's with one flag changed);
// the nodes workload runs on errand-pg only (several nodes need a shared
// PostgreSQL store). Every other workload runs on both.
func (e *errandSystem) Supports(workload string) bool {
	switch {
	case e.sync != "":
		return workload == "burndown" || workload == "steady"
	case workload == "nodes":
		return e.store == "postgres"
	}
	return true
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
	if e.sync == "FULL" {
		return "errand serve --store sqlite://… --sync FULL (survives power loss; fresh file per run)"
	}
	return "errand serve --store sqlite://… (fresh file per run; --sync NORMAL, the default)"
}

func (e *errandSystem) Settings(workload string, tuned bool) string {
	s := e.settings(workload, tuned)
	if e.sync != "" && workload != "insert" && s != "" {
		// Only the insert line says which store; this system's point is its flag.
		s = e.storeNote() + "; " + s
	}
	return s
}

func (e *errandSystem) settings(workload string, tuned bool) string {
	t := e.tun
	switch workload {
	case "insert":
		return fmt.Sprintf("%s; POST arrays of %d from %d concurrent HTTP clients into a paused push queue", e.storeNote(), insertCallSize, t.InsertClients)
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
			return fmt.Sprintf("pull queue; producers %d × add %d; %d workers × lease {count 100, waitSeconds 1}, %d concurrent acks each; latency = add → lease answer; done = ack answered", producers(t.InsertClients), steadyCallSize, t.LeaseWorkers, t.AckConcurrency)
		}
		return fmt.Sprintf("push queue, maxInFlight %d; producers %d × add %d; latency = add → webhook arrives; done = webhook answered 2xx (store checked after the window)", t.MaxInFlight, producers(t.InsertClients), steadyCallSize)
	case "backlog":
		return fmt.Sprintf(`preload POST arrays of 100 with "delay": %d from %d concurrent HTTP clients into the steady queue; then steady: %s`,
			int(futureDelay.Seconds()), t.InsertClients, e.settings("steady", tuned))
	case "idle":
		return "push queue; no poll: the dispatcher wakes on add; settle 5 ms (the outcome write), period 20 ms"
	case "nodes":
		return fmt.Sprintf("%s; 1, 2 and 3 serve processes (own ports) on one fresh database per measurement; pull = burndown's workers spread round-robin over the nodes (%s); push = the push workload, every node's dispatcher delivering (%s); CPU per task: errand = all its nodes, PostgreSQL = every postgres process on this machine",
			e.storeNote(), e.settings("burndown", tuned), e.settings("push", tuned))
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
	kc := exec.CommandContext(ctx, bin, "keys", "create", "--store", e.storeURL, "--create", "--org", errandOrg, "--grant", "full:*")
	kc.Stdout, kc.Stderr = &stdout, &stderr
	if err := kc.Run(); err != nil {
		return fmt.Errorf("errand keys create: %v: %s", err, firstLine(stderr.String()))
	}
	e.key = strings.TrimSpace(stdout.String())
	if !strings.HasPrefix(e.key, "errk_") {
		return fmt.Errorf("errand keys create printed %q, not a key", e.key)
	}

	if e.proc, e.base, err = e.startNode(ctx, bin, "serve.log"); err != nil {
		return err
	}
	if e.api, e.client, err = newErrandAPI(e.base, e.key); err != nil {
		return err
	}
	if _, err := e.api.CreateInstance(ctx, errandInstance); err != nil {
		return fmt.Errorf("create instance: %w", err)
	}
	if _, err := e.api.UpdateSettings(ctx, errandInstance, errandapi.SettingsRequest{MaxInFlight: &e.tun.MaxInFlight}); err != nil {
		return fmt.Errorf("settings: %w", err)
	}
	e.p = newProbe()
	e.steadyMade, e.future = false, 0
	e.hook, err = newWebhookReceiver(e.p, errandDelivery)
	return err
}

// startNode starts one `errand serve` on the run's store, on a free port,
// its output in the run's dir under logName, and waits until it is healthy.
func (e *errandSystem) startNode(ctx context.Context, bin, logName string) (*externalProcess, string, error) {
	port, err := freePort()
	if err != nil {
		return nil, "", err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	logPath := filepath.Join(e.dir, logName)
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, "", err
	}
	args := []string{"serve", "--addr", addr, "--store", e.storeURL, "--webhook-allow", "127.0.0.0/8"}
	if e.sync != "" {
		args = append(args, "--sync", e.sync)
	}
	if dir := os.Getenv("ERRAND_BENCH_PROFILE_DIR"); dir != "" {
		// Measuring: each serve process writes its CPU profile there.
		profileSeq++
		args = append(args, "--cpuprofile", filepath.Join(dir, fmt.Sprintf("%s-%d-%s.pprof", e.Name(), profileSeq, strings.TrimSuffix(logName, ".log"))))
	}
	proc, err := startExternal(ctx, "http://"+addr+"/healthz", 30*time.Second, nil, logFile, bin, args...)
	logFile.Close() // the child has its own descriptor
	if err != nil {
		return nil, "", fmt.Errorf("%v: %s", err, tailFile(logPath, 3))
	}
	return proc, "http://" + addr, nil
}

// profileSeq numbers the serve processes' CPU profiles of this run
// (ERRAND_BENCH_PROFILE_DIR).
var profileSeq int

func (e *errandSystem) Teardown(ctx context.Context) error {
	var err error
	// Close this side's idle connections first: a connection the Transport
	// dialled but never used is "new" to the server, and http.Server's
	// graceful shutdown waits 5 s before it treats such a one as idle.
	if e.client != nil {
		e.client.CloseIdleConnections()
		e.client = nil
	}
	err = e.stopExtraNodes()
	if e.proc != nil {
		err = errors.Join(err, e.proc.Stop())
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
