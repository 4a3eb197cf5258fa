package errandapi

import (
	"bytes"
	"encoding/json"
)

// DeliveryHeader carries the delivery token of the attempt a request is
// made from (a handler's add): the tasks it adds get depth = the parent's
// + 1 and source "function" ("webhook" with the token a webhook delivery
// carries in this header), and an add past MaxDepth is DEPTH_EXCEEDED.
const DeliveryHeader = "X-Errand-Delivery"

// MaxDepth is the deepest chain of adds made from inside deliveries: a task
// of depth 8 may still add, an add that would make depth 9 is refused.
const MaxDepth = 8

// WorkerPath is the path prefix of the worker connection: GET
// /v1/workers/{instance}, upgraded to a WebSocket.
const WorkerPath = "/v1/workers/"

// Worker frame types (docs/workers.md): the worker sends hello, done,
// failed, defer, draining and ping; the server sends welcome, attempt,
// recorded, refused and ping.
const (
	FrameHello    = "hello"
	FrameWelcome  = "welcome"
	FrameAttempt  = "attempt"
	FrameDone     = "done"
	FrameFailed   = "failed"
	FrameDefer    = "defer"
	FrameRecorded = "recorded"
	FrameRefused  = "refused"
	FramePing     = "ping"
	// FrameDraining: the worker takes no new attempt. The node sends it
	// none after reading it, and closes the connection (1000) once the
	// worker has answered every attempt it was sent.
	FrameDraining = "draining"
)

// MaxWorkerSlots bounds hello's slots.
const MaxWorkerSlots = 1000

// MaxWorkerFrame bounds one frame a worker sends: a result is at most
// MaxPayloadBytes of JSON, and a frame carries it with a little more. An
// answer past it (up to 4 MiB) is refused with PAYLOAD_TOO_LARGE and fails
// its own attempt; any other frame past it, or any frame past 4 MiB, ends
// the connection (and every attempt it holds). It also bounds a batch of
// frames either side sends (PackBatches): a batch from a worker past it
// ends the connection too.
const MaxWorkerFrame = 256 << 10

// MaxPayloadBytes bounds a task's payload, its params and its result:
// 64 KiB of JSON each.
const MaxPayloadBytes = 64 << 10

// MaxWorkerError is how much of a failed attempt's error a worker sends:
// the node keeps the first 500 bytes of it.
const MaxWorkerError = 4 << 10

// WorkerFrame is one message of the worker connection, a JSON text frame.
// Type says which fields are set.
type WorkerFrame struct {
	Type string `json:"type"`

	// hello
	Group     string   `json:"group,omitempty"`
	Functions []string `json:"functions,omitempty"`
	Slots     int      `json:"slots,omitempty"`
	SDK       string   `json:"sdk,omitempty"`

	// welcome
	Worker           string `json:"worker,omitempty"`
	HeartbeatSeconds int    `json:"heartbeatSeconds,omitempty"`
	// Drains says the node takes a draining frame (a node before it
	// closed the connection on one, failing the attempts it held).
	Drains bool `json:"drains,omitempty"`

	// hello, welcome: Batches says the side that sends it reads a batch
	// (several frames in one message: AppendBatch, SplitBatch), so the
	// other side may send it batches. Each side says it for itself: a
	// worker or a node from before batches sends and reads one frame a
	// message.
	Batches bool `json:"batches,omitempty"`

	// attempt, done, failed, defer, recorded, refused
	LeaseID string `json:"leaseId,omitempty"`

	// attempt: Function is the name within the group; Token the delivery
	// token for DeliveryHeader; Body what a webhook receives.
	Function   string          `json:"function,omitempty"`
	DeadlineAt int64           `json:"deadlineAt,omitempty"`
	Priority   int             `json:"priority,omitempty"` // the task's (0–MaxPriority); absent for 0
	Token      string          `json:"token,omitempty"`
	Body       json.RawMessage `json:"body,omitempty"`

	// done: the task's result (JSON, ≤ 64 KiB; absent or null for none).
	Result json.RawMessage `json:"result,omitempty"`
	// failed: the error; refused: the refusal as a v1 error object.
	Error   string       `json:"-"`
	Refusal *ErrorDetail `json:"-"`
	// defer: how long to wait, in seconds (fractions allowed).
	Seconds float64 `json:"seconds,omitempty"`
}

// wireFrame is WorkerFrame as encoded: error is a string on failed and an
// object on refused.
type wireFrame struct {
	Type             string          `json:"type"`
	Group            string          `json:"group,omitempty"`
	Functions        []string        `json:"functions,omitempty"`
	Slots            int             `json:"slots,omitempty"`
	SDK              string          `json:"sdk,omitempty"`
	Worker           string          `json:"worker,omitempty"`
	HeartbeatSeconds int             `json:"heartbeatSeconds,omitempty"`
	Drains           bool            `json:"drains,omitempty"`
	Batches          bool            `json:"batches,omitempty"`
	LeaseID          string          `json:"leaseId,omitempty"`
	Function         string          `json:"function,omitempty"`
	DeadlineAt       int64           `json:"deadlineAt,omitempty"`
	Priority         int             `json:"priority,omitempty"`
	Token            string          `json:"token,omitempty"`
	Body             json.RawMessage `json:"body,omitempty"`
	Result           json.RawMessage `json:"result,omitempty"`
	Error            json.RawMessage `json:"error,omitempty"`
	Seconds          float64         `json:"seconds,omitempty"`
}

// MarshalJSON encodes the frame; error is a string on failed and a v1
// error object on refused. It is json.Marshal's encoding without its HTML
// escaping: a frame is no HTML, and escaping would make a result or a
// payload of <, > and & six times longer on the wire than the bytes its
// bound counts (MaxPayloadBytes, MaxWorkerFrame).
func (f WorkerFrame) MarshalJSON() ([]byte, error) {
	if b, ok := f.appendBare(nil); ok {
		return b, nil
	}
	w := wireFrame{Type: f.Type, Group: f.Group, Functions: f.Functions, Slots: f.Slots, SDK: f.SDK,
		Worker: f.Worker, HeartbeatSeconds: f.HeartbeatSeconds, Drains: f.Drains, Batches: f.Batches, LeaseID: f.LeaseID, Function: f.Function,
		DeadlineAt: f.DeadlineAt, Priority: f.Priority, Token: f.Token, Body: f.Body, Result: f.Result, Seconds: f.Seconds}
	var err error
	switch {
	case f.Refusal != nil:
		w.Error, err = Marshal(f.Refusal)
	case f.Error != "":
		w.Error, err = Marshal(f.Error)
	}
	if err != nil {
		return nil, err
	}
	return Marshal(w)
}

// appendBare appends a frame that holds a type and a lease id alone, of
// plain characters (a recorded frame, the node's answer to nearly every
// answer; a ping; draining), as MarshalJSON encodes it, without
// encoding/json's reflection. ok false: the frame holds more, and nothing
// is appended.
func (f *WorkerFrame) appendBare(b []byte) (_ []byte, ok bool) {
	if f.Group != "" || len(f.Functions) > 0 || f.Slots != 0 || f.SDK != "" || f.Worker != "" || f.HeartbeatSeconds != 0 ||
		f.Drains || f.Batches || f.Function != "" || f.DeadlineAt != 0 || f.Priority != 0 || f.Token != "" || len(f.Body) > 0 ||
		len(f.Result) > 0 || f.Error != "" || f.Refusal != nil || f.Seconds != 0 || !plainJSON(f.Type) || !plainJSON(f.LeaseID) {
		return b, false
	}
	b = append(b, `{"type":"`...)
	b = append(b, f.Type...)
	if f.LeaseID != "" {
		b = append(b, `","leaseId":"`...)
		b = append(b, f.LeaseID...)
	}
	return append(b, `"}`...), true
}

// plainJSON reports whether s is written into a JSON string as it is:
// printable ASCII without a quote or a backslash.
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// Marshal is json.Marshal as errand's wire wants it: without the escaping
// of <, > and &, so that a payload or a result (a json.RawMessage) keeps
// its bytes, and its size, when it is sent on.
func Marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// UnmarshalJSON decodes a frame (see MarshalJSON). A frame of the fields
// an attempt or an answer holds (type, leaseId, function, deadlineAt,
// priority, token, body, result; plain strings) is read in one pass
// (scanFrame), the others by encoding/json, with the same result and the
// same errors (TestWorkerFrameScanAsDecode, FuzzWorkerFrame).
func (f *WorkerFrame) UnmarshalJSON(b []byte) error {
	var v WorkerFrame // the frame is what b holds, nothing of *f before (as decode)
	if scanFrame(b, &v) {
		*f = v
		return nil
	}
	return f.decode(b)
}

// frameFields are wireFrame's JSON names: a key equal to one of them but
// for case, and not read by scanFrame, is left to encoding/json.
var frameFields = []string{"type", "group", "functions", "slots", "sdk", "worker", "heartbeatSeconds", "drains",
	"batches", "leaseId", "function", "deadlineAt", "priority", "token", "body", "result", "error", "seconds"}

// scanFrame reads a frame of an attempt's or an answer's fields into v;
// false: it holds another (or is not such a frame), and v may hold part
// of it.
func scanFrame(b []byte, v *WorkerFrame) bool {
	s := jscan{b: b}
	ok := s.object(frameFields, func(key []byte) (known, ok bool) {
		switch string(key) {
		case "type":
			v.Type, ok = s.str()
		case "leaseId":
			v.LeaseID, ok = s.str()
		case "function":
			v.Function, ok = s.str()
		case "deadlineAt":
			v.DeadlineAt, ok = s.integer()
		case "priority":
			v.Priority, ok = s.intValue()
		case "token":
			v.Token, ok = s.str()
		case "body":
			v.Body, ok = s.raw()
		case "result":
			v.Result, ok = s.raw()
		default:
			return false, false
		}
		return true, ok
	})
	return ok && s.end()
}

// decode is UnmarshalJSON through encoding/json.
func (f *WorkerFrame) decode(b []byte) error {
	var w wireFrame
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*f = WorkerFrame{Type: w.Type, Group: w.Group, Functions: w.Functions, Slots: w.Slots, SDK: w.SDK,
		Worker: w.Worker, HeartbeatSeconds: w.HeartbeatSeconds, Drains: w.Drains, Batches: w.Batches, LeaseID: w.LeaseID, Function: w.Function,
		DeadlineAt: w.DeadlineAt, Priority: w.Priority, Token: w.Token, Body: w.Body, Result: w.Result, Seconds: w.Seconds}
	if len(w.Error) > 0 && string(w.Error) != "null" {
		if w.Error[0] == '{' {
			f.Refusal = &ErrorDetail{}
			return json.Unmarshal(w.Error, f.Refusal)
		}
		return json.Unmarshal(w.Error, &f.Error)
	}
	return nil
}
