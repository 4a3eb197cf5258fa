package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/errandhq/errand/internal/clock"
	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/store/sqlite"
	"github.com/errandhq/errand/internal/task"
	"github.com/errandhq/errand/internal/testkit/stores"
)

var discardLog = slog.New(slog.NewTextHandler(io.Discard, nil))

// node is an engine whose services are not started: tests drive the
// scheduler and chainer with RunOnce on a fake clock.
type node struct {
	t     testing.TB
	eng   *engine.Engine
	clock *clock.Fake
	ctx   context.Context
	logs  *logSink
}

func newNode(t testing.TB, st store.Store, fc *clock.Fake) *node {
	t.Helper()
	logs := &logSink{}
	eng := engine.New(engine.Config{Store: st, Clock: fc, Dev: true, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	return &node{t: t, eng: eng, clock: fc, ctx: context.Background(), logs: logs}
}

// logSink keeps a node's log lines.
type logSink struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logSink) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// line returns the first log line containing msg, "" for none.
func (l *logSink) line(msg string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	for ln := range strings.Lines(l.b.String()) {
		if strings.Contains(ln, msg) {
			return ln
		}
	}
	return ""
}

func openSQLite(t *testing.T, path string) store.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), path, sqlite.Options{Logger: discardLog})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// sqliteNode is a node on a fresh SQLite file.
func sqliteNode(t *testing.T, start time.Time) *node {
	st := openSQLite(t, filepath.Join(t.TempDir(), "errand.db"))
	t.Cleanup(func() { _ = st.Close() })
	return newNode(t, st, clock.NewFake(start))
}

func (n *node) pullQueue(name string) {
	n.t.Helper()
	if _, err := n.eng.QueueCreate(n.ctx, engine.QueueRef{Org: "dev", Instance: "jobs", Queue: name}, &task.QueuePatch{Mode: ptr(task.ModePull)}); err != nil {
		n.t.Fatal(err)
	}
}

func (n *node) rule(p *task.TriggerPatch) *task.Trigger {
	n.t.Helper()
	tr, err := n.eng.TriggerCreate(n.ctx, "dev", "jobs", p)
	if err != nil {
		n.t.Fatal(err)
	}
	return tr
}

func (n *node) tasks(queue string) []*task.Task {
	n.t.Helper()
	page, err := n.eng.TaskList(n.ctx, engine.QueueRef{Org: "dev", Instance: "jobs", Queue: queue}, engine.ListFilter{Limit: 200})
	if err != nil {
		n.t.Fatal(err)
	}
	return page.Tasks
}

func (n *node) schedule(want int) {
	n.t.Helper()
	got, err := n.eng.Scheduler().RunOnce(n.ctx)
	if err != nil || got != want {
		n.t.Fatalf("scheduler added %d (%v), want %d", got, err, want)
	}
}

func (n *node) getRule(id string) *task.Trigger {
	n.t.Helper()
	tr, err := n.eng.TriggerGet(n.ctx, engine.TriggerRef{Org: "dev", Instance: "jobs", ID: id})
	if err != nil {
		n.t.Fatal(err)
	}
	return tr
}

func TestTriggerSaveChecks(t *testing.T) {
	t.Parallel()
	n := sqliteNode(t, T0)
	n.pullQueue("out")
	cases := []struct {
		name  string
		p     task.TriggerPatch
		code  task.Code
		field string
	}{
		{"missing queue", task.TriggerPatch{Queue: ptr("jobs/nope"), Hook: &task.HookPatch{}}, task.CodeNotFound, ""},
		{"push queue without target", task.TriggerPatch{Queue: ptr("jobs/default"), Hook: &task.HookPatch{}}, task.CodeNoTarget, ""},
		{"another instance", task.TriggerPatch{Queue: ptr("other/out"), Hook: &task.HookPatch{}}, task.CodeInvalidArgument, "queue"},
		{"bad cron", task.TriggerPatch{Queue: ptr("jobs/out"), Schedule: &task.SchedulePatch{Cron: ptr("* * *")}}, task.CodeInvalidArgument, "schedule.cron"},
		{"bad zone", task.TriggerPatch{Queue: ptr("jobs/out"), Schedule: &task.SchedulePatch{Cron: ptr("@daily"), TimeZone: ptr("Nowhere/Land")}}, task.CodeInvalidArgument, "schedule.timeZone"},
		{"missing watched queue", task.TriggerPatch{Queue: ptr("jobs/out"), Task: &task.TaskOnPatch{Queue: ptr("jobs/nope")}}, task.CodeNotFound, ""},
	}
	for _, c := range cases {
		_, err := n.eng.TriggerCreate(n.ctx, "dev", "jobs", &c.p)
		if task.ErrorCode(err) != c.code || (c.field != "" && err.(*task.Error).Field != c.field) {
			t.Errorf("%s: %v, want %s %s", c.name, err, c.code, c.field)
		}
	}
	if list, _ := n.eng.TriggerList(n.ctx, "dev", "jobs"); len(list) != 0 {
		t.Fatalf("refused creates stored %d rules", len(list))
	}
	tr := n.rule(&task.TriggerPatch{Queue: ptr("jobs/out"), Schedule: &task.SchedulePatch{Cron: ptr("@every 1m")}})
	if tr.NextTickAt != T0.UnixMilli()+60_000 || tr.TimeZone != "UTC" || !tr.Enabled {
		t.Fatalf("created: %+v", tr)
	}
	// A refused PATCH changes nothing.
	_, err := n.eng.TriggerPatch(n.ctx, engine.TriggerRef{Org: "dev", Instance: "jobs", ID: tr.ID}, &task.TriggerPatch{Enabled: ptr(false), Queue: ptr("jobs/default")})
	if !task.IsCode(err, task.CodeNoTarget) {
		t.Fatalf("patch to a queue without target: %v", err)
	}
	if got := n.getRule(tr.ID); !got.Enabled || got.Queue != "out" {
		t.Fatalf("refused patch wrote %+v", got)
	}
	off, err := n.eng.TriggerPatch(n.ctx, engine.TriggerRef{Org: "dev", Instance: "jobs", ID: tr.ID}, &task.TriggerPatch{Enabled: ptr(false)})
	if err != nil || off.Enabled || off.NextTickAt != 0 {
		t.Fatalf("disable: %+v %v", off, err)
	}
	n.clock.Advance(5 * time.Minute)
	n.schedule(0)
	on, _ := n.eng.TriggerPatch(n.ctx, engine.TriggerRef{Org: "dev", Instance: "jobs", ID: tr.ID}, &task.TriggerPatch{Enabled: ptr(true)})
	if on.NextTickAt != T0.UnixMilli()+6*60_000 {
		t.Fatalf("enabled again waits for %d, want the next tick after now", on.NextTickAt-T0.UnixMilli())
	}
	if err := n.eng.TriggerDelete(n.ctx, engine.TriggerRef{Org: "dev", Instance: "jobs", ID: tr.ID}); err != nil {
		t.Fatal(err)
	}
	if err := n.eng.TriggerDelete(n.ctx, engine.TriggerRef{Org: "dev", Instance: "jobs", ID: tr.ID}); !task.IsCode(err, task.CodeNotFound) {
		t.Fatalf("delete twice: %v", err)
	}
}

func TestScheduleOneTaskPerTickAndCatchUp(t *testing.T) {
	t.Parallel()
	n := sqliteNode(t, T0)
	n.pullQueue("out")
	tr := n.rule(&task.TriggerPatch{Queue: ptr("jobs/out"), Schedule: &task.SchedulePatch{Cron: ptr("@every 1m")},
		Params: ptrRaw(`{"k":"v"}`), Payload: ptrRaw(`{"report":"daily"}`)})
	n.schedule(0) // nothing due yet
	n.clock.Advance(time.Minute)
	n.schedule(1)
	n.schedule(0) // the same tick again adds nothing
	ts := n.tasks("out")
	tick := T0.UnixMilli() + 60_000
	if len(ts) != 1 || ts[0].Name != task.TickName(tr.ID, tick) || ts[0].Source != task.SourceSchedule || ts[0].RunAt != tick {
		t.Fatalf("tick task: %+v", ts)
	}
	full, _ := n.eng.TaskGet(n.ctx, engine.TaskRef{Org: "dev", Instance: "jobs", ID: ts[0].ID})
	if string(full.Payload) != `{"report":"daily"}` || string(full.Params) != `{"k":"v"}` {
		t.Fatalf("payload %s params %s", full.Payload, full.Params)
	}
	// Down for ten minutes and a half: one catch-up task, for the latest tick.
	n.clock.Advance(10*time.Minute + 30*time.Second)
	n.schedule(1)
	n.schedule(0)
	got := n.getRule(tr.ID)
	latest := T0.UnixMilli() + 11*60_000
	if got.LastTickAt != latest || got.NextTickAt != latest+60_000 || got.Fired != 2 {
		t.Fatalf("rule after catch-up: last %d next %d fired %d", got.LastTickAt-T0.UnixMilli(), got.NextTickAt-T0.UnixMilli(), got.Fired)
	}
	if ts := n.tasks("out"); len(ts) != 2 || ts[0].Name != task.TickName(tr.ID, latest) {
		t.Fatalf("after catch-up: %d tasks, newest %q", len(ts), ts[0].Name)
	}
	// The metrics count a rule's adds as the API's.
	var added dto.Metric
	if err := n.eng.Metrics().TasksAdded.Write(&added); err != nil || added.GetCounter().GetValue() != 2 {
		t.Fatalf("errand_tasks_added_total = %v (%v), want 2", added.GetCounter().GetValue(), err)
	}
}

// TestScheduleQueueLostItsTarget: a tick whose push queue has lost its
// target (a PATCH is refused while the rule is enabled; an imported
// bundle can leave it so) is recorded on the rule in its owner's words
// (the rule's tasks carry none: the queue needs one), not an add's.
func TestScheduleQueueLostItsTarget(t *testing.T) {
	t.Parallel()
	n := sqliteNode(t, T0)
	ref := engine.QueueRef{Org: "dev", Instance: "jobs", Queue: "out"}
	if _, err := n.eng.QueueCreate(n.ctx, ref, &task.QueuePatch{Target: targetPtr("https://example.com/x")}); err != nil {
		t.Fatal(err)
	}
	tr := n.rule(&task.TriggerPatch{Queue: ptr("jobs/out"), Schedule: &task.SchedulePatch{Cron: ptr("@every 1m")}})
	var none *task.Target
	if _, err := n.eng.QueuePatch(n.ctx, ref, &task.QueuePatch{Target: &none}); !task.IsCode(err, task.CodeNoTarget) {
		t.Fatalf("clearing the target of a rule's queue: %v, want NO_TARGET", err)
	}
	inst, err := n.eng.Instance(n.ctx, "dev", "jobs")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.eng.Store().QueueUpdate(n.ctx, store.QueueRef{InstanceID: inst.ID, Name: "out"}, func(q *task.Queue) error {
		q.Target = nil
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	n.clock.Advance(time.Minute)
	n.schedule(0)
	if got := n.getRule(tr.ID); got.ErrorCount != 1 || !strings.Contains(got.LastError, `queue "out" has no target: a rule's tasks carry none`) {
		t.Fatalf("rule after the tick: errors %d, lastError %q", got.ErrorCount, got.LastError)
	}
}

func TestScheduleAcrossDST(t *testing.T) {
	t.Parallel()
	ny, _ := time.LoadLocation("America/New_York")
	// 2026-03-08 02:00 EST → 03:00 EDT: "30 2 * * *" fires at 03:00 that day.
	n := sqliteNode(t, time.Date(2026, 3, 6, 12, 0, 0, 0, ny))
	n.pullQueue("out")
	tr := n.rule(&task.TriggerPatch{Queue: ptr("jobs/out"), Schedule: &task.SchedulePatch{Cron: ptr("30 2 * * *"), TimeZone: ptr("America/New_York")}})
	var fired []string
	for range 4 * 48 {
		n.clock.Advance(30 * time.Minute)
		if _, err := n.eng.Scheduler().RunOnce(n.ctx); err != nil {
			t.Fatal(err)
		}
	}
	for _, tk := range n.tasks("out") {
		fired = append([]string{time.UnixMilli(tk.RunAt).In(ny).Format("01-02 15:04 MST")}, fired...)
	}
	want := []string{"03-07 02:30 EST", "03-08 03:00 EDT", "03-09 02:30 EDT", "03-10 02:30 EDT"}
	if len(fired) != len(want) {
		t.Fatalf("fired %v, want %v", fired, want)
	}
	for i := range want {
		if fired[i] != want[i] {
			t.Fatalf("fired %v, want %v", fired, want)
		}
	}
	if got := n.getRule(tr.ID); time.UnixMilli(got.NextTickAt).In(ny).Format("01-02 15:04 MST") != "03-11 02:30 EDT" {
		t.Fatalf("next tick %v", time.UnixMilli(got.NextTickAt).In(ny))
	}
}

// TestScheduleRestartMidTick: a node that read a due rule, then lost the
// race to a restarted node (or another), adds nothing; a tick whose task is
// already there (added before a crash) is not added twice.
func TestScheduleRestartMidTick(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "errand.db")
	st := openSQLite(t, path)
	fc := clock.NewFake(T0)
	a := newNode(t, st, fc)
	a.pullQueue("out")
	tr := a.rule(&task.TriggerPatch{Queue: ptr("jobs/out"), Schedule: &task.SchedulePatch{Cron: ptr("@every 1m")}})
	fc.Advance(time.Minute)
	// The tick's task is there already, as if the node added it and died
	// before it could record the tick.
	tick := T0.UnixMilli() + 60_000
	if _, err := a.eng.TaskAdd(a.ctx, engine.QueueRef{Org: "dev", Instance: "jobs", Queue: "out"}, []task.AddInput{{Name: task.TickName(tr.ID, tick)}}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	// Restart: a new store and engine on the same file.
	st2 := openSQLite(t, path)
	defer st2.Close()
	b := newNode(t, st2, fc)
	b.schedule(0)
	if ts := b.tasks("out"); len(ts) != 1 {
		t.Fatalf("%d tasks for one tick after a restart", len(ts))
	}
	if got := b.getRule(tr.ID); got.LastTickAt != tick || got.NextTickAt != tick+60_000 {
		t.Fatalf("rule after restart: %+v", got)
	}
}

// TestScheduleTwoNodesPostgres: two engines on one PostgreSQL fire the same
// rules at once, tick after tick: each tick adds exactly one task.
func TestScheduleTwoNodesPostgres(t *testing.T) {
	t.Parallel()
	a, b, fc := postgresPair(t)
	a.pullQueue("out")
	for range 5 {
		a.rule(&task.TriggerPatch{Queue: ptr("jobs/out"), Schedule: &task.SchedulePatch{Cron: ptr("@every 1s")}})
	}
	const ticks = 20
	total := 0
	for range ticks {
		fc.Advance(time.Second)
		total += concurrently(t, []*node{a, b, a, b}, func(n *node) (int, error) { return n.eng.Scheduler().RunOnce(n.ctx) })
	}
	ts := a.tasks("out")
	if len(ts) != 5*ticks || total != 5*ticks {
		t.Fatalf("%d tasks stored, %d reported added; want %d", len(ts), total, 5*ticks)
	}
	seen := map[string]bool{}
	for _, tk := range ts {
		if seen[tk.Name] {
			t.Fatalf("tick %s added twice", tk.Name)
		}
		seen[tk.Name] = true
	}
}

// TestScheduleServiceWakesOnRuleChange: with the services running, a new
// rule is fired at its first tick without waiting out the backstop.
func TestScheduleServiceWakesOnRuleChange(t *testing.T) {
	t.Parallel()
	st := openSQLite(t, filepath.Join(t.TempDir(), "errand.db"))
	defer st.Close()
	fc := clock.NewFake(T0)
	eng := engine.New(engine.Config{Store: st, Clock: fc, Dev: true, Logger: discardLog, Backstop: time.Hour})
	sig := engine.WithSignals(eng)
	n := &node{t: t, eng: eng, clock: fc, ctx: context.Background()}
	n.pullQueue("out")
	if err := eng.Start(n.ctx); err != nil {
		t.Fatal(err)
	}
	defer eng.Stop()
	// No rules: the scheduler sleeps out its backstop.
	sig.SchedulerAsleepUntil(t, T0.Add(time.Hour))
	n.rule(&task.TriggerPatch{Queue: ptr("jobs/out"), Schedule: &task.SchedulePatch{Cron: ptr("@every 1s")}})
	// The new rule wakes it: it re-reads the rules and sleeps until the
	// first tick, on the fake clock.
	sig.SchedulerAsleepUntil(t, T0.Add(time.Second))
	if ts := n.tasks("out"); len(ts) != 0 {
		t.Fatalf("%d tasks before the first tick", len(ts))
	}
	fc.Advance(time.Second)
	// It fires the tick, then sleeps until the next.
	sig.SchedulerAsleepUntil(t, T0.Add(2*time.Second))
	if ts := n.tasks("out"); len(ts) != 1 {
		t.Fatalf("%d tasks after the first tick, want 1", len(ts))
	}
}

func ptrRaw(s string) *json.RawMessage { r := json.RawMessage(s); return &r }

// chainNode sets up pull queues a and b with rules a→b and b→a.
func chainNode(t *testing.T, n *node) {
	n.pullQueue("a")
	n.pullQueue("b")
	n.rule(&task.TriggerPatch{Queue: ptr("jobs/b"), Task: &task.TaskOnPatch{Queue: ptr("jobs/a")}, Params: ptrRaw(`{"from":"a"}`)})
	n.rule(&task.TriggerPatch{Queue: ptr("jobs/a"), Task: &task.TaskOnPatch{Queue: ptr("jobs/b"), On: &[]string{"succeeded", "failed"}}})
}

// leaseAck leases the one task of queue and acks it.
func (n *node) leaseAck(queue string) *task.Task {
	n.t.Helper()
	ts, err := n.eng.Lease(n.ctx, engine.QueueRef{Org: "dev", Instance: "jobs", Queue: queue}, engine.LeaseParams{Count: 10, LeaseSeconds: 60})
	if err != nil || len(ts) != 1 {
		n.t.Fatalf("lease %s: %d tasks, %v", queue, len(ts), err)
	}
	done, err := n.eng.Ack(n.ctx, engine.TaskRef{Org: "dev", Instance: "jobs", ID: ts[0].ID}, engine.AckParams{LeaseID: ts[0].LeaseID, Result: json.RawMessage(`{"ok":true}`)})
	if err != nil {
		n.t.Fatal(err)
	}
	return done
}

func (n *node) chain(want int) {
	n.t.Helper()
	got, err := n.eng.Chainer().RunOnce(n.ctx)
	if err != nil || got != want {
		n.t.Fatalf("chainer added %d (%v), want %d", got, err, want)
	}
}

// TestChainDepthExceeded: A→B→A… runs to depth 8, then the add is refused
// with DEPTH_EXCEEDED, recorded on the rule; the metrics count each
// chained add.
func TestChainDepthExceeded(t *testing.T) {
	t.Parallel()
	n := sqliteNode(t, T0)
	chainNode(t, n)
	if _, err := n.eng.TaskAdd(n.ctx, engine.QueueRef{Org: "dev", Instance: "jobs", Queue: "a"}, []task.AddInput{{Payload: json.RawMessage(`{"start":1}`)}}); err != nil {
		t.Fatal(err)
	}
	queue := "a"
	for depth := 0; depth <= task.MaxDepth; depth++ {
		done := n.leaseAck(queue)
		if done.Depth != depth {
			t.Fatalf("task in %s has depth %d, want %d", queue, done.Depth, depth)
		}
		if depth == task.MaxDepth {
			n.chain(0)
			break
		}
		n.chain(1)
		queue = map[string]string{"a": "b", "b": "a"}[queue]
		if depth == 0 {
			ts := n.tasks("b")
			full, _ := n.eng.TaskGet(n.ctx, engine.TaskRef{Org: "dev", Instance: "jobs", ID: ts[0].ID})
			var p struct {
				Task    struct{ ID, Queue, State string }
				Result  map[string]bool
				Payload map[string]int
			}
			if err := json.Unmarshal(full.Payload, &p); err != nil || p.Task.ID != done.ID || p.Task.Queue != "a" ||
				p.Task.State != "succeeded" || !p.Result["ok"] || p.Payload["start"] != 1 || full.Source != task.SourceTask ||
				string(full.Params) != `{"from":"a"}` {
				t.Fatalf("chained task: %s params %s source %s (%v)", full.Payload, full.Params, full.Source, err)
			}
		}
	}
	// The task of depth 8 finished in a (a holds depths 0, 2, … 8): the
	// rule a→b refused the add.
	list, _ := n.eng.TriggerList(n.ctx, "dev", "jobs")
	var refused *task.Trigger
	for _, r := range list {
		if r.ErrorCount > 0 {
			refused = r
		}
	}
	if refused == nil || refused.OnQueue != "a" || refused.ErrorCount != 1 ||
		len(refused.LastError) < 14 || refused.LastError[:14] != "DEPTH_EXCEEDED" {
		t.Fatalf("rules: %+v", list)
	}
	if n := len(n.tasks("a")) + len(n.tasks("b")); n != task.MaxDepth+1 {
		t.Fatalf("%d tasks in the chain, want %d", n, task.MaxDepth+1)
	}
	// The metrics count the chained adds beside the API's.
	var added dto.Metric
	if err := n.eng.Metrics().TasksAdded.Write(&added); err != nil || added.GetCounter().GetValue() != task.MaxDepth+1 {
		t.Fatalf("errand_tasks_added_total = %v (%v), want %d", added.GetCounter().GetValue(), err, task.MaxDepth+1)
	}
	// The refusal is logged with the instance's name, not its id.
	if ln := n.logs.line("task rule could not add its task"); !strings.Contains(ln, "instance=jobs ") {
		t.Fatalf("logged: %q", ln)
	}
}

// TestChainSurvivesNodeDeath: a node that finishes a task and dies before
// its chainer runs loses nothing: the event was stored with the finish, and
// the next node to start adds the chained task, once.
func TestChainSurvivesNodeDeath(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "errand.db")
	st := openSQLite(t, path)
	fc := clock.NewFake(T0)
	a := newNode(t, st, fc)
	chainNode(t, a)
	if _, err := a.eng.TaskAdd(a.ctx, engine.QueueRef{Org: "dev", Instance: "jobs", Queue: "a"}, []task.AddInput{{}}); err != nil {
		t.Fatal(err)
	}
	a.leaseAck("a") // finished; a's chainer never runs
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st2 := openSQLite(t, path)
	defer st2.Close()
	b := newNode(t, st2, fc)
	b.chain(1)
	b.chain(0)
	if ts := b.tasks("b"); len(ts) != 1 || ts[0].Depth != 1 {
		t.Fatalf("chained tasks after the restart: %+v", ts)
	}
}

// TestChainTwoNodesPostgres: two nodes drain the same events at once; each
// finish adds its chained task exactly once.
func TestChainTwoNodesPostgres(t *testing.T) {
	t.Parallel()
	a, b, _ := postgresPair(t)
	a.pullQueue("a")
	a.pullQueue("b")
	a.rule(&task.TriggerPatch{Queue: ptr("jobs/b"), Task: &task.TaskOnPatch{Queue: ptr("jobs/a")}})
	const n = 30
	ins := make([]task.AddInput, n)
	if _, err := a.eng.TaskAdd(a.ctx, engine.QueueRef{Org: "dev", Instance: "jobs", Queue: "a"}, ins); err != nil {
		t.Fatal(err)
	}
	ts, err := a.eng.Lease(a.ctx, engine.QueueRef{Org: "dev", Instance: "jobs", Queue: "a"}, engine.LeaseParams{Count: n, LeaseSeconds: 60})
	if err != nil || len(ts) != n {
		t.Fatalf("lease: %d %v", len(ts), err)
	}
	for _, tk := range ts {
		if _, err := a.eng.Ack(a.ctx, engine.TaskRef{Org: "dev", Instance: "jobs", ID: tk.ID}, engine.AckParams{LeaseID: tk.LeaseID}); err != nil {
			t.Fatal(err)
		}
	}
	total := concurrently(t, []*node{a, b, a, b}, func(n *node) (int, error) { return n.eng.Chainer().RunOnce(n.ctx) })
	if got := len(b.tasks("b")); got != n || total != n {
		t.Fatalf("%d chained tasks stored, %d reported; want %d", got, total, n)
	}
}

// concurrently runs pass on every node at once and sums what they report.
func concurrently(t testing.TB, nodes []*node, pass func(n *node) (int, error)) int {
	t.Helper()
	var wg sync.WaitGroup
	var mu sync.Mutex
	total := 0
	for _, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := pass(n)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			total += got
			mu.Unlock()
		}()
	}
	wg.Wait()
	return total
}

// postgresPair is two nodes on one PostgreSQL database, on one fake clock.
func postgresPair(t *testing.T) (a, b *node, fc *clock.Fake) {
	open := stores.OpenPostgresShared(t)
	st1, st2 := open(), open()
	t.Cleanup(func() { st1.Close(); st2.Close() })
	fc = clock.NewFake(T0)
	return newNode(t, st1, fc), newNode(t, st2, fc), fc
}

// TestChainBatches: events past one batch are all ended in one pass, and
// a batch that holds an event whose finished task is gone adds the others
// and records that one's refusal on its rule, on both stores.
func TestChainBatches(t *testing.T) {
	t.Parallel()
	for _, kind := range stores.Kinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			st := stores.Open(t, kind)
			t.Cleanup(func() { _ = st.Close() })
			n := newNode(t, st, clock.NewFake(T0))
			for _, q := range []string{"a", "c", "b"} {
				n.pullQueue(q)
			}
			n.rule(&task.TriggerPatch{Queue: ptr("jobs/b"), Task: &task.TaskOnPatch{Queue: ptr("jobs/a")}})
			fromC := n.rule(&task.TriggerPatch{Queue: ptr("jobs/b"), Task: &task.TaskOnPatch{Queue: ptr("jobs/c")}})
			const many = 230 // three batches
			n.ackAll("c", 1)
			n.ackAll("a", many)
			if _, err := n.eng.QueuePurge(n.ctx, engine.QueueRef{Org: "dev", Instance: "jobs", Queue: "c"}); err != nil {
				t.Fatal(err)
			}
			n.chain(many)
			n.chain(0)
			chained := 0
			for cursor := "start"; cursor != ""; {
				f := engine.ListFilter{Limit: 200}
				if cursor != "start" {
					f.Cursor = cursor
				}
				page, err := n.eng.TaskList(n.ctx, engine.QueueRef{Org: "dev", Instance: "jobs", Queue: "b"}, f)
				if err != nil {
					t.Fatal(err)
				}
				chained += len(page.Tasks)
				cursor = page.Cursor
			}
			if chained != many {
				t.Fatalf("%d chained tasks, want %d", chained, many)
			}
			if got := n.getRule(fromC.ID); got.Fired != 0 || got.ErrorCount != 1 || !strings.Contains(got.LastError, "is gone") {
				t.Fatalf("rule c→b: fired %d, errors %d, last error %q", got.Fired, got.ErrorCount, got.LastError)
			}
			if ln := n.logs.line("task rule could not add its task"); !strings.Contains(ln, "rule="+fromC.ID) {
				t.Fatalf("logged: %q", ln)
			}
		})
	}
}

// ackAll adds count tasks to a pull queue and acks them all.
func (n *node) ackAll(queue string, count int) {
	n.t.Helper()
	ref := engine.QueueRef{Org: "dev", Instance: "jobs", Queue: queue}
	for left := count; left > 0; {
		k := min(left, 100)
		left -= k
		if _, err := n.eng.TaskAdd(n.ctx, ref, make([]task.AddInput, k)); err != nil {
			n.t.Fatal(err)
		}
		ts, err := n.eng.Lease(n.ctx, ref, engine.LeaseParams{Count: k, LeaseSeconds: 60})
		if err != nil || len(ts) != k {
			n.t.Fatalf("lease %s: %d tasks, %v", queue, len(ts), err)
		}
		acks := make([]engine.AckInput, k)
		for i, tk := range ts {
			acks[i] = engine.AckInput{ID: tk.ID, LeaseID: tk.LeaseID}
		}
		if _, err := n.eng.AckMany(n.ctx, ref, acks); err != nil {
			n.t.Fatal(err)
		}
	}
}

// lateStore is a real store whose chain batches start a second after the
// chainer called: as a batch waits for its events while the clock runs.
type lateStore struct {
	store.Store
	clock *clock.Fake
}

func (l *lateStore) TriggerEventsEnd(ctx context.Context, p *store.TriggerEventsEndParams) ([]store.TriggerFireResult, error) {
	l.clock.Advance(time.Second)
	return l.Store.TriggerEventsEnd(ctx, p)
}

// TestChainedTaskNotBeforeItsParent: the chained task's createdAt is read
// once its batch holds the events, so it is never earlier than its
// parent's finish (the audit saw follow-ups dated 56 ms before it).
func TestChainedTaskNotBeforeItsParent(t *testing.T) {
	t.Parallel()
	fc := clock.NewFake(T0)
	raw := openSQLite(t, filepath.Join(t.TempDir(), "errand.db"))
	t.Cleanup(func() { _ = raw.Close() })
	n := newNode(t, &lateStore{Store: raw, clock: fc}, fc)
	n.pullQueue("a")
	n.pullQueue("b")
	n.rule(&task.TriggerPatch{Queue: ptr("jobs/b"), Task: &task.TaskOnPatch{Queue: ptr("jobs/a")}})
	n.ackAll("a", 1)
	n.chain(1)
	ts := n.tasks("b")
	if len(ts) != 1 {
		t.Fatalf("%d chained tasks, want 1", len(ts))
	}
	if want := T0.Add(time.Second).UnixMilli(); ts[0].CreatedAt != want {
		t.Fatalf("chained task created at +%d ms, want +%d (the time its batch read the event)", ts[0].CreatedAt-T0.UnixMilli(), want-T0.UnixMilli())
	}
}

// TestChainOutboxMetrics: /metrics shows the chain events waiting and how
// long ago the oldest one's task finished, and 0 once the chainer added
// their tasks.
func TestChainOutboxMetrics(t *testing.T) {
	t.Parallel()
	n := sqliteNode(t, T0)
	n.pullQueue("a")
	n.pullQueue("b")
	n.rule(&task.TriggerPatch{Queue: ptr("jobs/b"), Task: &task.TaskOnPatch{Queue: ptr("jobs/a")}})
	n.ackAll("a", 3) // the chainer is not running: three events wait
	n.clock.Advance(7 * time.Second)
	metric := func(name string) string {
		t.Helper()
		rec := httptest.NewRecorder()
		n.eng.Metrics().Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		for ln := range strings.Lines(rec.Body.String()) {
			if v, ok := strings.CutPrefix(strings.TrimSpace(ln), name+" "); ok {
				return v
			}
		}
		t.Fatalf("no metric %s", name)
		return ""
	}
	if p, o := metric("errand_chain_events_pending"), metric("errand_oldest_chain_event_seconds"); p != "3" || o != "7" {
		t.Fatalf("pending %s, oldest %s s; want 3 and 7", p, o)
	}
	n.chain(3)
	n.clock.Advance(5 * time.Second) // past the read's 5 s
	if p, o := metric("errand_chain_events_pending"), metric("errand_oldest_chain_event_seconds"); p != "0" || o != "0" {
		t.Fatalf("after the chainer: pending %s, oldest %s s; want 0 and 0", p, o)
	}
}
