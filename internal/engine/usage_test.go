package engine_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// usageOf reads the instance jobs's usage through the engine.
func usageOf(t *testing.T, n *node) *errandapi.Usage {
	t.Helper()
	u, err := n.eng.InstanceUsage(n.ctx, "dev", "jobs")
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func (n *node) addPayload(queue string, count int) {
	n.t.Helper()
	ins := make([]task.AddInput, count)
	for i := range ins {
		ins[i] = task.AddInput{Payload: json.RawMessage(`{"a":1}`)} // 7 bytes
	}
	if _, err := n.eng.TaskAdd(n.ctx, engine.QueueRef{Org: "dev", Instance: "jobs", Queue: queue}, ins); err != nil {
		n.t.Fatal(err)
	}
}

func (n *node) lease(queue string, count int) []*task.Task {
	n.t.Helper()
	ts, err := n.eng.Lease(n.ctx, engine.QueueRef{Org: "dev", Instance: "jobs", Queue: queue}, engine.LeaseParams{Count: count, LeaseSeconds: 60})
	if err != nil {
		n.t.Fatal(err)
	}
	return ts
}

// TestUsageDayAndMonthBoundaries: counts land on the UTC day of the
// injected clock; the report covers the current month only, from the 1st
// to today; unflushed counts of this node are included; a sample taken
// before midnight is the previous day's bytes kept.
func TestUsageDayAndMonthBoundaries(t *testing.T) {
	t.Parallel()
	n := sqliteNode(t, time.Date(2026, 11, 30, 23, 0, 0, 0, time.UTC))
	n.pullQueue("work")
	n.addPayload("work", 2)
	n.lease("work", 1)
	if err := n.eng.Usage().Sample(n.ctx); err != nil {
		t.Fatal(err)
	}
	u := usageOf(t, n) // nothing flushed yet: this node's counts still show
	if u.Month != "2026-11" || len(u.Days) != 30 || u.TasksAdded != 2 || u.Deliveries.Pull != 1 || u.Deliveries.Total != 1 || u.BytesKept != 14 {
		t.Fatalf("November: %+v", u)
	}
	if d := u.Days[29]; d.Date != "2026-11-30" || d.TasksAdded != 2 || d.BytesKept != 14 || u.Days[28].BytesKept != 0 {
		t.Fatalf("Nov 30: %+v; Nov 29: %+v", d, u.Days[28])
	}
	if err := n.eng.Usage().Flush(n.ctx); err != nil {
		t.Fatal(err)
	}
	if again := usageOf(t, n); again.TasksAdded != 2 || again.Deliveries.Pull != 1 {
		t.Fatalf("after the flush: %+v", again) // flushed counts are not counted twice
	}

	n.clock.Advance(90 * time.Minute) // Dec 1, 00:30 UTC
	n.addPayload("work", 1)
	u = usageOf(t, n)
	if u.Month != "2026-12" || len(u.Days) != 1 || u.TasksAdded != 1 || u.Deliveries.Total != 0 {
		t.Fatalf("December: %+v", u)
	}
	if u.BytesKept != 21 || u.AverageBytesKept != 21 || u.Days[0].Date != "2026-12-01" {
		t.Fatalf("December bytes: %+v", u)
	}
	// The November row is still in the store, unchanged.
	inst, _ := n.eng.Instance(n.ctx, "dev", "jobs")
	nov30 := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC).UnixMilli()
	rows, err := n.eng.Store().UsageList(n.ctx, &store.UsageListParams{InstanceID: inst.ID, From: nov30, To: nov30 + 1})
	if err != nil || len(rows) != 1 || rows[0].Added != 2 || rows[0].Pull != 1 || rows[0].BytesKept != 14 {
		t.Fatalf("Nov 30 row %+v, %v", rows, err)
	}
}

// TestUsageFlushedEveryIntervalAndAtStop: a started engine adds its counts
// to the store when its flush interval passes on the injected clock, and
// what was counted after the last flush at Stop.
func TestUsageFlushedEveryIntervalAndAtStop(t *testing.T) {
	t.Parallel()
	n := sqliteNode(t, T0)
	n.pullQueue("work")
	sig := engine.WithSignals(n.eng)
	if err := n.eng.Start(n.ctx); err != nil {
		t.Fatal(err)
	}
	stored := func() int64 {
		t.Helper()
		inst, _ := n.eng.Instance(n.ctx, "dev", "jobs")
		rows, err := n.eng.Store().UsageList(n.ctx, &store.UsageListParams{InstanceID: inst.ID, From: 0, To: T0.UnixMilli() + 86_400_000})
		if err != nil {
			t.Fatal(err)
		}
		var added int64
		for _, r := range rows {
			added += r.Added
		}
		return added
	}
	n.addPayload("work", 3)
	if got := stored(); got != 0 {
		t.Fatalf("stored before any flush: %d", got)
	}
	// The usage service sleeps until T0+2s (the flush interval).
	sig.UsageAsleepUntil(t, T0.Add(engine.UsageFlushEvery))
	n.clock.Advance(engine.UsageFlushEvery)
	sig.UsageFlushes(t, 1)
	if got := stored(); got != 3 {
		t.Fatalf("stored after the interval: %d; want 3", got)
	}
	n.addPayload("work", 2)
	n.eng.Stop()
	if got := stored(); got != 5 {
		t.Fatalf("stored after Stop: %d; want 5", got)
	}
}

// TestUsageCountsWebhookDeliveries: every attempt to a webhook counts,
// failed ones too.
func TestUsageCountsWebhookDeliveries(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rcv := newReceiver(t)
	b.queue("emails", &task.QueuePatch{Target: targetPtr(rcv.URL + "/hook"), MaxAttempts: ptr(2), MinBackoffSeconds: ptr(1.0)})
	rcv.answer.Store(func(w http.ResponseWriter) { w.WriteHeader(500) })
	id := b.add("emails", task.AddInput{})
	rcv.next(t)
	b.waitState(id, task.RetryWait)
	b.clock.Advance(time.Second)
	rcv.next(t)
	b.waitState(id, task.Failed)
	u, err := b.eng.InstanceUsage(b.ctx, "dev", "jobs")
	if err != nil {
		t.Fatal(err)
	}
	if d := u.Deliveries; d.Webhook != 2 || d.Total != 2 || d.Function != 0 || u.TasksAdded != 1 {
		t.Fatalf("usage %+v", u)
	}
}

// TestUsageAcrossTwoNodesPostgres: two nodes on one PostgreSQL database
// count their own adds and leases and flush them into the same day's row;
// either node then reports the sum.
func TestUsageAcrossTwoNodesPostgres(t *testing.T) {
	t.Parallel()
	a, b, _ := postgresPair(t)
	a.pullQueue("work")
	a.addPayload("work", 3)
	b.addPayload("work", 2)
	if got := len(b.lease("work", 4)); got != 4 {
		t.Fatalf("leased %d", got)
	}
	a.lease("work", 1)
	// Both flush at once, as two nodes' timers would.
	errs := make(chan error, 2)
	for _, n := range []*node{a, b} {
		go func() { errs <- n.eng.Usage().Flush(n.ctx) }()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []*node{a, b} {
		if u := usageOf(t, n); u.TasksAdded != 5 || u.Deliveries.Pull != 5 || u.BytesKept != 35 {
			t.Fatalf("usage seen from one node: added %d, deliveries %+v, bytes %d; want 5, 5 pull, 35", u.TasksAdded, u.Deliveries, u.BytesKept)
		}
	}
}
