package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/deliver"
	"github.com/errandhq/errand/internal/jsonstrict"
	"github.com/errandhq/errand/internal/task"
)

// workerHeartbeat is how often each side of a worker connection pings when
// idle; a side that hears nothing for three periods closes it.
const workerHeartbeat = 10 * time.Second

// workerConnect serves GET /v1/workers/{instance}: a function worker's
// WebSocket (docs/workers.md). The worker says hello (its group, functions
// and slots), gets welcome, then receives attempts and answers each once.
// A bad hello or a malformed frame closes the connection with a v1 error
// object as the reason; the attempts it held are failed and retried.
func (s *Server) workerConnect(w http.ResponseWriter, r *http.Request, c *call) {
	if s.workers == nil {
		s.writeError(w, r, task.Errorf(task.CodeNotFound, "function workers are not served here"))
		return
	}
	inst, err := s.eng.Instance(r.Context(), c.p.Org, c.instance)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		s.writeError(w, r, task.FieldErrorf(task.CodeInvalidArgument, "Upgrade", "GET %s{instance} is a WebSocket: send Upgrade: websocket", errandapi.WorkerPath))
		return
	}
	if foreignOrigin(r) {
		s.writeError(w, r, task.Errorf(task.CodePermissionDenied, "a worker's WebSocket from origin %s is refused: a worker connects without an Origin, or from errand's own", task.Quote(r.Header.Get("Origin"))))
		return
	}
	// The server's read and write timeouts are for requests; a worker's
	// connection lives as long as the worker, with its own heartbeat.
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{})
	_ = rc.SetWriteDeadline(time.Time{})
	conn, err := websocket.Accept(w, r, nil) // checks Origin against Host
	if err != nil {
		return // Accept answered
	}
	conn.SetReadLimit(frameReadLimit)
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	defer cancel()
	tr := &wsTransport{conn: conn}
	watched := make(chan struct{})
	go func() { // three heartbeats, in tenths of one
		defer close(watched)
		tk := time.NewTicker(workerHeartbeat / 10)
		defer tk.Stop()
		tr.watch(ctx, tk.C, 30)
	}()
	defer func() { cancel(); <-watched }()
	hello, err := tr.readHello()
	if err != nil {
		tr.closeWith(websocket.StatusPolicyViolation, err)
		return
	}
	wc, err := s.workers.Register(inst.ID, hello, tr)
	if err != nil {
		tr.closeWith(websocket.StatusPolicyViolation, err)
		return
	}
	log := s.log.With("instance", c.instance, "worker", wc.ID(), "group", hello.Group)
	log.Info("worker connected", "functions", strings.Join(wc.Functions(), ","), "slots", hello.Slots, "sdk", hello.SDK)
	reason := "the worker closed the connection"
	left := false
	// leave ends the connection's registration, once: its attempts in
	// flight fail and no attempt is handed to it from then on. A close
	// the node begins comes after it, so that no attempt goes to a
	// connection waiting out its close handshake (up to 5 s for a peer
	// that does not answer), whose answers would go unread.
	leave := func() {
		if !left {
			left = true
			wc.Close(reason)
			log.Info("worker disconnected", "reason", reason)
		}
	}
	defer leave()
	// drained leaves, then closes the connection normally: the worker
	// drained and holds nothing.
	drained := func() {
		reason = "the worker drained"
		leave()
		_ = conn.Close(websocket.StatusNormalClosure, "drained")
	}
	// refuse leaves, then closes the connection with err.
	refuse := func(err error) {
		leave()
		log.Debug("worker connection closed by the node", "handshake", handshake(tr.closeWith(websocket.StatusPolicyViolation, err)))
	}
	if err := wc.Send(&errandapi.WorkerFrame{Type: errandapi.FrameWelcome, Worker: wc.ID(),
		HeartbeatSeconds: int(workerHeartbeat / time.Second), Drains: true, Batches: true}); err != nil {
		reason = "sending welcome failed"
		conn.CloseNow()
		return
	}
	wc.Ready()
	beat := make(chan struct{})
	// A close the goroutine began ends within its handshake.
	defer func() { cancel(); <-beat }()
	go func() { // heartbeat, and the key checked again every keyCheckEvery
		defer close(beat)
		t := time.NewTicker(workerHeartbeat)
		defer t.Stop()
		check := time.NewTicker(keyCheckEvery)
		defer check.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-check.C:
				// A revoked key (or one deleted) sends no more attempts:
				// the worker's Run ends with UNAUTHENTICATED.
				if s.stillAdmitted(ctx, c.p) != nil {
					const revoked = "the API key of this connection was revoked"
					wc.Close(revoked) // before the close, as leave does
					tr.closeWith(websocket.StatusPolicyViolation, task.Errorf(task.CodeUnauthenticated, revoked))
					return
				}
			case <-t.C:
				if wc.Send(&errandapi.WorkerFrame{Type: errandapi.FramePing}) != nil {
					return
				}
			}
		}
	}()
	var answers []*errandapi.WorkerFrame
	for {
		fs, _, err := tr.read()
		if big := tooLargeAnswer(err); big != nil {
			// An answer too large to take fails its own attempt; the
			// connection and the other attempts it holds go on.
			if err := wc.Send(wc.AnswerRefused(big.leaseID, big.err)); err != nil {
				reason = "sending an answer failed: " + err.Error()
				conn.CloseNow()
				return
			}
			if wc.Drained() {
				drained()
				return
			}
			continue
		}
		if err != nil {
			var te *task.Error
			if errors.As(err, &te) {
				reason = "malformed frame: " + te.Message
				refuse(err)
			} else {
				reason = tr.ended(err)
				conn.CloseNow()
			}
			return
		}
		// The answers to a batch's frames go back together, after it.
		answers = answers[:0]
		var bad error
		for _, f := range fs {
			switch f.Type {
			case errandapi.FramePing:
			case errandapi.FrameDraining:
				wc.Drain() // closed below once it holds nothing
			case errandapi.FrameDone, errandapi.FrameFailed, errandapi.FrameDefer:
				if f.LeaseID == "" {
					reason = "malformed frame: no leaseId"
					bad = task.FieldErrorf(task.CodeInvalidArgument, "leaseId", "is required on %s", f.Type)
					break
				}
				answers = append(answers, wc.Answer(f))
			default:
				reason = "malformed frame: unexpected type " + f.Type
				bad = task.FieldErrorf(task.CodeInvalidArgument, "type", "a worker sends done, failed, defer, draining or ping here, not %s", task.Quote(f.Type))
			}
			if bad != nil {
				break
			}
		}
		if len(answers) > 0 {
			// Those before a malformed frame were taken: the worker hears
			// so before the close.
			if err := wc.SendAll(answers); err != nil && bad == nil {
				reason = "sending an answer failed: " + err.Error()
				conn.CloseNow()
				return
			}
		}
		if bad != nil {
			refuse(bad)
			return
		}
		if wc.Drained() { // one atomic load while the worker is not draining
			drained()
			return
		}
	}
}

// wsTransport is deliver.WorkerTransport over a WebSocket, and the
// connection's reads. Reads and writes take no context of their own (a
// timer and a context callback each, once a frame, would cost more than
// the frame): watch cuts a silent or stalled connection instead. Its
// times are counts of watch's ticks.
type wsTransport struct {
	conn    *websocket.Conn
	ticks   atomic.Int64 // ticks watch has seen
	heard   atomic.Int64 // ticks when the last frame was read
	writing atomic.Int64 // 1 + ticks when the write under way began; 0 for none
	closed  atomic.Value // why this node closed the connection (a string), once it has

	onHeard func() // a test's signal: part of a large frame was read
}

var _ deliver.WorkerTransport = (*wsTransport)(nil)

// watch closes the connection once the worker has sent nothing for more
// than limit ticks (each side pings every heartbeat) or a write has not
// ended within as many (the worker stopped reading), so that the read or
// write waiting on it fails. It returns then, or when ctx ends.
func (t *wsTransport) watch(ctx context.Context, tick <-chan time.Time, limit int64) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
			n := t.ticks.Add(1)
			w := t.writing.Load()
			silent, stalled := n-t.heard.Load() > limit, w != 0 && n-(w-1) > limit
			if silent || stalled {
				why := fmt.Sprintf("a frame to the worker was not taken for %s (it stopped reading)", 3*workerHeartbeat)
				if silent {
					why = fmt.Sprintf("the worker sent nothing for %s (three heartbeats)", 3*workerHeartbeat)
				}
				t.closed.Store(why)
				t.conn.CloseNow()
				return
			}
		}
	}
}

// ended says, in a user's words, why a read failed on a connection that
// was not closed for a malformed frame: what the task's attempt records
// as the cause of its failure, not the WebSocket library's chain of
// messages.
func (t *wsTransport) ended(err error) string {
	if why, ok := t.closed.Load().(string); ok {
		return why
	}
	if errors.Is(err, websocket.ErrMessageTooBig) {
		return fmt.Sprintf("the worker sent a frame past %d MiB: the node closed the connection (1009)", frameReadLimit>>20)
	}
	var ce websocket.CloseError
	if errors.As(err, &ce) {
		if ce.Reason == "" {
			return fmt.Sprintf("the worker closed the connection (status %d)", int(ce.Code))
		}
		return fmt.Sprintf("the worker closed the connection (status %d: %s)", int(ce.Code), task.Quote(ce.Reason))
	}
	return "the connection broke without a close frame (the worker's process ended, or the network failed)"
}

// readHello reads the worker's first message, which is one frame: a
// batch is an INVALID_ARGUMENT *task.Error, as read's errors are.
func (t *wsTransport) readHello() (*errandapi.WorkerFrame, error) {
	fs, batch, err := t.read()
	if err != nil {
		return nil, err
	}
	if batch {
		return nil, task.FieldErrorf(task.CodeInvalidArgument, "type", "the first frame must be hello, alone, not a batch")
	}
	return fs[0], nil
}

// read reads one JSON text message: a frame, or a batch of them
// (errandapi.SplitBatch; batch says which). A frame that is not a JSON object with a type,
// or a batch that is not an array of them, is an INVALID_ARGUMENT
// *task.Error; a broken connection, or one watch cut, is another error.
//
// A frame past errandapi.MaxWorkerFrame (up to frameReadLimit) is read
// through to its end, a JSON token at a time, and answered by a
// *frameTooLarge error (a PAYLOAD_TOO_LARGE *task.Error) that carries its
// type and leaseId. A batch past it is a PAYLOAD_TOO_LARGE *task.Error:
// a worker packs no more than that into one.
func (t *wsTransport) read() (_ []*errandapi.WorkerFrame, batch bool, err error) {
	typ, r, err := t.conn.Reader(context.Background())
	if err != nil {
		return nil, false, err
	}
	b, err := io.ReadAll(io.LimitReader(r, errandapi.MaxWorkerFrame+1))
	if err != nil {
		return nil, false, err
	}
	if typ != websocket.MessageText {
		return nil, false, task.Errorf(task.CodeInvalidArgument, "frames are JSON text, not binary")
	}
	lead := bytes.TrimLeft(b, " \t\r\n")
	batch = len(lead) > 0 && lead[0] == '['
	if len(b) > errandapi.MaxWorkerFrame {
		if batch {
			return nil, true, task.Errorf(task.CodePayloadTooLarge, "a batch of frames is at most %d bytes: a frame longer than that is sent alone", errandapi.MaxWorkerFrame)
		}
		// Each part read counts as hearing from the worker: a large frame on
		// a slow link is not cut as silence while it arrives.
		big, err := skimFrame(io.MultiReader(bytes.NewReader(b), hearing{t, r}))
		t.heard.Store(t.ticks.Load())
		if err != nil {
			return nil, false, err
		}
		return nil, false, big
	}
	t.heard.Store(t.ticks.Load())
	raw, err := errandapi.SplitBatch(b)
	if err != nil {
		return nil, batch, task.Errorf(task.CodeInvalidArgument, "%s", err.Error())
	}
	fs := make([]*errandapi.WorkerFrame, len(raw))
	for i, b := range raw {
		if fs[i], err = decodeFrame(b); err != nil {
			return nil, batch, err
		}
	}
	return fs, batch, nil
}

// decodeFrame decodes one frame a worker sent. One that is not a JSON
// object with a type is an INVALID_ARGUMENT *task.Error, naming a field
// of the wrong JSON type.
func decodeFrame(b []byte) (*errandapi.WorkerFrame, error) {
	var f errandapi.WorkerFrame
	// The frame's own decoder (which reads an answer's fields in one pass):
	// json.Unmarshal(b, &f) would make a pass of its own over the bytes
	// before calling it.
	if err := f.UnmarshalJSON(b); err != nil || f.Type == "" {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return nil, task.FieldErrorf(task.CodeInvalidArgument, te.Field, "%s", jsonstrict.TypeMismatch(te.Type.Kind(), te.Value))
		}
		return nil, task.Errorf(task.CodeInvalidArgument, "a frame is a JSON object with a type")
	}
	return &f, nil
}

// hearing reads a frame's bytes from r, each read counting as hearing
// from the worker (for watch).
type hearing struct {
	t *wsTransport
	r io.Reader
}

func (h hearing) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	h.t.heard.Store(h.t.ticks.Load())
	if h.t.onHeard != nil {
		h.t.onHeard()
	}
	return n, err
}

// Send implements deliver.WorkerTransport; watch cuts a write that
// stalls.
func (t *wsTransport) Send(b []byte) error {
	t.writing.Store(1 + t.ticks.Load())
	defer t.writing.Store(0)
	return t.conn.Write(context.Background(), websocket.MessageText, b)
}

// Close implements deliver.WorkerTransport. The read under way then ends
// with the worker's echo of the close; ended says it was this node's.
func (t *wsTransport) Close(reason string) {
	t.closing(reason)
	_ = t.conn.Close(websocket.StatusGoingAway, closeReason(errandapi.CodeUnavailable, reason))
}

// closing records why this node is closing the connection, for ended.
func (t *wsTransport) closing(reason string) {
	t.closed.Store("the node closed the connection: " + reason)
}

// closeWith closes the connection with err as a v1 error object and
// returns how its close handshake ended (nil: the peer answered).
func (t *wsTransport) closeWith(code websocket.StatusCode, err error) error {
	t.closing(err.Error())
	var te *task.Error
	if !errors.As(err, &te) {
		return t.conn.Close(websocket.StatusProtocolError, closeReason(errandapi.CodeInvalidArgument, err.Error()))
	}
	if te.Code == task.CodePayloadTooLarge {
		code = websocket.StatusMessageTooBig
	}
	return t.conn.Close(code, closeReason(te.Code, te.Message))
}

// handshake says how a close handshake ended, for the log.
func handshake(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}

// closeReason is a v1 error object that fits a close frame (123 bytes).
func closeReason(code errandapi.Code, msg string) string {
	for {
		b, _ := json.Marshal(errandapi.ErrorDetail{Code: code, Message: msg})
		if len(b) <= 123 || msg == "" {
			return string(b)
		}
		cut := strings.ToValidUTF8(msg[:max(0, len(msg)-(len(b)-123)-4)], "")
		if i := strings.LastIndexByte(cut, ' '); i > 0 {
			cut = cut[:i] // whole words only: a reader is not shown half of one
		}
		msg = strings.TrimRight(cut, " ,;:") + "…"
	}
}
