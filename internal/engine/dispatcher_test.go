package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/errandhq/errand/internal/deliver"
	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// receiver is a real webhook target on loopback.
type receiver struct {
	*httptest.Server
	got    chan http.Header
	bodies chan []byte
	answer atomic.Value // func(w http.ResponseWriter)
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{got: make(chan http.Header, 100), bodies: make(chan []byte, 100)}
	r.answer.Store(func(w http.ResponseWriter) { w.WriteHeader(200) })
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.answer.Load().(func(http.ResponseWriter))(w)
		r.got <- req.Header.Clone()
		r.bodies <- body
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) next(t *testing.T) (http.Header, []byte) {
	t.Helper()
	select {
	case h := <-r.got:
		return h, <-r.bodies
	case <-time.After(10 * time.Second):
		t.Fatal("no delivery")
	}
	return nil, nil
}

func TestPushDeliversSignedAndSucceeds(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rcv := newReceiver(t)
	b.queue("emails", &task.QueuePatch{Target: targetPtr(rcv.URL + "/hook")})
	id := b.add("emails", task.AddInput{Name: "receipt-o-1041", Payload: json.RawMessage(`{"orderId":"o-1041"}`)})
	h, body := rcv.next(t)
	inst, _ := b.eng.Instance(b.ctx, "dev", "jobs")
	if err := deliver.Verify(inst.WebhookKey, h, body, b.clock.Now(), time.Minute); err != nil {
		t.Fatalf("signature does not verify: %v", err)
	}
	var got struct {
		Task    map[string]any  `json:"task"`
		Payload json.RawMessage `json:"payload"`
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	if got.Task["id"] != id || got.Task["attempt"] != 1.0 || got.Task["name"] != "receipt-o-1041" || string(got.Payload) != `{"orderId":"o-1041"}` {
		t.Fatalf("body %s", body)
	}
	tk := b.waitState(id, task.Succeeded)
	if len(tk.Attempts) != 1 || tk.Attempts[0].Status != task.AttemptSucceeded || tk.Attempts[0].HTTPStatus != 200 {
		t.Fatalf("%+v", tk.Attempts)
	}
}

func TestPushRetriesWithBackoffThenDeadLetters(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rcv := newReceiver(t)
	rcv.answer.Store(func(w http.ResponseWriter) { w.WriteHeader(500); _, _ = w.Write([]byte("down")) })
	b.queue("dead", &task.QueuePatch{Mode: ptr(task.ModePull)})
	b.queue("emails", &task.QueuePatch{Target: targetPtr(rcv.URL), MaxAttempts: ptr(3), DeadLetterQueue: ptr(ptr("dead"))})
	id := b.add("emails", task.AddInput{Payload: json.RawMessage(`{"x":1}`), Params: json.RawMessage(`{"p":1}`)})
	rcv.next(t)
	tk := b.waitState(id, task.RetryWait)
	if tk.Attempt != 1 || tk.RunAt != T0.UnixMilli()+10_000 || tk.LastError != "HTTP 500: down" {
		t.Fatalf("after attempt 1: %+v", tk)
	}
	// Nothing happens before the backoff runs out: the dispatcher looks
	// again at 9 s, claims nothing and sleeps until 10 s.
	b.clock.Advance(9 * time.Second)
	if wakeAt := b.sig.Settle(t); !wakeAt.Equal(T0.Add(10 * time.Second)) {
		t.Fatalf("the dispatcher sleeps until %v, want the end of the backoff", wakeAt.Sub(T0))
	}
	if tk := b.waitState(id, task.RetryWait); tk.Attempt != 1 || len(rcv.got) != 0 {
		t.Fatalf("delivered before its backoff: %+v", tk)
	}
	b.clock.Advance(time.Second)
	rcv.next(t)
	tk = b.waitState(id, task.RetryWait)
	if tk.Attempt != 2 || tk.RunAt != T0.UnixMilli()+30_000 {
		t.Fatalf("after attempt 2: %+v", tk)
	}
	b.clock.Advance(20 * time.Second)
	rcv.next(t)
	tk = b.waitState(id, task.Failed)
	if len(tk.Attempts) != 3 {
		t.Fatalf("%+v", tk.Attempts)
	}
	q, _ := b.eng.Store().QueueGet(b.ctx, store.QueueRef{InstanceID: tk.InstanceID, Name: "dead"})
	ts, _ := b.eng.Store().TaskClaim(b.ctx, claimAll(q, b.clock.Now().UnixMilli()))
	if len(ts) != 1 || ts[0].DeadLetterOf != id || ts[0].Source != task.SourceDeadLetter || string(ts[0].Payload) != `{"x":1}` || string(ts[0].Params) != `{"p":1}` || ts[0].Name != "" {
		t.Fatalf("dead letter: %+v", ts)
	}
}

func TestPushDeferDoesNotUseAnAttempt(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rcv := newReceiver(t)
	rcv.answer.Store(func(w http.ResponseWriter) {
		w.Header().Set("x-task-retry", "defer")
		w.Header().Set("retry-after", "60")
		w.WriteHeader(503)
	})
	b.queue("q", &task.QueuePatch{Target: targetPtr(rcv.URL), MaxAttempts: ptr(1)})
	id := b.add("q", task.AddInput{})
	rcv.next(t)
	tk := b.waitState(id, task.RetryWait)
	if tk.Attempt != 0 || tk.RunAt != T0.UnixMilli()+60_000 || tk.Attempts[0].Status != task.AttemptDeferred {
		t.Fatalf("%+v", tk)
	}
	// targetControl off: the same answer is a failed attempt, and with one attempt the task fails.
	if _, err := b.eng.QueuePatch(b.ctx, engine.QueueRef{Org: "dev", Instance: "jobs", Queue: "q"}, &task.QueuePatch{TargetControl: ptr(false)}); err != nil {
		t.Fatal(err)
	}
	b.clock.Advance(time.Minute)
	rcv.next(t)
	tk = b.waitState(id, task.Failed)
	if tk.Attempts[1].Status != task.AttemptFailed || tk.Attempts[1].HTTPStatus != 503 {
		t.Fatalf("%+v", tk.Attempts)
	}
	// The metrics count the task failed for good, once, as push.
	if n := counterValue(t, b.eng.Metrics().TasksFailed.WithLabelValues("push")); n != 1 {
		t.Fatalf("errand_tasks_failed_total{kind=push} = %v, want 1", n)
	}
}

// counterValue reads a counter's value.
func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

func TestPushKeepsMaxConcurrent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	g := newGate(t)
	b.queue("q", &task.QueuePatch{Target: targetPtr(g.URL), MaxConcurrent: ptr(ptr(3))})
	var ids []string
	for range 12 {
		ids = append(ids, b.add("q", task.AddInput{}))
	}
	// Each time, wait for the full wave (3, or what is left) to be in the
	// target, then let one answer.
	for done := 0; done < 12; done++ {
		want := min(3, 12-done)
		g.waitFor(t, fmt.Sprintf("%d in flight", want), func() bool { n, _, _ := g.counts(); return n == want })
		g.release <- http.StatusOK
	}
	for _, id := range ids {
		b.waitState(id, task.Succeeded)
	}
	if _, peak, _ := g.counts(); peak != 3 {
		t.Fatalf("peak concurrency %d, want exactly 3", peak)
	}
}

// TestRotatedKeySignsTheNextDelivery: a rotated webhook key applies to the
// next delivery; the old key no longer verifies it.
func TestRotatedKeySignsTheNextDelivery(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rcv := newReceiver(t)
	b.queue("q", &task.QueuePatch{Target: targetPtr(rcv.URL)})
	old, _ := b.eng.Instance(b.ctx, "dev", "jobs")
	rotated, err := b.eng.WebhookKeyRotate(b.ctx, "dev", "jobs")
	if err != nil || rotated.WebhookKey == old.WebhookKey {
		t.Fatalf("rotate: %v", err)
	}
	b.add("q", task.AddInput{})
	h, body := rcv.next(t)
	if err := deliver.Verify(rotated.WebhookKey, h, body, b.clock.Now(), time.Minute); err != nil {
		t.Fatalf("the new key does not verify the next delivery: %v", err)
	}
	if err := deliver.Verify(old.WebhookKey, h, body, b.clock.Now(), time.Minute); err == nil {
		t.Fatal("the old key still verifies after rotation")
	}
}

// TestPushFinishWakesTheChainer: a push task that succeeds wakes the
// chainer at once (the dispatcher's outcome writers tell it, as the finish
// batcher does for pull acks), so its task rule adds the chained task
// without waiting for the chainer's poll — the fake clock never moves here.
func TestPushFinishWakesTheChainer(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rcv := newReceiver(t)
	b.queue("emails", &task.QueuePatch{Target: targetPtr(rcv.URL + "/hook")})
	b.queue("after", &task.QueuePatch{Mode: new(task.ModePull)})
	if _, err := b.eng.TriggerCreate(b.ctx, "dev", "jobs", &task.TriggerPatch{Queue: new("jobs/after"), Task: &task.TaskOnPatch{Queue: new("jobs/emails")}}); err != nil {
		t.Fatal(err)
	}
	id := b.add("emails", task.AddInput{Payload: json.RawMessage(`{"n":1}`)})
	rcv.next(t)
	b.waitState(id, task.Succeeded)
	// A long-poll lease on "after" is woken by the chained add; the fake
	// clock never moves, so only the wake can end it before ctx does.
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	got, err := b.eng.Lease(ctx, engine.QueueRef{Org: "dev", Instance: "jobs", Queue: "after"}, engine.LeaseParams{Count: 1, LeaseSeconds: 60, WaitSeconds: engine.MaxWaitSeconds})
	if err != nil || len(got) != 1 || got[0].Depth != 1 || got[0].Source != task.SourceTask {
		t.Fatalf("no chained task after the push task succeeded: %+v %v", got, err)
	}
}
