package deliver

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/task"
)

// frames records what the node sends a worker (the WebSocket's place in
// these tests of the registry; cmd/errand's tests use real connections).
type frames struct {
	sent chan *errandapi.WorkerFrame
}

// Send decodes the frame as a worker does.
func (f *frames) Send(b []byte) error {
	var fr errandapi.WorkerFrame
	if err := fr.UnmarshalJSON(b); err != nil {
		return err
	}
	f.sent <- &fr
	return nil
}

func (f *frames) Close(string) {}

func connect(t *testing.T, w *Workers, inst string, slots int, fns ...string) (*WorkerConn, *frames) {
	t.Helper()
	tr := &frames{sent: make(chan *errandapi.WorkerFrame, 16)}
	c, err := w.Register(inst, &errandapi.WorkerFrame{Type: errandapi.FrameHello, Group: "app", Functions: fns, Slots: slots}, tr)
	if err != nil {
		t.Fatal(err)
	}
	c.Ready()
	return c, tr
}

func attempt(id string, deadline int64) *Request {
	return &Request{Task: &task.Task{InstanceID: "i1", ID: id, LeaseID: "lease-" + id, DeadlineAt: deadline, Payload: []byte(`1`)},
		Target: task.Target{Function: "app/f"}, Key: "whsec_k"}
}

// TestWorkersRouting: slots are counted per instance and function, a
// claim's Reserve takes them at once, attempts go to the connection with
// the most free slots, and a connection that leaves fails what it held.
func TestWorkersRouting(t *testing.T) {
	now := int64(1000)
	w := &Workers{Now: func() int64 { return now }}
	a, fa := connect(t, w, "i1", 2, "f")
	_, fb := connect(t, w, "i1", 1, "f", "g")
	connect(t, w, "i2", 5, "f")
	if got := w.Free("i1"); got["app/f"] != 3 || got["app/g"] != 1 {
		t.Fatalf("Free = %v", got)
	}
	r1 := attempt("t1", 5000)
	w.Reserve(r1.Task, "app/f") // the most free slots: a
	if got := w.Free("i1"); got["app/f"] != 2 {
		t.Fatalf("Free after a reserve = %v", got)
	}
	res := make(chan Result, 2)
	go func() { res <- w.Deliver(context.Background(), r1) }()
	f := <-fa.sent
	if f.Type != errandapi.FrameAttempt || f.LeaseID != "lease-t1" || f.Function != "f" || f.Token == "" {
		t.Fatalf("attempt frame %+v", f)
	}
	// One more: a and b have one free slot each; either is fair.
	r2 := attempt("t2", 5000)
	go func() { res <- w.Deliver(context.Background(), r2) }()
	var onB bool
	select {
	case <-fa.sent:
	case <-fb.sent:
		onB = true
	}
	// a answers t1: recorded, succeeded with the result.
	if ans := a.Answer(&errandapi.WorkerFrame{Type: errandapi.FrameDone, LeaseID: "lease-t1", Result: []byte(`{"ok":1}`)}); ans.Type != errandapi.FrameRecorded {
		t.Fatalf("answer: %+v", ans)
	}
	if r := <-res; r.Outcome.Status != task.AttemptSucceeded || string(r.Outcome.Result) != `{"ok":1}` || !r.OnTime {
		t.Fatalf("t1: %+v (an answer told recorded is on time)", r)
	}
	// The connection holding t2 leaves: t2 fails, to be retried.
	holder := a
	if onB {
		for _, c := range w.conns {
			if c != a && c.instanceID == "i1" {
				holder = c
			}
		}
	}
	holder.Close("gone")
	if r := <-res; r.Outcome.Status != task.AttemptFailed {
		t.Fatalf("t2 after its worker left: %+v", r)
	}
}

// TestWorkersLateAnswer: an answer after the deadline is refused with
// LEASE_LOST and the attempt is timed out, whichever comes first.
func TestWorkersLateAnswer(t *testing.T) {
	now := int64(1000)
	w := &Workers{Now: func() int64 { return now }}
	c, tr := connect(t, w, "i1", 1, "f")
	res := make(chan Result, 1)
	go func() { res <- w.Deliver(context.Background(), attempt("t1", 2000)) }()
	<-tr.sent
	now = 2000 // at the deadline is late, as the dispatcher reads it
	if ans := c.Answer(&errandapi.WorkerFrame{Type: errandapi.FrameDone, LeaseID: "lease-t1"}); ans.Type != errandapi.FrameRefused || ans.Refusal.Code != errandapi.CodeLeaseLost {
		t.Fatalf("late answer: %+v", ans)
	}
	if r := <-res; r.Outcome.Status != task.AttemptTimedOut {
		t.Fatalf("late attempt: %+v", r)
	}
	if got := w.Free("i1"); got["app/f"] != 1 {
		t.Fatalf("the slot is not free after the answer: %v", got)
	}
}

// TestWorkersAbandoned: a delivery whose context ends first (the
// dispatcher's cut, minutes past the deadline, or the node stopping) fails
// the attempt, but the worker keeps its slot until it answers, since its
// function may still be running: the answer is then refused with
// LEASE_LOST and frees the slot.
func TestWorkersAbandoned(t *testing.T) {
	w := &Workers{Now: func() int64 { return 1000 }}
	c, tr := connect(t, w, "i1", 1, "f")
	ctx, cancel := context.WithCancel(context.Background())
	res := make(chan Result, 1)
	go func() { res <- w.Deliver(ctx, attempt("t1", 5000)) }()
	<-tr.sent
	cancel()
	if r := <-res; r.Outcome.Status != task.AttemptFailed || r.Outcome.Error != "deadline exceeded: the worker did not answer" {
		t.Fatalf("abandoned attempt: %+v", r)
	}
	if got := w.Free("i1"); got["app/f"] != 0 {
		t.Fatalf("the slot is free before the worker answered: %v", got)
	}
	ans := c.Answer(&errandapi.WorkerFrame{Type: errandapi.FrameDone, LeaseID: "lease-t1"})
	if ans.Type != errandapi.FrameRefused || ans.Refusal.Code != errandapi.CodeLeaseLost {
		t.Fatalf("answer to an abandoned attempt: %+v", ans)
	}
	if got := w.Free("i1"); got["app/f"] != 1 {
		t.Fatalf("the slot is not free after the answer: %v", got)
	}
}

// TestWorkersDrain: a draining connection gets no new attempt (nor counts
// in what the node serves), one reserved for it before is still sent, and
// it is drained once the worker answers that one.
func TestWorkersDrain(t *testing.T) {
	w := &Workers{Now: func() int64 { return 1000 }}
	a, fa := connect(t, w, "i1", 2, "f")
	r1 := attempt("t1", 5000)
	w.Reserve(r1.Task, "app/f")
	if a.Drain() || a.Drained() {
		t.Fatal("a connection holding an attempt reported idle")
	}
	if got := w.Free("i1"); got["app/f"] != 0 {
		t.Fatalf("Free of a draining connection = %v", got)
	}
	if got := w.Served(); len(got["i1"]) != 0 {
		t.Fatalf("Served with a draining connection = %v", got)
	}
	res := make(chan Result, 2)
	go func() { res <- w.Deliver(context.Background(), r1) }() // reserved before: sent
	if f := <-fa.sent; f.Type != errandapi.FrameAttempt || f.LeaseID != "lease-t1" {
		t.Fatalf("attempt frame %+v", f)
	}
	if r := w.Deliver(context.Background(), attempt("t2", 5000)); r.Outcome.Status != task.AttemptReleased {
		t.Fatalf("t2 with only a draining worker: %+v", r)
	}
	a.Answer(&errandapi.WorkerFrame{Type: errandapi.FrameDone, LeaseID: "lease-t1"})
	if r := <-res; r.Outcome.Status != task.AttemptSucceeded || !a.Drained() {
		t.Fatalf("t1: %+v; drained %v", r, a.Drained())
	}
	b, _ := connect(t, w, "i1", 1, "f")
	if !b.Drain() {
		t.Fatal("an idle connection did not drain at once")
	}
}

// TestWorkersFailedErrorObject: a failed answer whose error is an object,
// not the protocol's string, records the object's code and message rather
// than "without a message".
func TestWorkersFailedErrorObject(t *testing.T) {
	for raw, want := range map[string]string{
		`{"type":"failed","leaseId":"l","error":"plain"}`:                               "plain",
		`{"type":"failed","leaseId":"l","error":{"code":"E_SMTP","message":"refused"}}`: "E_SMTP: refused",
		`{"type":"failed","leaseId":"l","error":{"message":"refused"}}`:                 "refused",
		`{"type":"failed","leaseId":"l","error":{}}`:                                    "the function failed without a message",
	} {
		var f errandapi.WorkerFrame
		if err := f.UnmarshalJSON([]byte(raw)); err != nil {
			t.Fatal(err)
		}
		if r, te := outcomeOf(&f); te != nil || r.Outcome.Status != task.AttemptFailed || r.Outcome.Error != want {
			t.Errorf("%s: %+v %v; want failed %q", raw, r.Outcome, te, want)
		}
	}
}

// TestServesFunctions: a node serves functions while an in-process handler
// is registered or a worker is connected, and a mux says what its
// function deliverer says (none: no function).
func TestServesFunctions(t *testing.T) {
	var fns Functions
	w := &Workers{}
	routes := &FunctionRoutes{InProcess: &fns, Workers: w}
	mux := &Mux{Function: routes}
	if fns.ServesFunctions() || w.ServesFunctions() || routes.ServesFunctions() || mux.ServesFunctions() || (&Mux{}).ServesFunctions() {
		t.Fatal("nothing registered, nothing connected, yet a function is served")
	}
	c, _ := connect(t, w, "i1", 1, "f")
	if !w.ServesFunctions() || !routes.ServesFunctions() || !mux.ServesFunctions() {
		t.Fatal("a connected worker serves no function")
	}
	c.Close("done")
	if w.ServesFunctions() || mux.ServesFunctions() {
		t.Fatal("a worker gone still serves")
	}
	if err := fns.Handle("app/g", func(context.Context, *task.Task) (json.RawMessage, error) { return nil, nil }); err != nil {
		t.Fatal(err)
	}
	if !fns.ServesFunctions() || !mux.ServesFunctions() {
		t.Fatal("an in-process handler serves no function")
	}
}
