package deliver

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/task"
)

// Router is implemented by a deliverer of function targets: it says which
// functions of an instance this node can hand an attempt to now, and how
// many attempts each (its free slots). The dispatcher claims a function's
// attempts only up to that, so a task whose function no worker here serves
// stays scheduled instead of spending an attempt.
type Router interface {
	Free(instanceID string) map[string]int
}

// WorkerTransport is how a connected worker is reached: the HTTP layer's
// WebSocket. Send writes one message (calls are serialized by the
// caller); Close ends the connection with a reason.
type WorkerTransport interface {
	// Send sends one message, encoded: a JSON text message holding a
	// frame or a batch of them (errandapi.AppendBatch). It returns once
	// the message is written or its write failed; the transport cuts a
	// write that stalls.
	Send(msg []byte) error
	Close(reason string)
}

// Workers is this node's registry of connected function workers and the
// Deliverer of the function targets they serve. Each attempt goes to a
// connection of the task's instance that registered its function and has a
// free slot (the one with the most free slots; ties in turn), and waits for
// that worker's answer, fenced by the attempt's lease id.
//
// Lock order: Workers.mu, then a connection's sendMu; callbacks (OnFree)
// run outside both.
type Workers struct {
	// OnFree is called when slots may have come free (a worker connected,
	// answered or left): the dispatcher's wake-up.
	OnFree func()
	// OnChange is called when a worker connects or leaves: the node
	// publishes what it serves (the workers table).
	OnChange func()
	// Now is the node's clock in epoch ms (default: the system clock).
	Now func() int64

	mu    sync.Mutex
	conns map[string]*WorkerConn // by worker id
	turn  int
	seq   int
	// closing holds CloseInstance's close handshakes, which CloseAll
	// waits for.
	closing sync.WaitGroup
}

// WorkerConn is one connected worker: an instance, a group, its functions
// and slots, and the attempts it holds.
type WorkerConn struct {
	w          *Workers
	id         string
	instanceID string
	group      string
	functions  map[string]bool // full names, group/name
	slots      int
	tr         WorkerTransport
	sendMu     sync.Mutex
	draining   atomic.Bool // the worker said draining: no attempt is sent any more
	// out sends the frames of concurrent senders together, as batches,
	// when the worker reads them (hello's batches); nil when it does not.
	out *errandapi.Outbox

	// guarded by w.mu
	held   map[string]*held // attempts sent and not answered, by lease id
	ready  bool             // welcomed and not draining: attempts may be sent
	closed bool
	done   chan struct{}
}

// held is one attempt a worker holds. abandoned: the node stopped waiting
// (its context ended); the slot stays taken until the worker answers.
type held struct {
	answer    chan Result
	deadline  int64
	abandoned bool
}

// Register validates a worker's hello and adds its connection. A bad hello
// is INVALID_ARGUMENT naming the field (group, functions[i], slots).
func (w *Workers) Register(instanceID string, hello *errandapi.WorkerFrame, tr WorkerTransport) (*WorkerConn, error) {
	if hello.Type != errandapi.FrameHello {
		return nil, task.FieldErrorf(task.CodeInvalidArgument, "type", "the first frame must be hello, not %q", hello.Type)
	}
	if err := task.ValidateQueueName(hello.Group, "group"); err != nil {
		return nil, err
	}
	if len(hello.Functions) == 0 || len(hello.Functions) > 1000 {
		return nil, task.FieldErrorf(task.CodeInvalidArgument, "functions", "name 1–1000 functions")
	}
	if hello.Slots < 1 || hello.Slots > errandapi.MaxWorkerSlots {
		return nil, task.FieldErrorf(task.CodeInvalidArgument, "slots", "must be 1–%d", errandapi.MaxWorkerSlots)
	}
	fns := make(map[string]bool, len(hello.Functions))
	for i, fn := range hello.Functions {
		if err := task.ValidateQueueName(fn, "functions["+strconv.Itoa(i)+"]"); err != nil {
			return nil, err
		}
		fns[hello.Group+"/"+fn] = true
	}
	w.mu.Lock()
	if w.conns == nil {
		w.conns = map[string]*WorkerConn{}
	}
	w.seq++
	c := &WorkerConn{w: w, id: "w" + strconv.Itoa(w.seq) + "-" + strconv.FormatInt(w.now(), 36), instanceID: instanceID,
		group: hello.Group, functions: fns, slots: hello.Slots, tr: tr, held: map[string]*held{}, done: make(chan struct{})}
	if hello.Batches {
		c.out = &errandapi.Outbox{Write: tr.Send}
	}
	w.conns[c.id] = c
	w.mu.Unlock()
	return c, nil
}

// Ready makes the connection's slots usable: call it once the worker has
// been welcomed, so that no attempt overtakes the welcome.
func (c *WorkerConn) Ready() {
	c.w.mu.Lock()
	c.ready = !c.closed && !c.draining.Load()
	c.w.mu.Unlock()
	c.w.changed()
	c.w.freed()
}

// Drain takes the worker's draining frame: no attempt is sent to it any
// more (an attempt reserved for it before is still sent, and run), and
// its functions leave what this node serves. It reports whether the
// worker holds no attempt (Drained, from then on), so that the connection
// may close now.
func (c *WorkerConn) Drain() (idle bool) {
	c.w.mu.Lock()
	c.draining.Store(true)
	c.ready = false
	idle = len(c.held) == 0
	c.w.mu.Unlock()
	c.w.changed()
	return idle
}

// Drained reports whether the worker said draining and has since answered
// every attempt it was sent: the connection may close. It takes no lock
// while the worker is not draining (it runs after every answer).
func (c *WorkerConn) Drained() bool {
	if !c.draining.Load() {
		return false
	}
	c.w.mu.Lock()
	defer c.w.mu.Unlock()
	return len(c.held) == 0
}

// ID is the worker's id, sent in welcome.
func (c *WorkerConn) ID() string { return c.id }

// Functions returns the worker's functions (full names).
func (c *WorkerConn) Functions() []string {
	out := make([]string, 0, len(c.functions))
	for f := range c.functions {
		out = append(out, f)
	}
	return out
}

// Close removes the connection: every attempt it holds fails ("the worker
// disconnected"), to be retried with backoff, and its slots are gone.
// Closing twice is harmless.
func (c *WorkerConn) Close(reason string) {
	w := c.w
	w.mu.Lock()
	if c.closed {
		w.mu.Unlock()
		return
	}
	c.closed = true
	close(c.done)
	delete(w.conns, c.id)
	hs := c.held
	c.held = map[string]*held{}
	w.mu.Unlock()
	for _, h := range hs {
		if !h.abandoned {
			h.answer <- failed(0, "the worker disconnected during the attempt: "+reason)
		}
	}
	w.changed()
	w.freed()
}

// CloseAll ends every connection with reason (the node is shutting down).
func (w *Workers) CloseAll(reason string) {
	w.mu.Lock()
	cs := make([]*WorkerConn, 0, len(w.conns))
	for _, c := range w.conns {
		cs = append(cs, c)
	}
	w.mu.Unlock()
	for _, c := range cs {
		c.tr.Close(reason)
		c.Close(reason)
	}
	w.closing.Wait()
}

// CloseInstance ends the connections serving the instance (it was
// deleted): what they hold fails with reason at once, and each worker is
// told reason and reconnects, which finds the instance gone (in dev,
// makes it again). The close handshakes (up to 5 s each with a worker
// that does not answer) go on in the background: a delete does not wait
// for them.
func (w *Workers) CloseInstance(instanceID, reason string) {
	w.mu.Lock()
	var cs []*WorkerConn
	for _, c := range w.conns {
		if c.instanceID == instanceID {
			cs = append(cs, c)
		}
	}
	w.mu.Unlock()
	for _, c := range cs {
		c.Close(reason)
		w.closing.Go(func() { c.tr.Close(reason) })
	}
}

// ServesFunctions implements FunctionServer: a worker is connected, ready
// or about to be.
func (w *Workers) ServesFunctions() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.conns) > 0
}

// Free implements Router.
func (w *Workers) Free(instanceID string) map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]int{}
	for _, c := range w.conns {
		if c.instanceID != instanceID || !c.ready {
			continue
		}
		if free := c.slots - len(c.held); free > 0 {
			for f := range c.functions {
				out[f] += free
			}
		}
	}
	return out
}

// Deliver implements Deliverer: the attempt goes to a worker with a free
// slot and the worker's answer is its outcome. With no such worker the
// task is given back without using an attempt (released); a worker that
// disconnects before answering fails the attempt.
func (w *Workers) Deliver(ctx context.Context, r *Request) Result {
	fn := r.Target.Function
	c, h := w.reserved(r.Task.LeaseID)
	if c == nil {
		c, h = w.pick(r.Task.InstanceID, fn, r.Task.LeaseID, r.Task.DeadlineAt)
	}
	if c == nil {
		return Result{Outcome: task.Outcome{Status: task.AttemptReleased, Error: "no worker serves " + fn + " with a free slot on this node"}}
	}
	if ctx.Err() != nil { // the node is stopping: never sent
		c.drop(r.Task.LeaseID)
		w.freed()
		return Result{Outcome: task.Outcome{Status: task.AttemptReleased, Error: "the node stopped before the attempt was sent"}}
	}
	start := time.Now()
	_, name, _ := strings.Cut(fn, "/")
	if err := c.send(attemptFrame(r.Task, name, SignToken(r.Task, r.Key))); err != nil {
		c.drop(r.Task.LeaseID)
		c.tr.Close("sending an attempt failed")
		c.Close("sending an attempt failed: " + err.Error())
		return Result{Outcome: task.Outcome{Status: task.AttemptReleased, Error: "the attempt could not be sent to the worker: " + err.Error()}}
	}
	select {
	case res := <-h.answer:
		res.Duration = time.Since(start)
		return res
	case <-ctx.Done():
		c.abandon(r.Task.LeaseID)
		return Result{Outcome: task.Outcome{Status: task.AttemptFailed, Error: "deadline exceeded: the worker did not answer"}, Duration: time.Since(start)}
	}
}

// Reserve implements Reserver: the claim of t took a slot of fn here, held
// for its delivery under t's lease id.
func (w *Workers) Reserve(t *task.Task, fn string) {
	w.pick(t.InstanceID, fn, t.LeaseID, t.DeadlineAt)
}

// reserved returns the slot Reserve took for leaseID, if any.
func (w *Workers) reserved(leaseID string) (*WorkerConn, *held) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range w.conns {
		if h := c.held[leaseID]; h != nil {
			return c, h
		}
	}
	return nil, nil
}

// pick reserves a slot for fn on the connection of instanceID with the
// most free slots (ties in turn), or returns nil.
func (w *Workers) pick(instanceID, fn, leaseID string, deadline int64) (*WorkerConn, *held) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var best *WorkerConn
	bestFree := 0
	w.turn++
	i := 0
	for _, c := range w.conns {
		i++
		if c.instanceID != instanceID || !c.ready || !c.functions[fn] {
			continue
		}
		free := c.slots - len(c.held)
		if free > bestFree || free == bestFree && free > 0 && (i+w.turn)%2 == 0 {
			best, bestFree = c, free
		}
	}
	if best == nil {
		return nil, nil
	}
	h := &held{answer: make(chan Result, 1), deadline: deadline}
	best.held[leaseID] = h
	return best, h
}

// Send writes one frame to the worker.
func (c *WorkerConn) Send(f *errandapi.WorkerFrame) error {
	return c.SendAll([]*errandapi.WorkerFrame{f})
}

// SendAll writes frames to the worker in order: in as few messages as
// fit when it reads batches (errandapi.PackBatches), one a frame when it
// does not. It returns the first error.
func (c *WorkerConn) SendAll(fs []*errandapi.WorkerFrame) error {
	frames := make([][]byte, len(fs))
	for i, f := range fs {
		// The frame's own encoder, not json.Marshal(f), which would call
		// it and then scan its output once more to compact it: its output
		// is already compact (TestWorkerFrameMarshalJSONIsCompact).
		b, err := f.MarshalJSON()
		if err != nil {
			return err
		}
		frames[i] = b
	}
	return c.sendFrames(frames)
}

// send sends an encoded frame.
func (c *WorkerConn) send(frame []byte) error {
	return c.sendFrames([][]byte{frame})
}

// sendFrames sends encoded frames, in order: to a worker that reads
// batches with whatever other senders' frames wait (c.out), otherwise each
// frame as a message of its own.
func (c *WorkerConn) sendFrames(frames [][]byte) error {
	if c.out != nil {
		return c.out.Send(frames...)
	}
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	for _, f := range frames {
		if err := c.tr.Send(f); err != nil {
			return err
		}
	}
	return nil
}

// drop forgets an attempt that was never sent.
func (c *WorkerConn) drop(leaseID string) {
	c.w.mu.Lock()
	delete(c.held, leaseID)
	c.w.mu.Unlock()
}

// abandon marks an attempt the node no longer waits for: its slot stays
// taken until the worker answers or leaves.
func (c *WorkerConn) abandon(leaseID string) {
	c.w.mu.Lock()
	if h := c.held[leaseID]; h != nil {
		h.abandoned = true
	}
	c.w.mu.Unlock()
}

// Answer takes a worker's done, failed or defer frame and returns the frame
// to send back: recorded, or refused with the reason (LEASE_LOST for an
// attempt this connection does not hold or that timed out,
// PAYLOAD_TOO_LARGE or INVALID_ARGUMENT for a bad answer, which then fails
// the attempt so that it is retried).
func (c *WorkerConn) Answer(f *errandapi.WorkerFrame) *errandapi.WorkerFrame {
	return c.answer(f.LeaseID, f, nil)
}

// AnswerRefused takes a worker's answer for the attempt of leaseID that
// the node could not read whole (a frame past errandapi.MaxWorkerFrame):
// the attempt fails with bad as its reason, so that it is retried, and
// the frame to send back is bad's refusal (LEASE_LOST instead, as for
// Answer, when the connection holds no such attempt or it timed out).
func (c *WorkerConn) AnswerRefused(leaseID string, bad *task.Error) *errandapi.WorkerFrame {
	return c.answer(leaseID, nil, bad)
}

// answer is Answer of f, or, with bad set, AnswerRefused.
func (c *WorkerConn) answer(leaseID string, f *errandapi.WorkerFrame, bad *task.Error) *errandapi.WorkerFrame {
	refuse := func(err *task.Error) *errandapi.WorkerFrame {
		return &errandapi.WorkerFrame{Type: errandapi.FrameRefused, LeaseID: leaseID,
			Refusal: &errandapi.ErrorDetail{Code: err.Code, Message: err.Message}}
	}
	w := c.w
	w.mu.Lock()
	h := c.held[leaseID]
	if h != nil {
		delete(c.held, leaseID)
	}
	w.mu.Unlock()
	if h == nil {
		return refuse(task.Errorf(task.CodeLeaseLost, "this connection holds no attempt with lease %q", leaseID))
	}
	defer w.freed()
	var res Result
	var rerr *task.Error
	if bad != nil {
		res, rerr = failed(0, "the worker's answer was refused: "+bad.Message), bad
	} else {
		res, rerr = outcomeOf(f)
	}
	if h.abandoned {
		return refuse(task.Errorf(task.CodeLeaseLost, "the attempt ended before this answer: it was recorded as timed out and will be retried"))
	}
	if w.now() >= h.deadline {
		// Late (at the deadline is late, as the dispatcher reads it):
		// whichever of this answer and the dispatcher's deadline timer
		// comes first, the attempt is recorded as timed out.
		h.answer <- Result{Outcome: task.Outcome{Status: task.AttemptTimedOut,
			Error: "deadline exceeded; the worker then answered: " + LateAnswer(res)}, Late: LateAnswer(res)}
		return refuse(task.Errorf(task.CodeLeaseLost, "the answer came after the attempt's deadline: it is recorded as timed out and retried"))
	}
	// On time: the worker is told "recorded", and the dispatcher keeps
	// this judgement.
	res.OnTime = true
	h.answer <- res
	if rerr != nil {
		return refuse(rerr)
	}
	return &errandapi.WorkerFrame{Type: errandapi.FrameRecorded, LeaseID: leaseID}
}

// outcomeOf reads a worker's answer. A bad answer is a failed attempt and
// the refusal to send back.
func outcomeOf(f *errandapi.WorkerFrame) (Result, *task.Error) {
	switch f.Type {
	case errandapi.FrameDone:
		o := task.Outcome{Status: task.AttemptSucceeded}
		if len(f.Result) > 0 && !task.IsJSONNull(f.Result) {
			if err := task.ValidateJSONBytes(f.Result, "result"); err != nil {
				te, _ := err.(*task.Error)
				if te == nil {
					te = task.Errorf(task.CodeInvalidArgument, "result: %v", err)
				}
				return failed(0, "the worker's result was refused: "+te.Message), te
			}
			o.Result = append(json.RawMessage(nil), f.Result...)
		}
		return Result{Outcome: o}, nil
	case errandapi.FrameFailed:
		msg := f.Error
		if r := f.Refusal; msg == "" && r != nil && r.Message != "" { // an error object, not the string
			msg = r.Message
			if r.Code != "" {
				msg = string(r.Code) + ": " + msg
			}
		}
		if msg == "" {
			msg = "the function failed without a message"
		}
		return failed(0, msg), nil
	case errandapi.FrameDefer:
		if f.Seconds <= 0 || f.Seconds > maxDeferSeconds {
			te := task.FieldErrorf(task.CodeInvalidArgument, "seconds", "must be above 0 and at most %d", maxDeferSeconds)
			return failed(0, "the worker's defer was refused: "+te.Message), te
		}
		d := time.Duration(f.Seconds * float64(time.Second))
		return Result{Outcome: task.Outcome{Status: task.AttemptFailed, Error: "deferred by the worker for " + d.String()}, Defer: true, DeferDelay: d}, nil
	}
	te := task.FieldErrorf(task.CodeInvalidArgument, "type", "unknown answer %q", f.Type)
	return failed(0, "the worker's answer was refused: "+te.Message), te
}

// maxDeferSeconds bounds a worker's defer (a day).
const maxDeferSeconds = 86400

func (w *Workers) now() int64 {
	if w.Now != nil {
		return w.Now()
	}
	return time.Now().UnixMilli()
}

func (w *Workers) changed() {
	if w.OnChange != nil {
		w.OnChange()
	}
}

// Served returns what the connected workers serve: by instance id, each
// function's slots summed over the connections.
func (w *Workers) Served() map[string]map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]map[string]int{}
	for _, c := range w.conns {
		if !c.ready {
			continue
		}
		m := out[c.instanceID]
		if m == nil {
			m = map[string]int{}
			out[c.instanceID] = m
		}
		for f := range c.functions {
			m[f] += c.slots
		}
	}
	return out
}

func (w *Workers) freed() {
	if w.OnFree != nil {
		w.OnFree()
	}
}

// String describes the connection for logs.
func (c *WorkerConn) String() string {
	return fmt.Sprintf("worker %s (group %s, %d slots)", c.id, c.group, c.slots)
}
