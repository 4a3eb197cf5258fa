package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/errandhq/errand/client"
	"github.com/errandhq/errand/errandapi"
)

// sdkName is hello's sdk.
const sdkName = "go/1"

// readLimit bounds a frame from the node: an attempt carries a payload and
// params of 64 KiB each, JSON-escaped at worst.
const readLimit = 1 << 20

// session is one connection: hello, then attempts until it drops or ctx
// ends. connected reports whether the node welcomed the worker.
func (w *Worker) session(ctx context.Context) (connected bool, err error) {
	hdr := http.Header{}
	if w.o.APIKey != "" {
		hdr.Set("Authorization", "Bearer "+w.o.APIKey)
	}
	hdr.Set("User-Agent", "errand-go-worker")
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	conn, resp, err := websocket.Dial(dctx, w.url, &websocket.DialOptions{HTTPClient: w.o.HTTPClient, HTTPHeader: hdr})
	cancel()
	if err != nil {
		return false, dialError(resp, err)
	}
	conn.SetReadLimit(readLimit)
	defer conn.CloseNow()

	w.mu.Lock()
	names := make([]string, 0, len(w.handlers))
	for n := range w.handlers {
		names = append(names, n)
	}
	w.mu.Unlock()
	sort.Strings(names)
	s := &session{w: w, conn: conn, idle: make(chan attempt)}
	welcome, err := s.hello(ctx, &errandapi.WorkerFrame{Type: errandapi.FrameHello, Group: w.group, Functions: names,
		Slots: w.o.Slots, SDK: sdkName, Batches: true})
	if err != nil {
		return false, err
	}
	if welcome.Type != errandapi.FrameWelcome {
		return false, fmt.Errorf("worker: the node answered hello with %q", welcome.Type)
	}
	hb := time.Duration(max(welcome.HeartbeatSeconds, 1)) * time.Second
	s.drains = welcome.Drains
	if welcome.Batches {
		s.out = &errandapi.Outbox{Write: s.write}
		if outboxMade != nil {
			outboxMade(s.out)
		}
	}
	w.log.Info("worker connected", "worker", welcome.Worker, "functions", strings.Join(names, ","), "slots", w.o.Slots)

	// Handlers run under lost: it ends when the connection does, so that
	// a handler whose attempt the node has already failed (and will retry
	// elsewhere) learns it. They do not end with ctx: on shutdown they
	// finish and their answers are sent.
	lost, loseCause := context.WithCancelCause(context.WithoutCancel(ctx))
	lose := func() { loseCause(ErrConnectionLost) }
	watched := make(chan struct{})
	go func() { // three heartbeats, in tenths of one
		defer close(watched)
		tk := time.NewTicker(hb / 10)
		defer tk.Stop()
		s.watch(lost, tk.C, 30)
	}()
	stopped := make(chan struct{})
	defer func() { lose(); <-watched; <-stopped }()
	go s.heartbeat(lost, hb)
	go func() { // Run waits for it: a drain's close may take a moment
		defer close(stopped)
		select {
		case <-ctx.Done():
			s.drain()
		case <-lost.Done():
		}
	}()
	for {
		as, err := s.read()
		if err != nil {
			lose()
			s.wg.Wait()
			if s.stopped() {
				return true, nil
			}
			return true, err
		}
		for _, a := range as {
			switch f := a.f; f.Type {
			case errandapi.FrameAttempt:
				s.start(lost, a)
			case errandapi.FrameRefused:
				msg := ""
				if f.Refusal != nil {
					msg = string(f.Refusal.Code) + ": " + f.Refusal.Message
				}
				w.log.Warn("the node refused an answer", "lease", f.LeaseID, "error", msg)
			case errandapi.FrameRecorded, errandapi.FramePing:
			}
		}
	}
}

// outboxMade, when set (tests), is given each session's outbox before
// its first frame.
var outboxMade func(*errandapi.Outbox)

// session is the state of one connection.
type session struct {
	w      *Worker
	conn   *websocket.Conn
	sendMu sync.Mutex
	wg     sync.WaitGroup

	drains bool // the node takes draining (welcome's drains); set before the first attempt
	// out sends the frames of concurrent senders together when the node
	// reads batches (welcome's batches); nil when it does not. Set before
	// the first attempt.
	out *errandapi.Outbox

	mu sync.Mutex
	// stopping: ctx ended. With a node that drains, the worker said
	// draining and the node closes the connection once every attempt it
	// sent is answered; with one that does not, new attempts are deferred
	// and the worker closes when none runs.
	stopping bool
	running  int // handlers running

	// Reads and writes after welcome take no context of their own (a
	// timer and a context callback each, once a frame): watch cuts a
	// silent or stalled connection instead. Times are counts of its ticks.
	ticks   atomic.Int64 // ticks watch has seen
	heard   atomic.Int64 // ticks when the last frame was read
	writing atomic.Int64 // 1 + ticks when the write under way began; 0 for none

	// idle hands an attempt to a handler goroutine that has finished its
	// last one (see start).
	idle chan attempt
}

// attempt is an attempt frame and its body, decoded together (decodeFrame).
type attempt struct {
	f *errandapi.WorkerFrame
	b *errandapi.DeliveryBody // nil: decoded from f.Body when the attempt runs
}

// hello sends f, the hello, and reads the node's answer, each within 30 s.
func (s *session) hello(ctx context.Context, f *errandapi.WorkerFrame) (*errandapi.WorkerFrame, error) {
	b, err := f.MarshalJSON()
	if err != nil {
		return nil, err
	}
	hctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := s.conn.Write(hctx, websocket.MessageText, b); err != nil {
		return nil, err
	}
	_, b, err = s.conn.Read(hctx)
	if err != nil {
		return nil, closeError(err)
	}
	a, err := decodeFrame(b)
	return a.f, err
}

// watch closes the connection once the node has sent nothing for more
// than limit ticks (it pings every heartbeat) or a write has not ended
// within as many (the node stopped reading), so that the read or write
// waiting on it fails. It returns then, or when ctx ends.
func (s *session) watch(ctx context.Context, tick <-chan time.Time, limit int64) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
			n := s.ticks.Add(1)
			w := s.writing.Load()
			if n-s.heard.Load() > limit || (w != 0 && n-(w-1) > limit) {
				s.conn.CloseNow()
				return
			}
		}
	}
}

// send sends f after welcome: with the frames of other senders when the
// node reads batches (s.out), alone when it does not.
func (s *session) send(f *errandapi.WorkerFrame) error {
	b, err := f.MarshalJSON() // already compact: json.Marshal(f) would only scan it again
	if err != nil {
		return err
	}
	if s.out != nil {
		return s.out.Send(b)
	}
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	return s.write(b)
}

// write writes one message after welcome (its callers never overlap);
// watch cuts a write that stalls.
func (s *session) write(msg []byte) error {
	s.writing.Store(1 + s.ticks.Load())
	defer s.writing.Store(0)
	return s.conn.Write(context.Background(), websocket.MessageText, msg)
}

// read reads one message after welcome, for as long as watch lets it: a
// frame, or a batch of them.
func (s *session) read() ([]attempt, error) {
	_, b, err := s.conn.Read(context.Background())
	if err != nil {
		return nil, closeError(err)
	}
	s.heard.Store(s.ticks.Load())
	return decodeMessage(b)
}

// decodeMessage decodes the frames of a message from the node: one, or a
// batch (errandapi.SplitBatch), each by decodeFrame.
func decodeMessage(b []byte) ([]attempt, error) {
	raw, err := errandapi.SplitBatch(b)
	if err != nil {
		return nil, fmt.Errorf("worker: a message from the node is not a frame or a batch of them: %w", err)
	}
	as := make([]attempt, len(raw))
	for i, r := range raw {
		if as[i], err = decodeFrame(r); err != nil {
			return nil, err
		}
	}
	return as, nil
}

// decodeFrame decodes a frame from the node with the frame's own decoder,
// which reads an attempt's and an answer's fields (a recorded frame's
// too) in one pass, and an attempt's body then with DeliveryBody's (one
// pass too). An attempt whose body does not decode arrives without it:
// running it fails the attempt, not the connection.
func decodeFrame(b []byte) (attempt, error) {
	var f errandapi.WorkerFrame
	// Not json.Unmarshal(b, &f): it would make a pass of its own over the
	// bytes before calling the frame's decoder.
	if err := f.UnmarshalJSON(b); err != nil {
		return attempt{}, fmt.Errorf("worker: a frame from the node is not JSON: %w", err)
	}
	a := attempt{f: &f}
	if f.Type == errandapi.FrameAttempt && len(f.Body) > 0 {
		var d errandapi.DeliveryBody
		if d.UnmarshalJSON(f.Body) == nil {
			a.b, f.Body = &d, nil // the payload is held once while the attempt runs
		}
	}
	return a, nil
}

func (s *session) heartbeat(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if s.send(&errandapi.WorkerFrame{Type: errandapi.FramePing}) != nil {
				return
			}
		}
	}
}

// drain tells the node the worker takes no new attempt. The node sends
// none after it reads that (those it sent before are run, not deferred,
// so that none counts as a failure), and closes the connection once every
// attempt it sent is answered; a failed send closes it here.
func (s *session) drain() {
	s.mu.Lock()
	s.stopping = true
	idle := s.running == 0
	s.mu.Unlock()
	switch {
	case s.drains:
		if s.send(&errandapi.WorkerFrame{Type: errandapi.FrameDraining}) != nil {
			s.conn.CloseNow()
		}
	case idle:
		s.conn.Close(websocket.StatusNormalClosure, "the worker is shutting down")
	}
}

// stopped reports whether drain began.
func (s *session) stopped() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopping
}

// start runs one attempt in a handler goroutine and sends its answer. A
// goroutine that has sent its answer waits for the next attempt until the
// connection ends, so that at most slots of them run, and each grows its
// stack once, not once an attempt.
func (s *session) start(ctx context.Context, a attempt) {
	s.mu.Lock()
	if s.stopping && !s.drains { // a node that goes on sending until the worker leaves
		s.mu.Unlock()
		_ = s.send(&errandapi.WorkerFrame{Type: errandapi.FrameDefer, LeaseID: a.f.LeaseID, Seconds: 1})
		return
	}
	s.running++
	s.mu.Unlock()
	select {
	case s.idle <- a:
		return
	default:
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			answer := s.run(ctx, a)
			_ = s.send(answer)
			s.mu.Lock()
			s.running--
			last := s.stopping && s.running == 0 && !s.drains
			s.mu.Unlock()
			if last {
				s.conn.Close(websocket.StatusNormalClosure, "the worker is shutting down")
			}
			select {
			case a = <-s.idle:
			case <-ctx.Done():
				return
			}
		}
	}()
}

// taskOf is the Task delivery body b describes, with the attempt's
// deadline and the function's name within its group ("" for a webhook
// delivery).
func taskOf(b *errandapi.DeliveryBody, deadline time.Time, function string) *Task {
	t := &Task{ID: b.Task.ID, Queue: b.Task.Queue, Attempt: b.Task.Attempt, MaxAttempts: b.Task.MaxAttempts,
		RunAt: time.UnixMilli(b.Task.RunAt), CreatedAt: time.UnixMilli(b.Task.CreatedAt), DeadlineAt: deadline,
		Source: b.Task.Source, Depth: b.Task.Depth, Payload: b.Payload, Function: function}
	t.setOptional(b.Task.Name, b.Task.DeadLetterOf, b.Task.Params)
	return t
}

// run runs the attempt's handler and returns the answer to send.
func (s *session) run(ctx context.Context, a attempt) *errandapi.WorkerFrame {
	f := a.f
	fail := func(msg string) *errandapi.WorkerFrame {
		return &errandapi.WorkerFrame{Type: errandapi.FrameFailed, LeaseID: f.LeaseID, Error: msg}
	}
	s.w.mu.Lock()
	h := s.w.handlers[f.Function]
	s.w.mu.Unlock()
	if h == nil {
		return fail(fmt.Sprintf("this worker has no handler for %q", f.Function))
	}
	b := a.b
	if b == nil {
		b = &errandapi.DeliveryBody{}
		if err := json.Unmarshal(f.Body, b); err != nil {
			return fail("the attempt's body is not valid: " + err.Error())
		}
	}
	t := taskOf(b, time.UnixMilli(f.DeadlineAt), f.Function)
	t.Priority = f.Priority
	hctx, cancel := context.WithDeadline(client.WithDelivery(ctx, f.Token), t.DeadlineAt)
	defer cancel()
	switch o := invoke(hctx, h, t, f.Function); {
	case o.deferBy != nil:
		return &errandapi.WorkerFrame{Type: errandapi.FrameDefer, LeaseID: f.LeaseID, Seconds: max(o.deferBy.Delay.Seconds(), 0.001)}
	case o.failed != "":
		return fail(o.failed)
	default:
		return &errandapi.WorkerFrame{Type: errandapi.FrameDone, LeaseID: f.LeaseID, Result: o.result}
	}
}

// outcome is what a handler's return means for its attempt: a result, a
// deferral or a failure with its error.
type outcome struct {
	result  json.RawMessage
	deferBy *DeferError
	failed  string
}

// invoke runs h for t (of function, as a panic's error names it): a panic
// fails the attempt with its value and stack; a result that is not JSON,
// or over 64 KiB, fails it here rather than being sent (past the frame's
// bound it would end the connection and every attempt on it; the API
// would refuse the ack). A failure's error is cut to MaxWorkerError, well
// below the frame's bound.
func invoke(ctx context.Context, h Handler, t *Task, function string) (o outcome) {
	defer func() {
		if p := recover(); p != nil {
			o = outcome{failed: errandapi.PanicError(function, p, debug.Stack())}
		}
		if len(o.failed) > errandapi.MaxWorkerError {
			o.failed = strings.ToValidUTF8(o.failed[:errandapi.MaxWorkerError], "") + "…"
		}
	}()
	out, err := h(ctx, t)
	var de *DeferError
	switch {
	case errors.As(err, &de):
		return outcome{deferBy: de}
	case err != nil:
		return outcome{failed: err.Error()}
	case len(out) > 0 && !json.Valid(out):
		return outcome{failed: "the function's result is not valid JSON"}
	case len(out) > errandapi.MaxPayloadBytes:
		return outcome{failed: fmt.Sprintf("the function's result is %d bytes: a result is at most %d bytes of JSON", len(out), errandapi.MaxPayloadBytes)}
	}
	return outcome{result: out}
}

// closeError turns a close frame with a v1 error object as its reason
// into a *CloseError; other errors pass unchanged.
func closeError(err error) error {
	var ce websocket.CloseError
	if !errors.As(err, &ce) {
		return err
	}
	out := &CloseError{Status: ce.Code}
	if json.Unmarshal([]byte(ce.Reason), &out.ErrorDetail) != nil || out.Code == "" {
		out.Code, out.Message = errandapi.CodeUnavailable, ce.Reason
	}
	// The node cuts a message that does not fit the frame at a word's
	// end and marks the cut with "…".
	out.Truncated = strings.HasSuffix(out.Message, "…")
	return out
}

// dialError reads a refused handshake's answer (an errand error body).
func dialError(resp *http.Response, err error) error {
	if resp == nil {
		return err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var e errandapi.ErrorResponse
	if json.Unmarshal(raw, &e) == nil && e.Error.Code != "" {
		return &errandapi.Error{Code: e.Error.Code, Message: e.Error.Message, Status: resp.StatusCode}
	}
	return fmt.Errorf("worker: the handshake got HTTP %d: %w", resp.StatusCode, err)
}
