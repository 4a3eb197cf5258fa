package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/errandhq/errand/client"
	"github.com/errandhq/errand/errandapi"
)

// rawWorker is a worker connection driven frame by frame.
type rawWorker struct {
	t    *testing.T
	conn *websocket.Conn
}

func dialWorker(t *testing.T, url string) *rawWorker {
	t.Helper()
	conn, _, err := websocket.Dial(context.Background(), "ws"+strings.TrimPrefix(url, "http")+"/v1/workers/jobs", nil)
	if err != nil {
		t.Fatal(err)
	}
	conn.SetReadLimit(1 << 20)
	t.Cleanup(func() { conn.CloseNow() })
	return &rawWorker{t: t, conn: conn}
}

func (w *rawWorker) send(v any) {
	w.t.Helper()
	b, ok := v.([]byte)
	if !ok {
		var err error
		if b, err = json.Marshal(v); err != nil {
			w.t.Fatal(err)
		}
	}
	if err := w.conn.Write(context.Background(), websocket.MessageText, b); err != nil {
		w.t.Fatal(err)
	}
}

// read returns the next frame that is not a ping, or the close error.
func (w *rawWorker) read() (*errandapi.WorkerFrame, error) {
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, b, err := w.conn.Read(ctx)
		cancel()
		if err != nil {
			return nil, err
		}
		var f errandapi.WorkerFrame
		if err := json.Unmarshal(b, &f); err != nil {
			w.t.Fatalf("frame %s: %v", b, err)
		}
		if f.Type != errandapi.FramePing {
			return &f, nil
		}
	}
}

func (w *rawWorker) want(typ string) *errandapi.WorkerFrame {
	w.t.Helper()
	f, err := w.read()
	if err != nil {
		w.t.Fatalf("want %s: %v", typ, err)
	}
	if f.Type != typ {
		w.t.Fatalf("got %+v, want %s", f, typ)
	}
	return f
}

// closed returns the v1 error the node closed the connection with.
func (w *rawWorker) closed() errandapi.ErrorDetail {
	w.t.Helper()
	_, err := w.read()
	var ce websocket.CloseError
	if !errors.As(err, &ce) {
		w.t.Fatalf("want a close with a reason, got %v", err)
	}
	var d errandapi.ErrorDetail
	if json.Unmarshal([]byte(ce.Reason), &d) != nil || d.Code == "" {
		w.t.Fatalf("close reason %q is not a v1 error", ce.Reason)
	}
	return d
}

// workerDev starts errand dev with the function queue "work" of jobs,
// whose outcomes o watches; it returns the node's URL and a client.
func workerDev(t *testing.T) (string, *client.Client, *outcomes) {
	t.Helper()
	_, url, _ := startMode(t, buildErrand(t), "dev", "--data", t.TempDir())
	c, err := client.New(url, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	functionQueue(t, c, "work", 0)
	return url, c, watchOutcomes(t, c, "work")
}

// welcomed dials a worker connection, says h and returns the connection
// with the node's welcome.
func welcomed(t *testing.T, url string, h errandapi.WorkerFrame) (*rawWorker, *errandapi.WorkerFrame) {
	t.Helper()
	w := dialWorker(t, url)
	w.send(h)
	return w, w.want(errandapi.FrameWelcome)
}

func hello(fns ...string) errandapi.WorkerFrame {
	return errandapi.WorkerFrame{Type: errandapi.FrameHello, Group: "app", Functions: fns, Slots: 1}
}

// TestWorkerBadInput: each kind of bad input from a worker gets a clear
// error (a refused frame, or the connection closed with a v1 error as the
// reason) and loses nothing: the attempt is retried and then succeeds.
func TestWorkerBadInput(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	ctx := context.Background()
	_, url, logs := startMode(t, buildErrand(t), "dev", "--data", t.TempDir())
	c, err := client.New(url, client.Options{})
	if err != nil {
		t.Fatal(err)
	}

	// Hellos the node refuses, each closing with the field named.
	for _, c := range []struct {
		hello any // a frame, or its bytes
		field string
	}{
		{hello("work", "Bad Name!"), "functions[1]"},
		{[]byte(`{"type":"hello","group":"app","functions":["x"],"slots":1.5}`), "slots: must be an integer, not 1.5"},
		{[]byte(`{"type":"hello","group":"app","functions":"x","slots":1}`), "functions: must be an array, not string"},
		{[]byte(`{"type":"hello","group":"app","functions":["x"],"slots":1e400}`), "slots: must be an integer, not 1e400"},
		{errandapi.WorkerFrame{Type: errandapi.FrameHello, Group: "a/b", Functions: []string{"x"}, Slots: 1}, "group"},
		{errandapi.WorkerFrame{Type: errandapi.FrameHello, Group: "app", Functions: []string{"x"}, Slots: 0}, "slots"},
		{errandapi.WorkerFrame{Type: errandapi.FrameDone, LeaseID: "x"}, "type"},
	} {
		w := dialWorker(t, url)
		w.send(c.hello)
		if d := w.closed(); d.Code != errandapi.CodeInvalidArgument || !strings.Contains(d.Message, c.field) {
			t.Fatalf("hello %s closed with %+v; want INVALID_ARGUMENT naming %s", c.hello, d, c.field)
		}
	}
	// A function target not of the form group/name is refused at once.
	_, err = c.CreateQueue(ctx, "jobs", "bad", errandapi.QueueRequest{Target: errandapi.Value(errandapi.Target{Function: "nogroup"})})
	var e *client.Error
	if !errors.As(err, &e) || e.Code != errandapi.CodeInvalidArgument || !strings.Contains(e.Message, "target.function") {
		t.Fatalf("queue with target function nogroup: %v", err)
	}

	functionQueue(t, c, "work", 0)
	o := watchOutcomes(t, c, "work")
	res, err := c.AddTask(ctx, "jobs", "work", errandapi.NewTask{Payload: json.RawMessage(`{}`), DeadlineSeconds: new(2)})
	if err != nil {
		t.Fatal(err)
	}
	// dev logs a function no worker serves once, however many tasks wait.
	if _, err := c.AddTask(ctx, "jobs", "work", errandapi.NewTask{Delay: new(3600.0)}); err != nil {
		t.Fatal(err)
	}
	w := dialWorker(t, url)
	w.send(hello("work"))
	w.want(errandapi.FrameWelcome)
	// The log is a pipe, in order: once the connection's line is in, the
	// adds' lines before it are too.
	logs.waitFor(t, "worker connected", 10*time.Second)
	if n := strings.Count(logs.String(), "no worker serves app/work"); n != 1 {
		t.Fatalf("dev logged the unserved function %d times; want once:\n%s", n, logs)
	}
	a := w.want(errandapi.FrameAttempt)
	if a.Function != "work" || a.Token == "" || !strings.Contains(string(a.Body), res.ID) {
		t.Fatalf("attempt frame %+v", a)
	}
	// An answer for an attempt this connection does not hold: refused,
	// the connection and the real attempt go on.
	w.send(errandapi.WorkerFrame{Type: errandapi.FrameDone, LeaseID: "not-mine"})
	if f := w.want(errandapi.FrameRefused); f.Refusal == nil || f.Refusal.Code != errandapi.CodeLeaseLost {
		t.Fatalf("answer for another lease: %+v", f)
	}
	// A result over 64 KiB: refused, and the attempt fails (retried).
	big := `{"x":"` + strings.Repeat("a", 70<<10) + `"}`
	w.send(errandapi.WorkerFrame{Type: errandapi.FrameDone, LeaseID: a.LeaseID, Result: json.RawMessage(big)})
	if f := w.want(errandapi.FrameRefused); f.Refusal == nil || f.Refusal.Code != errandapi.CodePayloadTooLarge {
		t.Fatalf("a 70 KiB result: %+v", f)
	}
	// The retry comes; a malformed frame closes the connection with the
	// reason, and the attempt it held fails (retried).
	a2 := w.want(errandapi.FrameAttempt)
	w.send([]byte(`not json`))
	if d := w.closed(); d.Code != errandapi.CodeInvalidArgument {
		t.Fatalf("malformed frame closed with %+v", d)
	}
	// A new connection gets attempt 3; answered past its deadline it is
	// refused (recorded as timed out), and attempt 4 then succeeds.
	w = dialWorker(t, url)
	w.send(hello("work"))
	w.want(errandapi.FrameWelcome)
	a3 := w.want(errandapi.FrameAttempt)
	if a3.LeaseID == a2.LeaseID || a2.LeaseID == a.LeaseID {
		t.Fatal("a retried attempt reused its lease id")
	}
	for time.Now().UnixMilli() <= a3.DeadlineAt { // the event is the attempt's own deadline
		time.Sleep(time.Until(time.UnixMilli(a3.DeadlineAt + 1)))
	}
	w.send(errandapi.WorkerFrame{Type: errandapi.FrameDone, LeaseID: a3.LeaseID})
	if f := w.want(errandapi.FrameRefused); f.Refusal == nil || f.Refusal.Code != errandapi.CodeLeaseLost {
		t.Fatalf("a late answer: %+v", f)
	}
	a4 := w.want(errandapi.FrameAttempt)
	w.send(errandapi.WorkerFrame{Type: errandapi.FrameDone, LeaseID: a4.LeaseID, Result: json.RawMessage(`{"ok":true}`)})
	w.want(errandapi.FrameRecorded)
	tk := waitTasks(t, o, c, []string{res.ID}, 30*time.Second)[res.ID]
	var got []string
	for _, at := range tk.Attempts {
		got = append(got, at.Status+": "+derefStr(at.Error))
	}
	want := []string{"failed: the worker's result was refused", "failed: the worker disconnected", "timed_out: deadline", "succeeded: "}
	if len(got) != len(want) {
		t.Fatalf("attempts %q; want %q", got, want)
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Fatalf("attempt %d: %q; want %q…", i+1, got[i], want[i])
		}
	}
	if string(tk.Result) != `{"ok":true}` {
		t.Fatalf("result %s", tk.Result)
	}

	// Draining: the welcome says the node takes it; a worker holding an
	// attempt is closed (1000) once it has answered it, one holding none
	// at once. The connection that answered attempt 4 drains first, so
	// that the next attempt can only go to the next connection (it was
	// left open, and took that attempt once in a loaded CI run: the new
	// connection then waited for it until the node closed it as silent).
	w.send(errandapi.WorkerFrame{Type: errandapi.FrameDraining})
	if _, err := w.read(); websocket.CloseStatus(err) != websocket.StatusNormalClosure {
		t.Fatalf("the idle worker of attempt 4 draining: %v, want a normal close at once", err)
	}
	if _, err = c.AddTask(ctx, "jobs", "work", errandapi.NewTask{}); err != nil {
		t.Fatal(err)
	}
	w = dialWorker(t, url)
	w.send(hello("work"))
	if f := w.want(errandapi.FrameWelcome); !f.Drains {
		t.Fatalf("welcome %+v does not say the node drains", f)
	}
	a5 := w.want(errandapi.FrameAttempt)
	w.send(errandapi.WorkerFrame{Type: errandapi.FrameDraining})
	w.send(errandapi.WorkerFrame{Type: errandapi.FrameDone, LeaseID: a5.LeaseID})
	w.want(errandapi.FrameRecorded)
	if _, err := w.read(); websocket.CloseStatus(err) != websocket.StatusNormalClosure {
		t.Fatalf("a drained worker: %v, want a normal close", err)
	}
	w = dialWorker(t, url)
	w.send(hello("work"))
	w.want(errandapi.FrameWelcome)
	w.send(errandapi.WorkerFrame{Type: errandapi.FrameDraining})
	if _, err := w.read(); websocket.CloseStatus(err) != websocket.StatusNormalClosure {
		t.Fatalf("an idle worker draining: %v, want a normal close at once", err)
	}

	// Answers the node refuses: a defer out of range is refused naming
	// seconds, and the attempt fails (retried); an answer without a
	// leaseId, and a frame of a type a worker does not send, close the
	// connection naming the field, failing what it held.
	res, err = c.AddTask(ctx, "jobs", "work", errandapi.NewTask{})
	if err != nil {
		t.Fatal(err)
	}
	w = dialWorker(t, url)
	w.send(hello("work"))
	w.want(errandapi.FrameWelcome)
	a6 := w.want(errandapi.FrameAttempt)
	w.send([]byte(`{"type":"defer","leaseId":"` + a6.LeaseID + `","seconds":-1}`))
	if f := w.want(errandapi.FrameRefused); f.Refusal == nil || f.Refusal.Code != errandapi.CodeInvalidArgument || !strings.HasPrefix(f.Refusal.Message, "seconds: ") {
		t.Fatalf("a defer of -1 s: %+v", f)
	}
	w.want(errandapi.FrameAttempt)
	w.send(errandapi.WorkerFrame{Type: errandapi.FrameDone})
	if d := w.closed(); d.Code != errandapi.CodeInvalidArgument || !strings.HasPrefix(d.Message, "leaseId: ") {
		t.Fatalf("an answer without a leaseId closed with %+v", d)
	}
	w = dialWorker(t, url)
	w.send(hello("work"))
	w.want(errandapi.FrameWelcome)
	w.want(errandapi.FrameAttempt)
	w.send(hello("work"))
	if d := w.closed(); d.Code != errandapi.CodeInvalidArgument || !strings.HasPrefix(d.Message, "type: ") {
		t.Fatalf("a second hello closed with %+v", d)
	}
	w = dialWorker(t, url)
	w.send(hello("work"))
	w.want(errandapi.FrameWelcome)
	a9 := w.want(errandapi.FrameAttempt)
	w.send(errandapi.WorkerFrame{Type: errandapi.FrameDone, LeaseID: a9.LeaseID})
	w.want(errandapi.FrameRecorded)
	tk = waitTasks(t, o, c, []string{res.ID}, 30*time.Second)[res.ID]
	got = got[:0]
	for _, at := range tk.Attempts {
		got = append(got, at.Status+": "+derefStr(at.Error))
	}
	want = []string{"failed: the worker's defer was refused: seconds: ", "failed: the worker disconnected", "failed: the worker disconnected", "succeeded: "}
	if len(got) != len(want) {
		t.Fatalf("attempts %q; want %q", got, want)
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Fatalf("attempt %d: %q; want %q…", i+1, got[i], want[i])
		}
	}
}

// TestWorkerOversizedAnswer: an answer frame past 256 KiB (a non-SDK
// worker returning a result far past 64 KiB) is refused with
// PAYLOAD_TOO_LARGE and fails only its own attempt: the connection and
// the other attempt it holds go on, and the retry comes on the same
// connection. A hello that large closes the connection naming the
// reason, and a frame past 4 MiB closes it with 1009.
func TestWorkerOversizedAnswer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	ctx := context.Background()
	url, c, o := workerDev(t)
	var ids []string
	for range 2 {
		res, err := c.AddTask(ctx, "jobs", "work", errandapi.NewTask{Payload: json.RawMessage(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.ID)
	}
	w := dialWorker(t, url)
	h := hello("work")
	h.Slots = 2
	w.send(h)
	w.want(errandapi.FrameWelcome)
	a, b := w.want(errandapi.FrameAttempt), w.want(errandapi.FrameAttempt)
	taskOf := func(f *errandapi.WorkerFrame) string {
		for _, id := range ids {
			if strings.Contains(string(f.Body), id) {
				return id
			}
		}
		t.Fatalf("attempt %s of no task added", f.Body)
		return ""
	}
	aID, bID := taskOf(a), taskOf(b)
	// 300 KiB of result, the lease named after it.
	big := `{"type":"done","result":{"x":"` + strings.Repeat("a", 300<<10) + `"},"leaseId":"` + a.LeaseID + `"}`
	w.send([]byte(big))
	f := w.want(errandapi.FrameRefused)
	if f.LeaseID != a.LeaseID || f.Refusal == nil || f.Refusal.Code != errandapi.CodePayloadTooLarge ||
		!strings.Contains(f.Refusal.Message, fmt.Sprintf(`the "done" frame is %d bytes`, len(big))) {
		t.Fatalf("a 300 KiB answer: %+v %+v", f, f.Refusal)
	}
	w.send(errandapi.WorkerFrame{Type: errandapi.FrameDone, LeaseID: b.LeaseID, Result: json.RawMessage(`{"b":1}`)})
	w.want(errandapi.FrameRecorded)
	retry := w.want(errandapi.FrameAttempt) // on the same connection
	if retry.LeaseID == a.LeaseID || taskOf(retry) != aID {
		t.Fatalf("the retry %+v", retry)
	}
	w.send(errandapi.WorkerFrame{Type: errandapi.FrameDone, LeaseID: retry.LeaseID, Result: json.RawMessage(`{"a":1}`)})
	w.want(errandapi.FrameRecorded)
	tasks := waitTasks(t, o, c, ids, 30*time.Second)
	ta := tasks[aID]
	if ta == nil || len(ta.Attempts) != 2 || ta.Attempts[0].Status != "failed" ||
		!strings.HasPrefix(derefStr(ta.Attempts[0].Error), `the worker's answer was refused: the "done" frame is`) || string(ta.Result) != `{"a":1}` {
		t.Fatalf("the task of the oversized answer: %+v", ta)
	}
	if tb := tasks[bID]; tb == nil || len(tb.Attempts) != 1 {
		t.Fatalf("the other task: %+v", tb)
	}
	// This worker leaves, so that the attempts below go to the next ones.
	w.send(errandapi.WorkerFrame{Type: errandapi.FrameDraining})
	if _, err := w.read(); websocket.CloseStatus(err) != websocket.StatusNormalClosure {
		t.Fatalf("the worker draining: %v, want a normal close", err)
	}

	// A hello that large closes the connection, naming the reason.
	w = dialWorker(t, url)
	w.send([]byte(`{"type":"hello","group":"app","functions":["work"],"slots":1,"sdk":"` + strings.Repeat("s", 300<<10) + `"}`))
	_, err := w.read()
	var ce websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.StatusMessageTooBig || !strings.Contains(ce.Reason, `"code":"PAYLOAD_TOO_LARGE"`) {
		t.Fatalf("a 300 KiB hello: %v, want a close with 1009 and PAYLOAD_TOO_LARGE", err)
	}
	// Past 4 MiB: closed with 1009, the attempt held failed saying why.
	res, err := c.AddTask(ctx, "jobs", "work", errandapi.NewTask{Payload: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	ids = []string{res.ID}
	w = dialWorker(t, url)
	w.send(hello("work"))
	w.want(errandapi.FrameWelcome)
	a = w.want(errandapi.FrameAttempt)
	// The node stops reading at 4 MiB, sends its close (1009) and closes
	// the connection with the frame's rest unread: the write is reset, and
	// the close frame may be lost with it.
	_ = w.conn.Write(ctx, websocket.MessageText, []byte(`{"type":"done","leaseId":"`+a.LeaseID+`","result":"`+strings.Repeat("a", 5<<20)+`"}`))
	if _, err := w.read(); err == nil || (websocket.CloseStatus(err) != websocket.StatusMessageTooBig && websocket.CloseStatus(err) != -1) {
		t.Fatalf("a 5 MiB frame: %v, want the connection closed (1009)", err)
	}
	w = dialWorker(t, url)
	w.send(hello("work"))
	w.want(errandapi.FrameWelcome)
	retry = w.want(errandapi.FrameAttempt)
	w.send(errandapi.WorkerFrame{Type: errandapi.FrameDone, LeaseID: retry.LeaseID})
	w.want(errandapi.FrameRecorded)
	tk := waitTasks(t, o, c, ids, 30*time.Second)[res.ID]
	if len(tk.Attempts) != 2 || !strings.Contains(derefStr(tk.Attempts[0].Error), "the worker sent a frame past 4 MiB: the node closed the connection (1009)") {
		t.Fatalf("the attempt of the 5 MiB frame: %+v", tk.Attempts)
	}
}

// TestWorkerLeavesBeforeClose: a connection the node closes for a
// malformed frame leaves the node's workers before the close handshake,
// not after it: the attempt it held fails at once and goes to another
// worker while the closed one has not yet answered the node's close (the
// handshake then ends cleanly when it does). Had the connection stayed
// registered through its handshake, the attempt would have waited for the
// handshake to time out (5 s), and the node's log would say so.
func TestWorkerLeavesBeforeClose(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	ctx := context.Background()
	_, url, logs := startMode(t, buildErrand(t), "dev", "--data", t.TempDir(), "--log-level", "debug")
	c, err := client.New(url, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	functionQueue(t, c, "work", 0)
	o := watchOutcomes(t, c, "work")
	res, err := c.AddTask(ctx, "jobs", "work", errandapi.NewTask{})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := welcomed(t, url, hello("work"))
	a.want(errandapi.FrameAttempt)
	a.send([]byte(`{"type":"bogus"}`)) // and reads nothing more for now

	b, _ := welcomed(t, url, hello("work"))
	at := b.want(errandapi.FrameAttempt)
	b.send(errandapi.WorkerFrame{Type: errandapi.FrameDone, LeaseID: at.LeaseID})
	b.want(errandapi.FrameRecorded)
	tk := waitTasks(t, o, c, []string{res.ID}, 30*time.Second)[res.ID]
	if tk.State != errandapi.StateSucceeded || len(tk.Attempts) != 2 || tk.Attempts[0].Error == nil ||
		!strings.Contains(*tk.Attempts[0].Error, "malformed frame") {
		t.Fatalf("the task after its first worker's malformed frame: %+v", tk)
	}

	// Only now does the first worker read the node's close, and answer it.
	if d := a.closed(); d.Code != errandapi.CodeInvalidArgument || !strings.HasPrefix(d.Message, "type: ") {
		t.Fatalf("a frame of an unknown type closed with %+v", d)
	}
	out := logs.waitFor(t, `msg="worker connection closed by the node"`, 20*time.Second)
	line := out[strings.Index(out, `msg="worker connection closed by the node"`):]
	if line = line[:strings.IndexByte(line, '\n')+1]; !strings.Contains(line, "handshake=ok") {
		t.Fatalf("the close handshake did not end cleanly: %s", line)
	}
}
