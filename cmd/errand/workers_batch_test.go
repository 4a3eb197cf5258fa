package main

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/errandhq/errand/errandapi"
)

// readMessage returns the frames of the next message that holds more than
// pings, and whether it was a batch; a close is the error.
func (w *rawWorker) readMessage() ([]*errandapi.WorkerFrame, bool, error) {
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, b, err := w.conn.Read(ctx)
		cancel()
		if err != nil {
			return nil, false, err
		}
		raw, err := errandapi.SplitBatch(b)
		if err != nil {
			w.t.Fatalf("message %s: %v", b, err)
		}
		var fs []*errandapi.WorkerFrame
		for _, r := range raw {
			var f errandapi.WorkerFrame
			if err := f.UnmarshalJSON(r); err != nil {
				w.t.Fatalf("frame %s: %v", r, err)
			}
			if f.Type != errandapi.FramePing {
				fs = append(fs, &f)
			}
		}
		if len(fs) > 0 {
			return fs, b[0] == '[', nil
		}
	}
}

// attempts reads messages until it has n attempts, checking that none is
// a batch when batches is false.
func (w *rawWorker) attempts(n int, batches bool) []*errandapi.WorkerFrame {
	w.t.Helper()
	var as []*errandapi.WorkerFrame
	for len(as) < n {
		fs, batch, err := w.readMessage()
		if err != nil {
			w.t.Fatalf("after %d attempts: %v", len(as), err)
		}
		if batch && !batches {
			w.t.Fatalf("a worker that did not say batches got one: %+v", fs)
		}
		for _, f := range fs {
			if f.Type != errandapi.FrameAttempt {
				w.t.Fatalf("got %+v, want an attempt", f)
			}
			as = append(as, f)
		}
	}
	return as
}

// batchOf is the batch that carries frames.
func batchOf(t *testing.T, frames ...any) []byte {
	t.Helper()
	var enc [][]byte
	for _, f := range frames {
		b, ok := f.([]byte)
		if !ok {
			var err error
			if b, err = json.Marshal(f); err != nil {
				t.Fatal(err)
			}
		}
		enc = append(enc, b)
	}
	return errandapi.AppendBatch(nil, enc)
}

// TestWorkerBatches: a worker whose hello says batches is welcomed by a
// node that says it reads them; the node takes a batch of answers and
// answers them in one message, and every task succeeds. A worker that does
// not say batches gets one frame a message, even when it sends a batch.
// Bad batches close the connection naming what was wrong, and the answers
// a batch held before a malformed frame are taken and recorded.
func TestWorkerBatches(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	ctx := context.Background()
	url, c, o := workerDev(t)
	add := func(n int) []string {
		t.Helper()
		var ids []string
		for range n {
			r, err := c.AddTask(ctx, "jobs", "work", errandapi.NewTask{Payload: json.RawMessage(`{}`)})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, r.ID)
		}
		return ids
	}
	done := func(a *errandapi.WorkerFrame) errandapi.WorkerFrame {
		return errandapi.WorkerFrame{Type: errandapi.FrameDone, LeaseID: a.LeaseID, Result: json.RawMessage(`{"ok":true}`)}
	}

	// A worker that reads batches.
	ids := add(3)
	h := hello("work")
	h.Slots, h.Batches = 3, true
	w, f := welcomed(t, url, h)
	if !f.Batches {
		t.Fatalf("welcome %+v does not say the node reads batches", f)
	}
	as := w.attempts(3, true)
	w.send(batchOf(t, done(as[0]), errandapi.WorkerFrame{Type: errandapi.FramePing}, done(as[1]), done(as[2])))
	fs, batch, err := w.readMessage()
	if err != nil || !batch || len(fs) != 3 {
		t.Fatalf("the answer to a batch of 3 answers: %+v (a batch: %v), %v; want one batch of 3 recorded", fs, batch, err)
	}
	for i, f := range fs {
		if f.Type != errandapi.FrameRecorded || f.LeaseID != as[i].LeaseID {
			t.Fatalf("answer %d: %+v, want recorded %s", i, f, as[i].LeaseID)
		}
	}
	waitTasks(t, o, c, ids, 30*time.Second)
	w.send(errandapi.WorkerFrame{Type: errandapi.FrameDraining})
	if _, _, err := w.readMessage(); websocket.CloseStatus(err) != websocket.StatusNormalClosure {
		t.Fatalf("an idle worker draining: %v, want a normal close", err)
	}

	// A worker from before batches: one frame a message, whatever it sends.
	ids = add(2)
	h.Batches = false
	w, _ = welcomed(t, url, h)
	as = w.attempts(2, false)
	w.send(batchOf(t, done(as[0]), done(as[1])))
	for i := range 2 {
		fs, batch, err := w.readMessage()
		if err != nil || batch || len(fs) != 1 || fs[0].Type != errandapi.FrameRecorded || fs[0].LeaseID != as[i].LeaseID {
			t.Fatalf("answer %d to an old worker: %+v (a batch: %v), %v; want recorded %s alone", i, fs, batch, err, as[i].LeaseID)
		}
	}
	waitTasks(t, o, c, ids, 30*time.Second)
	w.send(errandapi.WorkerFrame{Type: errandapi.FrameDraining})
	if _, _, err := w.readMessage(); websocket.CloseStatus(err) != websocket.StatusNormalClosure {
		t.Fatalf("an idle worker draining: %v, want a normal close", err)
	}

	// Bad batches close the connection, naming what was wrong.
	over := `{"type":"ping","x":"` + strings.Repeat("a", errandapi.MaxWorkerFrame) + `"}`
	for _, c := range []struct {
		name   string
		msg    []byte
		hello  bool // sent as the first message, for the hello
		code   errandapi.Code
		says   string
		status websocket.StatusCode
	}{
		{"a hello in a batch", []byte(`[` + string(batchOf(t, h)) + `]`), true, errandapi.CodeInvalidArgument, "alone", websocket.StatusPolicyViolation},
		{"an empty batch", []byte(`[]`), false, errandapi.CodeInvalidArgument, "batch", websocket.StatusPolicyViolation},
		{"a batch of a number", []byte(`[{"type":"ping"},1]`), false, errandapi.CodeInvalidArgument, "batch", websocket.StatusPolicyViolation},
		{"a batch of an unknown type", batchOf(t, errandapi.WorkerFrame{Type: errandapi.FramePing}, errandapi.WorkerFrame{Type: "nonsense"}), false, errandapi.CodeInvalidArgument, "type: ", websocket.StatusPolicyViolation},
		{"a batch past 256 KiB", batchOf(t, []byte(`{"type":"ping"}`), []byte(over)), false, errandapi.CodePayloadTooLarge, "262144", websocket.StatusMessageTooBig},
	} {
		var w *rawWorker
		if c.hello {
			w = dialWorker(t, url)
		} else {
			w, _ = welcomed(t, url, h)
		}
		w.send(c.msg)
		_, _, err := w.readMessage()
		var ce websocket.CloseError
		var d errandapi.ErrorDetail
		if !errors.As(err, &ce) || json.Unmarshal([]byte(ce.Reason), &d) != nil || ce.Code != c.status || d.Code != c.code || !strings.Contains(d.Message, c.says) {
			t.Fatalf("%s: closed with %v; want %d and %s saying %q", c.name, err, c.status, c.code, c.says)
		}
	}

	// A batch whose second frame is malformed: the first answer is taken
	// (recorded, and its task succeeds) before the close.
	ids = add(1)
	h.Batches = true
	w, _ = welcomed(t, url, h)
	as = w.attempts(1, true)
	w.send(batchOf(t, done(as[0]), errandapi.WorkerFrame{Type: errandapi.FrameDone}))
	if fs, _, err := w.readMessage(); err != nil || len(fs) != 1 || fs[0].Type != errandapi.FrameRecorded || fs[0].LeaseID != as[0].LeaseID {
		t.Fatalf("the answer before a malformed frame: %+v, %v; want recorded", fs, err)
	}
	if d := w.closed(); d.Code != errandapi.CodeInvalidArgument || !strings.HasPrefix(d.Message, "leaseId: ") {
		t.Fatalf("an answer without a leaseId in a batch closed with %+v", d)
	}
	// The attempt answered is the task's last, and succeeded with the
	// answer's result. (An earlier one may have gone to one of the
	// connections closed above, before the node had let it go: failed, or
	// released uncounted when it could not be sent, its number then given
	// again.)
	var body errandapi.DeliveryBody
	if err := json.Unmarshal(as[0].Body, &body); err != nil {
		t.Fatal(err)
	}
	tk := waitTasks(t, o, c, ids, 30*time.Second)[ids[0]]
	last := tk.Attempts[len(tk.Attempts)-1]
	if last.Attempt != body.Task.Attempt || last.Status != "succeeded" || string(tk.Result) != `{"ok":true}` {
		t.Fatalf("the task answered before the malformed frame: its last attempt %+v (the answer was to attempt %d), result %s", last, body.Task.Attempt, tk.Result)
	}
}
