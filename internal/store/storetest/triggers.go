package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

var triggerCases = []testCase{
	{"CRUD", testTriggerCRUD},
	{"Hook", testTriggerHook},
	{"HookAdd", testTriggerHookAdd},
	{"HookAddMany", testTriggerHookAddMany},
	{"DueAndFire", testTriggerDueAndFire},
	{"FireMany", testTriggerFireMany},
	{"FireQueueGone", testTriggerFireQueueGone},
	{"ChainEventInFinish", testTriggerChainEvent},
	{"ChainEventDoneOnce", testTriggerChainEventDoneOnce},
	{"ChainEventsOnce", testTriggerChainEventsOnce},
	{"QueueDeleteRemovesRules", testTriggerQueueDelete},
}

// rule stores a rule of kind on inst adding to queue.
func (e *env) rule(inst *task.Instance, kind task.TriggerKind, queue string, mod ...func(*task.Trigger)) *task.Trigger {
	e.t.Helper()
	tr := &task.Trigger{InstanceID: inst.ID, ID: e.id("rule"), Kind: kind, Queue: queue, Enabled: true,
		TimeZone: "UTC", CreatedAt: T0, UpdatedAt: T0}
	switch kind {
	case task.TriggerSchedule:
		tr.Cron, tr.NextTickAt = "@every 1m", T0+60_000
	case task.TriggerHook:
		tr.HookToken = e.id("hk")
	case task.TriggerTask:
		tr.OnQueue, tr.OnSucceeded = "work", true
	}
	for _, m := range mod {
		m(tr)
	}
	if err := e.s.TriggerCreate(e.ctx, &store.TriggerCreateParams{Trigger: tr}); err != nil {
		e.t.Fatalf("TriggerCreate: %v", err)
	}
	return tr
}

func (e *env) events() []*store.TriggerEvent {
	e.t.Helper()
	evs, err := e.s.TriggerEventList(e.ctx, &store.TriggerEventListParams{Limit: 100})
	if err != nil {
		e.t.Fatalf("TriggerEventList: %v", err)
	}
	return evs
}

func testTriggerCRUD(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	other := e.instance("acme", "other")
	e.queue(inst, "out", task.ModePull)
	tr := e.rule(inst, task.TriggerSchedule, "out", func(tr *task.Trigger) {
		tr.Params, tr.Payload, tr.Priority = json.RawMessage(`{"a": 1}`), json.RawMessage(`[1, 2]`), 4
	})
	hook := e.rule(inst, task.TriggerHook, "out", func(tr *task.Trigger) { tr.HookHeaders = []string{"X-Event"}; tr.HookSecret = "whsec_x" })
	got, err := e.s.TriggerGet(e.ctx, store.TriggerRef{InstanceID: inst.ID, ID: tr.ID})
	if err != nil {
		t.Fatal(err)
	}
	if show(got) != show(tr) {
		t.Fatalf("get:\n%s\nwant\n%s", show(got), show(tr))
	}
	_, err = e.s.TriggerGet(e.ctx, store.TriggerRef{InstanceID: other.ID, ID: tr.ID})
	wantCode(t, err, task.CodeNotFound, "get from another instance")
	list, err := e.s.TriggerList(e.ctx, &store.TriggerListParams{InstanceID: inst.ID})
	if err != nil || len(list) != 2 || list[0].ID != tr.ID || list[1].HookHeaders[0] != "X-Event" || list[1].HookSecret != "whsec_x" {
		t.Fatalf("list: %s %v", show(list), err)
	}
	if list, _ := e.s.TriggerList(e.ctx, &store.TriggerListParams{InstanceID: other.ID}); len(list) != 0 {
		t.Fatalf("other instance lists %d", len(list))
	}
	// A hook's own signature scheme is kept, and removed.
	sig := &task.HookSignature{Header: "X-Acme-Signature", Hash: "sha512", Encoding: "base64", Prefix: "v1=", IDHeader: "X-Acme-Delivery"}
	timed := &task.HookSignature{Header: "X-Acme-Signature", Hash: "sha256", Encoding: "hex", TimestampHeader: "X-Acme-Time", Signed: "{id}.{timestamp}.{body}", IDHeader: "X-Acme-Id"}
	for _, want := range []*task.HookSignature{sig, timed, nil} {
		if _, err := e.s.TriggerUpdate(e.ctx, store.TriggerRef{InstanceID: inst.ID, ID: hook.ID}, func(tr *task.Trigger) error {
			tr.HookSignature = want
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		got, err := e.s.TriggerGetHook(e.ctx, store.HookRef{Token: hook.HookToken})
		if err != nil || show(got.HookSignature) != show(want) {
			t.Fatalf("hook signature: %s, want %s (%v)", show(got.HookSignature), show(want), err)
		}
	}
	up, err := e.s.TriggerUpdate(e.ctx, store.TriggerRef{InstanceID: inst.ID, ID: tr.ID}, func(tr *task.Trigger) error {
		tr.Enabled, tr.Cron, tr.Kind, tr.Params, tr.UpdatedAt, tr.Priority = false, "@hourly", task.TriggerHook, nil, T0+5, 7
		return nil
	})
	if err != nil || up.Kind != task.TriggerSchedule || up.Enabled || up.Cron != "@hourly" || up.Priority != 7 {
		t.Fatalf("update: %+v %v", up, err)
	}
	got, _ = e.s.TriggerGet(e.ctx, store.TriggerRef{InstanceID: inst.ID, ID: tr.ID})
	if show(got) != show(up) || got.Params != nil {
		t.Fatalf("after update:\n%s\nwant\n%s", show(got), show(up))
	}
	// fn's error writes nothing.
	_, err = e.s.TriggerUpdate(e.ctx, store.TriggerRef{InstanceID: inst.ID, ID: tr.ID}, func(tr *task.Trigger) error {
		tr.Cron = "x"
		return task.Errorf(task.CodeInvalidArgument, "no")
	})
	wantCode(t, err, task.CodeInvalidArgument, "update refused")
	if got, _ := e.s.TriggerGet(e.ctx, store.TriggerRef{InstanceID: inst.ID, ID: tr.ID}); got.Cron != "@hourly" {
		t.Fatalf("refused update wrote %q", got.Cron)
	}
	_, err = e.s.TriggerUpdate(e.ctx, store.TriggerRef{InstanceID: other.ID, ID: tr.ID}, func(*task.Trigger) error { return nil })
	wantCode(t, err, task.CodeNotFound, "update in another instance")
	wantCode(t, e.s.TriggerDelete(e.ctx, store.TriggerRef{InstanceID: other.ID, ID: tr.ID}), task.CodeNotFound, "delete from another instance")
	if err := e.s.TriggerDelete(e.ctx, store.TriggerRef{InstanceID: inst.ID, ID: tr.ID}); err != nil {
		t.Fatal(err)
	}
	wantCode(t, e.s.TriggerDelete(e.ctx, store.TriggerRef{InstanceID: inst.ID, ID: tr.ID}), task.CodeNotFound, "delete twice")
}

func testTriggerHook(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	e.queue(inst, "out", task.ModePull)
	tr := e.rule(inst, task.TriggerHook, "out")
	got, err := e.s.TriggerGetHook(e.ctx, store.HookRef{Token: tr.HookToken})
	if err != nil || got.ID != tr.ID || got.InstanceID != inst.ID {
		t.Fatalf("by token: %+v %v", got, err)
	}
	_, err = e.s.TriggerGetHook(e.ctx, store.HookRef{Token: "hk-nope"})
	wantCode(t, err, task.CodeNotFound, "unknown token")
	_, err = e.s.TriggerGetHook(e.ctx, store.HookRef{})
	wantCode(t, err, task.CodeNotFound, "empty token")
	// A token is a URL's path segment: any bytes, not only text.
	for _, tok := range []string{"hk_\x00", "hk_\xff", "\xc3"} {
		_, err = e.s.TriggerGetHook(e.ctx, store.HookRef{Token: tok})
		wantCode(t, err, task.CodeNotFound, fmt.Sprintf("token %q", tok))
	}
}

func testTriggerDueAndFire(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	q := e.queue(inst, "out", task.ModePull)
	a := e.rule(inst, task.TriggerSchedule, "out", func(tr *task.Trigger) { tr.NextTickAt = T0 + 1000 })
	e.rule(inst, task.TriggerSchedule, "out", func(tr *task.Trigger) { tr.NextTickAt = T0 + 500; tr.Enabled = false })
	e.rule(inst, task.TriggerSchedule, "out", func(tr *task.Trigger) { tr.NextTickAt = T0 + 5000 })
	if next, err := e.s.TriggerNextTick(e.ctx); err != nil || next != T0+1000 {
		t.Fatalf("next tick %d %v", next-T0, err)
	}
	due, err := e.s.TriggerDue(e.ctx, &store.TriggerDueParams{Now: T0 + 1000, Limit: 10})
	if err != nil || len(due) != 1 || due[0].ID != a.ID {
		t.Fatalf("due: %s %v", show(due), err)
	}
	fire := func(expect int64) *store.TriggerFireResult {
		tk := e.newTask(q, T0+1000, func(in *task.AddInput) { in.Name = task.TickName(a.ID, T0+1000); in.Source = task.SourceSchedule })
		return e.fire(&store.TriggerFireParams{Ref: store.TriggerRef{InstanceID: inst.ID, ID: a.ID},
			ExpectNext: expect, Tick: T0 + 1000, Next: T0 + 61_000, Task: tk, Now: T0 + 1000})
	}
	res := fire(T0 + 1000)
	if !res.Applied || !res.Added || res.TaskID == "" {
		t.Fatalf("fire: %+v", res)
	}
	first := res.TaskID
	// The same tick again (a second node, a retry): nothing applies.
	if res := fire(T0 + 1000); res.Applied || res.Added {
		t.Fatalf("second fire: %+v", res)
	}
	got, _ := e.s.TriggerGet(e.ctx, store.TriggerRef{InstanceID: inst.ID, ID: a.ID})
	if got.LastTickAt != T0+1000 || got.NextTickAt != T0+61_000 || got.Fired != 1 {
		t.Fatalf("rule after fire: %+v", got)
	}
	page, _ := e.s.TaskList(e.ctx, &store.ListParams{InstanceID: inst.ID, Queue: "out", Limit: 10})
	if len(page.Tasks) != 1 || page.Tasks[0].ID != first || page.Tasks[0].Name != task.TickName(a.ID, T0+1000) {
		t.Fatalf("tasks: %s", show(page.Tasks))
	}
	// A rule moved back to the same tick whose task is kept: the name
	// holds, the fire applies and answers the existing task.
	if _, err := e.s.TriggerUpdate(e.ctx, store.TriggerRef{InstanceID: inst.ID, ID: a.ID}, func(tr *task.Trigger) error {
		tr.NextTickAt = T0 + 1000
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if res := fire(T0 + 1000); !res.Applied || !res.Added || res.TaskID != first {
		t.Fatalf("refire of a kept tick: %+v, want task %s", res, first)
	}
	if got, _ := e.s.TriggerGet(e.ctx, store.TriggerRef{InstanceID: inst.ID, ID: a.ID}); got.Fired != 1 {
		t.Fatalf("fired %d after a refire", got.Fired)
	}
	if next, _ := e.s.TriggerNextTick(e.ctx); next != T0+5000 {
		t.Fatalf("next tick after fire %d", next-T0)
	}
}

// fire records one fire through TriggerFire and returns its result.
func (e *env) fire(p *store.TriggerFireParams) *store.TriggerFireResult {
	e.t.Helper()
	res, err := e.s.TriggerFire(e.ctx, []*store.TriggerFireParams{p})
	if err != nil || len(res) != 1 {
		e.t.Fatalf("TriggerFire: %d results, %v", len(res), err)
	}
	return &res[0]
}

// testTriggerFireMany: one call fires several rules, each on its own
// fence and with its own outcome: a task added, a tick another node fired
// already (nothing), a refusal recorded, a name already taken (added
// before, not counted again).
func testTriggerFireMany(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	q := e.queue(inst, "out", task.ModePull)
	rules := make([]*task.Trigger, 4)
	for i := range rules {
		rules[i] = e.rule(inst, task.TriggerSchedule, "out", func(tr *task.Trigger) { tr.NextTickAt = T0 + 1000 })
	}
	tick := func(tr *task.Trigger) *task.Task {
		return e.newTask(q, T0+1000, func(in *task.AddInput) { in.Name = task.TickName(tr.ID, T0+1000); in.Source = task.SourceSchedule })
	}
	kept := e.add(tick(rules[3]))[0]
	fire := func(tr *task.Trigger, expect int64, tk *task.Task, msg string) *store.TriggerFireParams {
		return &store.TriggerFireParams{Ref: store.TriggerRef{InstanceID: inst.ID, ID: tr.ID}, ExpectNext: expect,
			Tick: T0 + 1000, Next: T0 + 61_000, Task: tk, Err: msg, Now: T0 + 1000 + int64(len(msg))}
	}
	added := tick(rules[0])
	res, err := e.s.TriggerFire(e.ctx, []*store.TriggerFireParams{
		fire(rules[0], T0+1000, added, ""),
		fire(rules[1], T0+999, tick(rules[1]), ""), // another node moved it on
		fire(rules[2], T0+1000, nil, "NO_TARGET: no"),
		fire(rules[3], T0+1000, tick(rules[3]), ""),
	})
	if err != nil || len(res) != 4 {
		t.Fatalf("TriggerFire: %d results, %v", len(res), err)
	}
	if r := res[0]; !r.Applied || !r.Added || r.TaskID != added.ID {
		t.Fatalf("added: %+v", r)
	}
	if r := res[1]; r.Applied || r.Added {
		t.Fatalf("fenced: %+v", r)
	}
	if r := res[2]; !r.Applied || r.Added || r.Err != "NO_TARGET: no" {
		t.Fatalf("refused: %+v", r)
	}
	if r := res[3]; !r.Applied || !r.Added || r.TaskID != kept.ID {
		t.Fatalf("name taken: %+v, want %s", r, kept.ID)
	}
	for i, want := range []struct {
		next, fired, errors int64
		lastErrAt           int64
	}{{T0 + 61_000, 1, 0, 0}, {T0 + 1000, 0, 0, 0}, {T0 + 61_000, 0, 1, T0 + 1013}, {T0 + 61_000, 0, 0, 0}} {
		got, err := e.s.TriggerGet(e.ctx, store.TriggerRef{InstanceID: inst.ID, ID: rules[i].ID})
		if err != nil || got.NextTickAt != want.next || got.Fired != want.fired || got.ErrorCount != want.errors || got.LastErrorAt != want.lastErrAt {
			t.Fatalf("rule %d: next %d fired %d errors %d at %d (%v), want %+v", i, got.NextTickAt-T0, got.Fired, got.ErrorCount, got.LastErrorAt, err, want)
		}
	}
	if res, err := e.s.TriggerFire(e.ctx, nil); err != nil || len(res) != 0 {
		t.Fatalf("no fires: %v %v", res, err)
	}
}

func testTriggerFireQueueGone(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	q := e.queue(inst, "out", task.ModePull)
	a := e.rule(inst, task.TriggerSchedule, "other-queue", func(tr *task.Trigger) { tr.NextTickAt = T0 + 1000 })
	tk := e.newTask(q, T0+1000)
	tk.Queue = "other-queue"
	res := e.fire(&store.TriggerFireParams{Ref: store.TriggerRef{InstanceID: inst.ID, ID: a.ID},
		ExpectNext: T0 + 1000, Tick: T0 + 1000, Next: T0 + 2000, Task: tk, Now: T0 + 1000})
	if !res.Applied || res.Added || res.Err == "" {
		t.Fatalf("fire into a missing queue: %+v", res)
	}
	// A refusal decided by the engine is recorded alike.
	res = e.fire(&store.TriggerFireParams{Ref: store.TriggerRef{InstanceID: inst.ID, ID: a.ID},
		ExpectNext: T0 + 2000, Tick: T0 + 2000, Next: T0 + 3000, Err: "NO_TARGET: no", Now: T0 + 2000})
	if !res.Applied || res.Err != "NO_TARGET: no" {
		t.Fatalf("fire with an error: %+v", res)
	}
	got, _ := e.s.TriggerGet(e.ctx, store.TriggerRef{InstanceID: inst.ID, ID: a.ID})
	if got.ErrorCount != 2 || got.LastError != "NO_TARGET: no" || got.LastErrorAt != T0+2000 || got.Fired != 0 || got.NextTickAt != T0+3000 {
		t.Fatalf("rule: %+v", got)
	}
}

func testTriggerChainEvent(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	work := e.queue(inst, "work", task.ModePush, func(q *task.Queue) { q.MaxAttempts = 1 })
	e.queue(inst, "next", task.ModePull)
	ok := e.rule(inst, task.TriggerTask, "next")
	bad := e.rule(inst, task.TriggerTask, "next", func(tr *task.Trigger) { tr.OnSucceeded, tr.OnFailed = false, true })
	e.rule(inst, task.TriggerTask, "next", func(tr *task.Trigger) { tr.Enabled = false; tr.OnFailed = true })
	e.rule(inst, task.TriggerTask, "next", func(tr *task.Trigger) { tr.OnQueue = "elsewhere"; tr.OnFailed = true })
	e.addN(work, 3, T0, nil)
	c := e.claim(work, T0, 3, 60_000)
	e.finish(work, c[0], T0+10, succeed(`1`))
	e.finish(work, c[1], T0+20, fail("boom"))
	// A lost lease writes nothing, so no event either.
	stale := *c[2]
	stale.LeaseID = "lease-other"
	if _, err := stale.Finish(work, T0+30, succeed(`2`)); err != nil {
		t.Fatal(err)
	}
	res, err := e.s.TaskFinish(e.ctx, []*store.FinishParams{{Task: &stale, LeaseID: "lease-other"}})
	if err != nil || !task.IsCode(res[0], task.CodeLeaseLost) {
		t.Fatalf("stale finish: %v %v", res, err)
	}
	evs := e.events()
	if len(evs) != 2 {
		t.Fatalf("events: %s", show(evs))
	}
	if evs[0].RuleID != ok.ID || evs[0].TaskID != c[0].ID || evs[0].State != task.Succeeded || evs[0].FinishedAt != T0+10 || evs[0].InstanceID != inst.ID {
		t.Fatalf("event 0: %+v", evs[0])
	}
	if evs[1].RuleID != bad.ID || evs[1].TaskID != c[1].ID || evs[1].State != task.Failed || evs[1].Seq <= evs[0].Seq {
		t.Fatalf("event 1: %+v", evs[1])
	}
	// A retry to RETRY_WAIT fires nothing.
	q2 := e.queue(inst, "retrying", task.ModePush)
	e.rule(inst, task.TriggerTask, "next", func(tr *task.Trigger) { tr.OnQueue = "retrying"; tr.OnFailed = true })
	e.addN(q2, 1, T0, nil)
	e.finish(q2, e.claim(q2, T0, 1, 60_000)[0], T0+40, fail("again"))
	if n := len(e.events()); n != 2 {
		t.Fatalf("%d events after a retryable failure", n)
	}
}

func testTriggerChainEventDoneOnce(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	work := e.queue(inst, "work", task.ModePush)
	next := e.queue(inst, "next", task.ModePull)
	rule := e.rule(inst, task.TriggerTask, "next")
	e.addN(work, 5, T0, nil)
	c := e.claim(work, T0, 5, 60_000)
	for i, cl := range c {
		e.finish(work, cl, T0+10+int64(i), succeed(`1`))
	}
	evs := e.events()
	if len(evs) != 5 {
		t.Fatalf("events %d", len(evs))
	}
	for _, c := range []struct{ limit, pending int }{{10, 5}, {2, 2}, {0, 0}} {
		b, err := e.s.TriggerEventBacklog(e.ctx, c.limit)
		want := int64(T0 + 10)
		if c.pending == 0 {
			want = 0
		}
		if err != nil || b.Pending != c.pending || b.OldestFinishedAt != want {
			t.Fatalf("backlog of %d: %+v %v, want %d pending, oldest %d", c.limit, b, err, c.pending, want-T0)
		}
	}
	named := e.add(e.newTask(next, T0, func(in *task.AddInput) { in.Name = "taken" }))[0]
	chained := e.newTask(next, T0+20, func(in *task.AddInput) { in.Depth = 1; in.Source = task.SourceTask })
	again := e.newTask(next, T0+20, func(in *task.AddInput) { in.Name = "taken" })
	gone := e.newTask(next, T0+20, func(in *task.AddInput) { in.Name = "gone" })
	gone.Queue = "no-such-queue"
	long := strings.Repeat("é", 400) // 800 bytes: kept to 500, whole characters
	end := func(limit int, plan func([]*store.TriggerEvent) []store.TriggerEventOutcome) ([]*store.TriggerEvent, []store.TriggerFireResult) {
		t.Helper()
		var got []*store.TriggerEvent
		res, err := e.s.TriggerEventsEnd(e.ctx, &store.TriggerEventsEndParams{Limit: limit, Now: T0 + 30,
			Plan: func(_ context.Context, evs []*store.TriggerEvent) ([]store.TriggerEventOutcome, error) {
				got = evs
				return plan(evs), nil
			}})
		if err != nil {
			t.Fatal(err)
		}
		return got, res
	}
	// A plan's error, or a plan of the wrong length, writes nothing.
	boom := errors.New("boom")
	if _, err := e.s.TriggerEventsEnd(e.ctx, &store.TriggerEventsEndParams{Limit: 2, Now: T0 + 30,
		Plan: func(context.Context, []*store.TriggerEvent) ([]store.TriggerEventOutcome, error) { return nil, boom }}); !errors.Is(err, boom) {
		t.Fatalf("plan's error: %v", err)
	}
	if _, err := e.s.TriggerEventsEnd(e.ctx, &store.TriggerEventsEndParams{Limit: 2, Now: T0 + 30,
		Plan: func(context.Context, []*store.TriggerEvent) ([]store.TriggerEventOutcome, error) {
			return []store.TriggerEventOutcome{{Task: chained}}, nil
		}}); !task.IsCode(err, task.CodeInternal) {
		t.Fatalf("a short plan: %v", err)
	}
	if n := len(e.events()); n != 5 {
		t.Fatalf("%d events after the failed ends, want 5", n)
	}
	// Oldest first, at most Limit: a task added, a name already taken
	// (added before: counted then), a queue gone, a refusal, and a rule gone.
	got, res := end(5, func(evs []*store.TriggerEvent) []store.TriggerEventOutcome {
		return []store.TriggerEventOutcome{{Task: chained}, {Task: again}, {Task: gone}, {Err: "DEPTH_EXCEEDED: " + long}, {}}
	})
	if len(got) != 5 || len(res) != 5 {
		t.Fatalf("ended %d events, %d results", len(got), len(res))
	}
	for i := range got {
		if got[i].Seq != evs[i].Seq {
			t.Fatalf("event %d is seq %d, want %d (oldest first)", i, got[i].Seq, evs[i].Seq)
		}
		if !res[i].Applied {
			t.Fatalf("result %d not applied: %+v", i, res[i])
		}
	}
	if r := res[0]; !r.Added || r.TaskID != chained.ID || r.Err != "" {
		t.Fatalf("added: %+v", r)
	}
	if r := res[1]; !r.Added || r.TaskID != named.ID {
		t.Fatalf("name taken: %+v, want the holder %s", r, named.ID)
	}
	if r := res[2]; r.Added || r.Err != `queue "no-such-queue" not found` {
		t.Fatalf("queue gone: %+v", r)
	}
	if r := res[3]; r.Added || r.Err != "DEPTH_EXCEEDED: "+long {
		t.Fatalf("refused: %+v", r)
	}
	if r := res[4]; r.Added || r.Err != "" || r.TaskID != "" {
		t.Fatalf("rule gone: %+v", r)
	}
	if n := len(e.events()); n != 0 {
		t.Fatalf("%d events left", n)
	}
	if b, err := e.s.TriggerEventBacklog(e.ctx, 10); err != nil || b.Pending != 0 || b.OldestFinishedAt != 0 {
		t.Fatalf("backlog of none: %+v %v", b, err)
	}
	if evs, res := end(5, nil); len(evs) != 0 || len(res) != 0 {
		t.Fatalf("nothing pending: %d events, %d results", len(evs), len(res))
	}
	page, _ := e.s.TaskList(e.ctx, &store.ListParams{InstanceID: inst.ID, Queue: "next", Limit: 10})
	byID := map[string]*task.Task{}
	for _, tk := range page.Tasks {
		byID[tk.ID] = tk
	}
	if len(page.Tasks) != 2 || byID[named.ID] == nil || byID[chained.ID] == nil || byID[chained.ID].Depth != 1 {
		t.Fatalf("tasks of next: %d, want %s and %s (depth 1)", len(page.Tasks), named.ID, chained.ID)
	}
	tr, _ := e.s.TriggerGet(e.ctx, store.TriggerRef{InstanceID: inst.ID, ID: rule.ID})
	want := store.TruncateMsg("DEPTH_EXCEEDED: " + long)
	if tr.Fired != 1 || tr.ErrorCount != 2 || tr.LastError != want || tr.LastErrorAt != T0+30 || !utf8.ValidString(tr.LastError) || len(want) > 500 {
		t.Fatalf("rule: fired %d, errors %d, last error %q at %d", tr.Fired, tr.ErrorCount, tr.LastError, tr.LastErrorAt)
	}
}

// testTriggerChainEventsOnce: two calls ending events at once (the second
// from inside the first's plan) end each event once between them.
func testTriggerChainEventsOnce(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	work := e.queue(inst, "work", task.ModePush)
	next := e.queue(inst, "next", task.ModePull)
	e.rule(inst, task.TriggerTask, "next")
	const n = 6
	e.addN(work, n, T0, nil)
	for i, cl := range e.claim(work, T0, n, 60_000) {
		e.finish(work, cl, T0+10+int64(i), succeed(`1`))
	}
	plan := func(evs []*store.TriggerEvent) []store.TriggerEventOutcome {
		outs := make([]store.TriggerEventOutcome, len(evs))
		for i := range outs {
			outs[i].Task = e.newTask(next, T0+20)
		}
		return outs
	}
	applied := 0
	count := func(res []store.TriggerFireResult) {
		for _, r := range res {
			if r.Applied {
				applied++
			}
		}
	}
	outer, err := e.s.TriggerEventsEnd(e.ctx, &store.TriggerEventsEndParams{Limit: 2, Now: T0 + 20,
		Plan: func(ctx context.Context, evs []*store.TriggerEvent) ([]store.TriggerEventOutcome, error) {
			inner, err := e.s.TriggerEventsEnd(ctx, &store.TriggerEventsEndParams{Limit: n, Now: T0 + 20,
				Plan: func(_ context.Context, evs []*store.TriggerEvent) ([]store.TriggerEventOutcome, error) {
					return plan(evs), nil
				}})
			if err != nil {
				return nil, err
			}
			count(inner)
			return plan(evs), nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	count(outer)
	if applied != n {
		t.Fatalf("%d events applied between the two calls, want %d", applied, n)
	}
	if left := len(e.events()); left != 0 {
		t.Fatalf("%d events left", left)
	}
	page, _ := e.s.TaskList(e.ctx, &store.ListParams{InstanceID: inst.ID, Queue: "next", Limit: 20})
	if len(page.Tasks) != n {
		t.Fatalf("%d tasks added, want %d", len(page.Tasks), n)
	}
}

func testTriggerQueueDelete(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	work := e.queue(inst, "work", task.ModePush)
	e.queue(inst, "next", task.ModePull)
	e.queue(inst, "keep", task.ModePull)
	into := e.rule(inst, task.TriggerHook, "next")
	watch := e.rule(inst, task.TriggerTask, "keep") // watches work
	keep := e.rule(inst, task.TriggerSchedule, "keep")
	e.addN(work, 1, T0, nil)
	e.finish(work, e.claim(work, T0, 1, 60_000)[0], T0+10, succeed(`1`))
	if n := len(e.events()); n != 1 {
		t.Fatalf("events %d", n)
	}
	if _, err := e.s.QueueDelete(e.ctx, store.QueueRef{InstanceID: inst.ID, Name: "next"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.s.QueueDelete(e.ctx, store.QueueRef{InstanceID: inst.ID, Name: "work"}); err != nil {
		t.Fatal(err)
	}
	for _, gone := range []*task.Trigger{into, watch} {
		_, err := e.s.TriggerGet(e.ctx, store.TriggerRef{InstanceID: inst.ID, ID: gone.ID})
		wantCode(t, err, task.CodeNotFound, "rule of a deleted queue")
	}
	if n := len(e.events()); n != 0 {
		t.Fatalf("%d events of a deleted rule left", n)
	}
	if _, err := e.s.TriggerGet(e.ctx, store.TriggerRef{InstanceID: inst.ID, ID: keep.ID}); err != nil {
		t.Fatalf("unrelated rule: %v", err)
	}
	if err := e.s.InstanceDelete(e.ctx, store.InstanceRef{Org: "acme", Name: "jobs"}); err != nil {
		t.Fatal(err)
	}
	_, err := e.s.TriggerGet(e.ctx, store.TriggerRef{InstanceID: inst.ID, ID: keep.ID})
	wantCode(t, err, task.CodeNotFound, "rule of a deleted instance")
	if next, _ := e.s.TriggerNextTick(e.ctx); next != 0 {
		t.Fatalf("next tick %d after the instance went", next)
	}
}
