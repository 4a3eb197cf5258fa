package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/errandhq/errand/client"
	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/testkit/history"
)

// soak reports whether the long versions of the fault tests run
// (ERRAND_SOAK=1); the short ones run in every `go test ./...`.
func soak() bool { return os.Getenv("ERRAND_SOAK") == "1" }

// pick is the short or the long value of a fault test's parameter.
func pick[T any](short, long T) T {
	if soak() {
		return long
	}
	return short
}

// faultNode is one `errand serve` process on a fixed loopback port, so
// that it comes back where its clients look for it after a kill.
type faultNode struct {
	addr string
	cmd  *exec.Cmd
	logs *lockedBuffer
	c    *client.Client
	up   bool
}

// faultRig runs errand serve nodes on one store under load from named
// adds (push and pull queues), pull workers and a recording webhook
// receiver, and records everything in a history.
type faultRig struct {
	t     *testing.T
	h     *history.History
	bin   string
	store string
	args  []string // more flags for every node
	key   string
	tr    *http.Transport
	rcv   *faultReceiver

	mu    sync.Mutex
	nodes []*faultNode
	next  int // round robin over the nodes that are up
	kills int
}

// newFaultRig makes a key on store, starts n nodes, the receiver (behave
// picks its answers), the instance "jobs" and queues "push" (maxConcurrent
// pushLimit, 0 for none; deadlineSeconds 1 when hostile) and "pull".
func newFaultRig(t *testing.T, store string, n int, pushLimit int, behave func(string, int) behaviour, args ...string) *faultRig {
	t.Helper()
	r := &faultRig{t: t, h: history.New(), bin: buildErrand(t), store: store, args: args,
		tr: &http.Transport{MaxIdleConnsPerHost: 64, DialContext: (&net.Dialer{Timeout: 2 * time.Second}).DialContext}}
	t.Cleanup(r.tr.CloseIdleConnections)
	hc := &http.Client{Transport: countingTransport{r.tr}}
	code, key, stderr := runMain("keys", "create", "--store", store, "--create", "--org", "acme", "--grant", "full:*")
	if code != 0 {
		t.Fatalf("keys create: %s", stderr)
	}
	r.key = strings.TrimSpace(key)
	for range n {
		addr := nodeAddr(t)
		c, err := client.New("http://"+addr, client.Options{APIKey: r.key, HTTPClient: hc,
			Retry: client.RetryPolicy{MaxAttempts: 5, MinBackoff: 50 * time.Millisecond, MaxBackoff: time.Second}})
		if err != nil {
			t.Fatal(err)
		}
		node := &faultNode{addr: addr, c: c}
		r.nodes = append(r.nodes, node)
		r.start(node)
	}
	r.rcv = newFaultReceiver(t, r.h, behave)
	ctx := t.Context()
	c := r.nodes[0].c
	if _, err := c.CreateInstance(ctx, "jobs"); err != nil {
		t.Fatal(err)
	}
	wkey, err := c.WebhookKey(ctx, "jobs")
	if err != nil {
		t.Fatal(err)
	}
	r.rcv.key.Store(wkey)
	backoff := func(q errandapi.QueueRequest) errandapi.QueueRequest {
		q.MinBackoffSeconds, q.MaxBackoffSeconds, q.MaxAttempts = ptrTo(0.1), ptrTo(1.0), ptrTo(100)
		return q
	}
	push := backoff(errandapi.QueueRequest{Target: errandapi.Value(errandapi.Target{Webhook: r.rcv.URL()})})
	if pushLimit > 0 {
		push.MaxConcurrent = errandapi.Value(pushLimit)
	}
	if behave != nil {
		push.DeadlineSeconds = ptrTo(1)
	}
	if _, err := c.CreateQueue(ctx, "jobs", "push", push); err != nil {
		t.Fatal(err)
	}
	pull := errandapi.ModePull
	if _, err := c.CreateQueue(ctx, "jobs", "pull", backoff(errandapi.QueueRequest{Mode: &pull})); err != nil {
		t.Fatal(err)
	}
	return r
}

func ptrTo[T any](v T) *T { return &v }

// start runs node's process (again) on its address.
func (r *faultRig) start(n *faultNode) {
	r.t.Helper()
	args := append([]string{"--addr", n.addr, "--store", r.store, "--webhook-allow", "127.0.0.0/8"}, r.args...)
	cmd, _, logs := startServe(r.t, r.bin, args...)
	r.mu.Lock()
	n.cmd, n.logs, n.up = cmd, logs, true
	r.mu.Unlock()
}

// kill SIGKILLs node i and waits for it to be gone.
func (r *faultRig) kill(i int) {
	r.t.Helper()
	r.mu.Lock()
	n := r.nodes[i]
	n.up = false
	r.kills++
	r.mu.Unlock()
	if err := n.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		r.t.Fatal(err)
	}
	_ = n.cmd.Wait()
}

// countFault counts a fault that is not a node's kill (a database crash).
func (r *faultRig) countFault() {
	r.mu.Lock()
	r.kills++
	r.mu.Unlock()
}

// codes counts the error codes of the history's calls.
func (r *faultRig) codes() map[string]int {
	out := map[string]int{}
	for _, e := range r.h.Entries() {
		if e.Code != "" {
			out[e.Code]++
		}
	}
	return out
}

// client returns the client of the next node that is up.
func (r *faultRig) client() *client.Client {
	r.mu.Lock()
	defer r.mu.Unlock()
	for range r.nodes {
		r.next = (r.next + 1) % len(r.nodes)
		if r.nodes[r.next].up {
			return r.nodes[r.next].c
		}
	}
	return r.nodes[0].c // all down: the call fails and is recorded so
}

// logs returns every node's log, for a failure message.
func (r *faultRig) logs() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for i, n := range r.nodes {
		fmt.Fprintf(&b, "--- node %d (%s) ---\n%s", i, n.addr, tail(n.logs.String(), 3000))
	}
	return b.String()
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// outcome classifies a call's error for the history: nil is OK; a
// refusal the server answered before doing anything (4xx) is Fail; a
// 5xx, a lost connection or a timeout is Info — it may have happened.
func outcome(err error) (history.Type, string, string) {
	if err == nil {
		return history.OK, "", ""
	}
	var e *client.Error
	if errors.As(err, &e) {
		if e.Status >= 400 && e.Status < 500 {
			return history.Fail, string(e.Code), e.Message
		}
		return history.Info, string(e.Code), e.Message
	}
	return history.Info, "", err.Error()
}

// load is the work a rig is given: how many tasks of each queue, added
// how many per call, by how many adders, leased by how many workers.
type load struct {
	push, pull   int
	batch        int
	adders       int
	workers      int
	leaseSeconds int
	// payload pads each task's payload to about this many bytes.
	payload int
	// window bounds the tasks added but not yet done, so that adds go on
	// through the whole run, under the faults (default 150; 400 long).
	window int
}

// runLoad adds the tasks and runs the workers until ctx ends; the returned
// channel closes when every add has a definite answer (or ran out of
// tries).
func (r *faultRig) runLoad(ctx context.Context, l load) (added <-chan struct{}, stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	names := make(chan string, l.push+l.pull)
	for i := range max(l.push, l.pull) {
		if i < l.push {
			names <- fmt.Sprintf("push-%06d", i)
		}
		if i < l.pull {
			names <- fmt.Sprintf("pull-%06d", i)
		}
	}
	pending := &countdown{left: l.push + l.pull, done: make(chan struct{})}
	pad := strings.Repeat("x", l.payload)
	tries := map[string]int{}
	var triesMu sync.Mutex
	var wg sync.WaitGroup
	for a := range l.adders {
		wg.Go(func() {
			r.adder(ctx, fmt.Sprintf("adder-%d", a), names, pending, l.batch, cmp.Or(l.window, pick(150, 400)), pad, tries, &triesMu)
		})
	}
	for w := range l.workers {
		wg.Go(func() { r.worker(ctx, fmt.Sprintf("worker-%d", w), l.leaseSeconds) })
	}
	return pending.done, func() { cancel(); wg.Wait() }
}

// countdown closes done when Done has been called left times.
type countdown struct {
	mu   sync.Mutex
	left int
	done chan struct{}
}

// Done counts one down.
func (c *countdown) Done() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.left--; c.left == 0 {
		close(c.done)
	}
}

// adder adds named tasks from names, a few per call, until names is
// drained or ctx ends. An add whose answer was lost goes back to names and
// is sent again, as a client would: the name makes it idempotent.
func (r *faultRig) adder(ctx context.Context, who string, names chan string, pending *countdown, batch, window int, pad string, tries map[string]int, mu *sync.Mutex) {
	for ctx.Err() == nil {
		for r.h.Count(history.Add, history.OK)-r.progress() > window {
			select {
			case <-r.h.Changed():
			case <-ctx.Done():
				return
			}
		}
		var group []string
		select {
		case n := <-names:
			group = append(group, n)
		case <-ctx.Done():
			return
		}
		queue, _, _ := strings.Cut(group[0], "-")
	fill:
		for len(group) < batch {
			select {
			case n := <-names:
				if q, _, _ := strings.Cut(n, "-"); q != queue {
					names <- n
					break fill
				}
				group = append(group, n)
			default:
				break fill
			}
		}
		tasks := make([]errandapi.NewTask, len(group))
		entries := make([]*history.Entry, len(group))
		for i, n := range group {
			tasks[i] = errandapi.NewTask{Name: n, Payload: json.RawMessage(fmt.Sprintf(`{"name":%q,"pad":%q}`, n, pad))}
			entries[i] = r.h.Begin(history.Entry{Process: who, F: history.Add, Queue: queue, Name: n})
		}
		cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		res, err := r.client().AddTasks(cctx, "jobs", queue, tasks...)
		cancel()
		typ, code, msg := outcome(err)
		for i, n := range group {
			t, c, m, id := typ, code, msg, ""
			if i < len(res) { // the per-task results (201, or 409 with results)
				switch rr := res[i]; {
				case rr.OK:
					t, c, m, id = history.OK, "", "", rr.ID
				case rr.Code == errandapi.CodeTaskExists: // this name's earlier try stored it
					t, c, m, id = history.OK, string(rr.Code), "", rr.ID
				default:
					t, c, m = history.Fail, string(rr.Code), rr.Message
				}
			}
			r.h.End(entries[i], t, func(e *history.Entry) { e.ID, e.Code, e.Err = id, c, m })
			mu.Lock()
			tries[n]++
			again := t == history.Info && tries[n] < 50 && ctx.Err() == nil
			mu.Unlock()
			if again {
				names <- n
			} else {
				pending.Done()
			}
		}
	}
}

// worker leases pull tasks and acks them; a task's first attempt is
// released with an error when its name hashes so (a failed attempt, to
// see the attempt number rise).
func (r *faultRig) worker(ctx context.Context, who string, leaseSeconds int) {
	for ctx.Err() == nil {
		start := time.Now()
		cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		tasks, err := r.client().Lease(cctx, "jobs", "pull", errandapi.LeaseRequest{Count: ptrTo(10), LeaseSeconds: &leaseSeconds, WaitSeconds: 1})
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			typ, code, msg := outcome(err)
			r.h.Record(history.Entry{Process: who, F: history.Lease, Type: typ, Queue: "pull", Start: start, Code: code, Err: msg})
			if history.Info == typ { // the node is down or restarting: try the next
				select {
				case <-r.h.Changed():
				case <-ctx.Done():
				case <-time.After(50 * time.Millisecond):
				}
			}
			continue
		}
		end := time.Now()
		for _, lt := range tasks {
			n := ""
			if lt.Name != nil {
				n = *lt.Name
			}
			r.h.Record(history.Entry{Process: who, F: history.Lease, Type: history.OK, Queue: "pull", Name: n, ID: lt.ID,
				Attempt: lt.Attempts, LeaseID: lt.LeaseID, Expires: time.UnixMilli(lt.LeaseExpiresAt), Start: start, End: end})
		}
		for _, lt := range tasks {
			n := ""
			if lt.Name != nil {
				n = *lt.Name
			}
			f := history.Ack
			if lt.Attempts == 1 && hash(n)%4 == 0 {
				f = history.Release
			}
			e := r.h.Begin(history.Entry{Process: who, F: f, Queue: "pull", Name: n, ID: lt.ID, LeaseID: lt.LeaseID})
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
			tries := new(atomic.Int32)
			cctx = context.WithValue(cctx, triesKey{}, tries)
			if f == history.Ack {
				_, err = r.client().Ack(cctx, "jobs", lt.ID, errandapi.AckRequest{LeaseID: lt.LeaseID, Result: json.RawMessage(`{"ok":true}`)})
			} else {
				_, err = r.client().Release(cctx, "jobs", lt.ID, errandapi.ReleaseRequest{LeaseID: lt.LeaseID, Error: "planned failure"})
			}
			cancel()
			typ, code, msg := outcome(err)
			if errors.Is(err, client.ErrLeaseLost) && tries.Load() > 1 {
				// The client sent it again after a lost answer: the first
				// try may have landed, and ended the lease (docs/sdk.md).
				typ = history.Info
			}
			r.h.End(e, typ, func(e *history.Entry) { e.Code, e.Err = code, msg })
		}
	}
}

// triesKey is the context key of a call's try counter.
type triesKey struct{}

// countingTransport counts the tries of a call whose context carries a
// counter: the client retries inside one call, and only the count tells
// whether an answer may be a repeat's.
type countingTransport struct{ base http.RoundTripper }

func (c countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if n, ok := req.Context().Value(triesKey{}).(*atomic.Int32); ok {
		n.Add(1)
	}
	return c.base.RoundTrip(req)
}

func hash(s string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(s))
	return h.Sum32()
}

// progress is the work accepted so far: 2xx deliveries and acks.
func (r *faultRig) progress() int {
	return r.h.Count(history.Deliver, history.OK) + r.h.Count(history.Ack, history.OK)
}

// waitFor waits, on the history's changes (and at least every 200 ms, for
// conditions read from the server), until cond holds or d passes.
func (r *faultRig) waitFor(d time.Duration, what string, cond func() bool) {
	r.t.Helper()
	deadline := time.After(d)
	for !cond() {
		select {
		case <-r.h.Changed():
		case <-time.After(200 * time.Millisecond):
		case <-deadline:
			r.t.Fatalf("timed out after %s waiting for %s\n%s", d, what, r.logs())
		}
	}
}

// drained reports whether the queues hold no unfinished task.
func (r *faultRig) drained() bool {
	ctx, cancel := context.WithTimeout(r.t.Context(), 10*time.Second)
	defer cancel()
	c := r.client()
	for _, q := range []string{"push", "pull"} {
		qq, err := c.GetQueue(ctx, "jobs", q)
		if err != nil {
			return false
		}
		for s, n := range qq.Counts {
			if n > 0 && s != errandapi.StateSucceeded && s != errandapi.StateFailed && s != errandapi.StateCancelled {
				return false
			}
		}
	}
	return true
}

// finalState reads every task of the two queues, one by one with its
// attempts, and their counts.
func (r *faultRig) finalState() history.Final {
	r.t.Helper()
	ctx := r.t.Context()
	c := r.client()
	f := history.Final{Counts: map[errandapi.State]int{}}
	var ids []string
	for _, q := range []string{"push", "pull"} {
		qq, err := c.GetQueue(ctx, "jobs", q)
		if err != nil {
			r.t.Fatalf("final read: %v", err)
		}
		for s, n := range qq.Counts {
			f.Counts[s] += n
		}
		for t, err := range c.Tasks(ctx, "jobs", q, client.ListOptions{Limit: 200}) {
			if err != nil {
				r.t.Fatalf("final read: %v", err)
			}
			ids = append(ids, t.ID)
		}
	}
	f.Tasks = make([]errandapi.Task, len(ids))
	var wg sync.WaitGroup
	errs := make(chan error, len(ids))
	work := make(chan int, len(ids))
	for i := range ids {
		work <- i
	}
	close(work)
	for range 8 {
		wg.Go(func() {
			for i := range work {
				t, err := c.GetTask(ctx, "jobs", ids[i])
				if err != nil {
					errs <- err
					return
				}
				f.Tasks[i] = *t
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		r.t.Fatalf("final read: %v", err)
	}
	return f
}

// finish stops the load once every add is answered and every task has
// finished, reads the final state and checks the history; it returns the
// report, and fails the test on any violation.
func (r *faultRig) finish(added <-chan struct{}, stop func(), drain time.Duration, o history.Options) (*history.Report, history.Final) {
	r.t.Helper()
	select {
	case <-added:
	case <-time.After(drain):
		r.t.Fatalf("the adds did not all get an answer within %s\n%s", drain, r.logs())
	}
	r.waitFor(drain, "every task to finish", r.drained)
	stop()
	final := r.finalState()
	rep := history.Check(r.h, final, o)
	r.t.Logf("kills %d; %s; peak deliveries open %v; answers by code %v", r.kills, rep.Figures(), rep.PeakConcurrent, r.codes())
	if err := rep.Err(); err != nil {
		r.t.Errorf("%v\n%s\n%s", err, r.explain(rep, final), r.logs())
	}
	return rep, final
}

// explain prints, for the first tasks a violation names, every entry of
// the history about them and their final state.
func (r *faultRig) explain(rep *history.Report, final history.Final) string {
	names := map[string]bool{}
	for _, list := range [][]string{rep.Lost, rep.Unexpected, rep.CompletedTwice, rep.Overlaps, rep.AttemptOrder, rep.FinalMismatch} {
		for _, l := range list[:min(len(list), 3)] {
			if n, _, ok := strings.Cut(l, ":"); ok {
				names[n] = true
			}
		}
	}
	var b strings.Builder
	for _, e := range r.h.Entries() {
		if names[e.Name] {
			fmt.Fprintf(&b, "  %s %s %s %s id=%s attempt=%d lease=%s expires=%s start=%s end=%s status=%d code=%s err=%q\n",
				e.Name, e.Process, e.F, e.Type, e.ID, e.Attempt, e.LeaseID, e.Expires.Format(time.StampMilli),
				e.Start.Format(time.StampMilli), e.End.Format(time.StampMilli), e.Status, e.Code, e.Err)
		}
	}
	for _, t := range final.Tasks {
		if t.Name != nil && names[*t.Name] {
			j, _ := json.Marshal(t)
			fmt.Fprintf(&b, "  final: %s\n", j)
		}
	}
	return b.String()
}

// nodeAddr is a loopback address for a node that keeps it across its
// restarts. A port the kernel hands out for :0 is in the ephemeral range,
// where, once closed, any outgoing connection of the machine (another test
// package's, to PostgreSQL) may take it before the node binds it: one
// below that range (Linux's starts at 32768) is taken only by a listener
// that asked for it.
func nodeAddr(t *testing.T) string {
	t.Helper()
	for range 100 {
		addr := fmt.Sprintf("127.0.0.1:%d", 20000+rand.IntN(12000))
		if l, err := net.Listen("tcp", addr); err == nil {
			l.Close()
			return addr
		}
	}
	t.Fatal("no free port in 20000–31999")
	return ""
}
