package main

// ERRAND: this file is where errand plugs into the harness. It is a skeleton
// for the errand engineers to fill in; it is not registered in
// systemFactories (system.go) until it works. README.md, "Adding errand",
// says what each method should do.
//
// What is here already:
//   - externalProcess: start a binary (errand serve), wait for its health
//     check, read its peak RSS, stop it.
//   - webhookReceiver: an HTTP server on loopback that a push queue can
//     target; it feeds the same probe the in-process peers use, so
//     "add → handler start" means "add call starts → webhook request arrives".

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"
)

var errNotImplemented = errors.New("errand system: not implemented yet (see bench/README.md, Adding errand)")

// errandSystem drives a real `errand serve` over HTTP.
type errandSystem struct {
	o     Options
	store string // "sqlite" or "postgres"
	bin   string // path to the errand binary, built by Setup or given by a flag

	proc *externalProcess
	hook *webhookReceiver
}

//nolint:unused // registered once implemented
func newErrandSystem(o Options, store string) System {
	return &errandSystem{o: o, store: store}
}

func (e *errandSystem) Name() string  { return "errand-" + e.store }
func (e *errandSystem) Store() string { return e.store }
func (e *errandSystem) Settings(workload string, tuned bool) string {
	return "TODO: describe errand's settings"
}

// Setup should: create a fresh store (temp dir for sqlite, a fresh database
// like river-pg for postgres), start `errand serve --addr 127.0.0.1:PORT
// --store ...` with startExternal, create an API key (`errand keys create`),
// an instance and a queue whose target is e.hook.URL() (push) — or a pull
// queue for a worker-driven variant.
func (e *errandSystem) Setup(ctx context.Context) error { return errNotImplemented }

// Teardown should stop the process and remove the store.
func (e *errandSystem) Teardown(ctx context.Context) error {
	var err error
	if e.proc != nil {
		err = e.proc.Stop()
		e.proc = nil
	}
	if e.hook != nil {
		err = errors.Join(err, e.hook.Close())
		e.hook = nil
	}
	return err
}

// Insert: POST /v1/tasks/{instance}/queues/{queue}/tasks with arrays of
// `batch` tasks (≤ 100), from concurrent HTTP clients, on a paused queue (or
// one whose target is not served) so nothing is worked during the adds.
func (e *errandSystem) Insert(ctx context.Context, n, batch int) (time.Duration, error) {
	return 0, errNotImplemented
}

// BurnDown: add n tasks to a paused queue (untimed), unpause it, and time
// until the store says all n succeeded (GET the queue's counts).
func (e *errandSystem) BurnDown(ctx context.Context, n int) (time.Duration, error) {
	return 0, errNotImplemented
}

// Steady: as the peers: producers add batches of 100 with {"t": unix nanos}
// in the payload, gated by backlogGate on e.hook's probe.
func (e *errandSystem) Steady(ctx context.Context, d time.Duration, maxBacklog int) (SteadyResult, error) {
	return SteadyResult{}, errNotImplemented
}

// Idle: one task at a time; the probe waits for the webhook request. Its
// Pacing: settle = any cooldown errand has between wake-ups (0 if none),
// period = its poll interval (or ~20 ms if pickup is by wake-up only).
func (e *errandSystem) Idle(ctx context.Context, tuned bool) (IdleProbe, error) {
	return nil, errNotImplemented
}

// PeakRSSMB reports the errand process's peak RSS, not this harness's.
func (e *errandSystem) PeakRSSMB() float64 {
	if e.proc == nil {
		return 0
	}
	return e.proc.PeakRSSMB()
}

// --- external process ----------------------------------------------------------

// externalProcess is a server process started for one run.
type externalProcess struct {
	cmd  *exec.Cmd
	done chan error
}

// startExternal starts bin with args and waits until GET healthURL answers
// 200 (or the process exits, or timeout passes). Its output goes to stderr.
func startExternal(ctx context.Context, healthURL string, timeout time.Duration, env []string, bin string, args ...string) (*externalProcess, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout = os.Stderr
	cmd.Stderr = os.Stderr
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

// PeakRSSMB is the process's peak RSS so far (a fresh process per run, so
// this is the run's peak).
func (p *externalProcess) PeakRSSMB() float64 { return peakRSSMB(p.Pid()) }

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

// webhookReceiver is the push target: every request's JSON body is expected
// to carry the task payload with "t" (unix nanos of the add), somewhere the
// extract function finds it.
type webhookReceiver struct {
	srv *http.Server
	ln  net.Listener
	p   *probe
}

// newWebhookReceiver listens on 127.0.0.1 on a free port. extract returns the
// add time from a request body (errand's delivery body wraps the payload).
func newWebhookReceiver(p *probe, extract func(body []byte) (int64, error)) (*webhookReceiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	w := &webhookReceiver{ln: ln, p: p}
	w.srv = &http.Server{Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(rw, err.Error(), http.StatusBadRequest)
			return
		}
		t, err := extract(body)
		if err != nil {
			http.Error(rw, err.Error(), http.StatusBadRequest)
			return
		}
		p.onStart(t)
		p.onFinish()
		rw.WriteHeader(http.StatusOK)
	})}
	go w.srv.Serve(ln)
	return w, nil
}

// URL is the receiver's address (http://127.0.0.1:PORT/hook); errand serve
// needs `--webhook-allow 127.0.0.0/8` to deliver to it.
func (w *webhookReceiver) URL() string { return "http://" + w.ln.Addr().String() + "/hook" }

func (w *webhookReceiver) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return w.srv.Shutdown(ctx)
}

// payloadT is an extract function for a body that is, or wraps under
// "payload", the bench payload {"t": …}.
func payloadT(body []byte) (int64, error) {
	var v struct {
		T       int64     `json:"t"`
		Payload *noopArgs `json:"payload"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		return 0, err
	}
	if v.Payload != nil && v.Payload.T != 0 {
		return v.Payload.T, nil
	}
	if v.T == 0 {
		return 0, errors.New(`no "t" in the body`)
	}
	return v.T, nil
}

var (
	_ System      = (*errandSystem)(nil)
	_ RSSReporter = (*errandSystem)(nil)
	_             = startExternal
	_             = newWebhookReceiver
	_             = payloadT
	_             = newErrandSystem
)
