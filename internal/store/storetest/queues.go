package storetest

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

var queueCases = []testCase{
	{"CreateGet", testQueueCreateGet},
	{"Exists", testQueueExists},
	{"DeadLetterMustExist", testQueueDeadLetterMustExist},
	{"List", testQueueList},
	{"Update", testQueueUpdate},
	{"Delete", testQueueDelete},
	{"DeleteUnlinksDeadLetter", testQueueDeleteUnlinksDeadLetter},
	{"CreateNeedsInstance", testQueueCreateNeedsInstance},
	{"Purge", testQueuePurge},
	{"PurgeInFlight", testQueuePurgeInFlight},
	{"Counts", testQueueCounts},
	{"CountsLimit", testQueueCountsLimit},
	{"Activity", testQueueActivity},
}

func testQueueCreateGet(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	e.queue(inst, "dead", task.ModePull)
	q := &task.Queue{
		InstanceID:        inst.ID,
		Name:              "emails",
		Mode:              task.ModePush,
		Target:            &task.Target{Function: "app/send-receipt"},
		RatePerSecond:     2.5,
		MaxConcurrent:     4,
		MaxAttempts:       3,
		MinBackoffSeconds: 0.5,
		MaxBackoffSeconds: 90.25,
		MaxDoublings:      2,
		MaxAgeSeconds:     3600,
		DeadlineSeconds:   30,
		DeadLetterQueue:   "dead",
		TargetControl:     false,
		Paused:            true,
		CreatedAt:         T0 + 9,
	}
	if err := e.s.QueueCreate(e.ctx, q); err != nil {
		t.Fatal(err)
	}
	got, err := e.s.QueueGet(e.ctx, store.QueueRef{InstanceID: inst.ID, Name: "emails"})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, q) {
		t.Fatalf("QueueGet = %+v, want %+v", got, q)
	}
	pull := e.queue(inst, "pulled", task.ModePull)
	got, err = e.s.QueueGet(e.ctx, store.QueueRef{InstanceID: inst.ID, Name: "pulled"})
	if err != nil || !reflect.DeepEqual(got, pull) {
		t.Fatalf("QueueGet(pull) = %+v, %v; want %+v", got, err, pull)
	}
	_, err = e.s.QueueGet(e.ctx, store.QueueRef{InstanceID: inst.ID, Name: "nope"})
	wantCode(t, err, task.CodeNotFound, "QueueGet(missing)")
	other := e.instance("globex", "jobs")
	_, err = e.s.QueueGet(e.ctx, store.QueueRef{InstanceID: other.ID, Name: "emails"})
	wantCode(t, err, task.CodeNotFound, "QueueGet(other instance)")
}

func testQueueExists(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	e.queue(inst, "emails", task.ModePull)
	dup := task.NewQueue(inst.ID, "emails", task.ModePush)
	dup.Target = hook
	wantCode(t, e.s.QueueCreate(e.ctx, dup), task.CodeQueueExists, "QueueCreate(duplicate)")
	got, _ := e.s.QueueGet(e.ctx, store.QueueRef{InstanceID: inst.ID, Name: "emails"})
	if got.Mode != task.ModePull {
		t.Fatal("the refused create overwrote the queue")
	}
	def := task.NewQueue(inst.ID, task.DefaultQueueName, task.ModePush)
	wantCode(t, e.s.QueueCreate(e.ctx, def), task.CodeQueueExists, "QueueCreate(default)")
	// The same name in another instance is another queue.
	other := e.instance("acme", "other")
	e.queue(other, "emails", task.ModePush)
}

func testQueueDeadLetterMustExist(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	other := e.instance("acme", "other")
	e.queue(other, "dead", task.ModePull) // exists, but in another instance

	q := task.NewQueue(inst.ID, "emails", task.ModePull)
	q.DeadLetterQueue = "dead"
	err := e.s.QueueCreate(e.ctx, q)
	wantDeadLetterField(t, err, "QueueCreate")
	if _, err := e.s.QueueGet(e.ctx, store.QueueRef{InstanceID: inst.ID, Name: "emails"}); !task.IsCode(err, task.CodeNotFound) {
		t.Fatalf("refused queue was stored: %v", err)
	}

	e.queue(inst, "dead", task.ModePull)
	e.queue(inst, "emails", task.ModePull, func(q *task.Queue) { q.DeadLetterQueue = "dead" })

	_, err = e.s.QueueUpdate(e.ctx, store.QueueRef{InstanceID: inst.ID, Name: "emails"}, func(q *task.Queue) error {
		q.DeadLetterQueue = "missing"
		q.MaxAttempts = 77
		return nil
	})
	wantDeadLetterField(t, err, "QueueUpdate")
	got, _ := e.s.QueueGet(e.ctx, store.QueueRef{InstanceID: inst.ID, Name: "emails"})
	if got.DeadLetterQueue != "dead" || got.MaxAttempts == 77 {
		t.Fatalf("refused update was written: %+v", got)
	}
	e.queue(inst, "dead2", task.ModePush)
	got, err = e.s.QueueUpdate(e.ctx, store.QueueRef{InstanceID: inst.ID, Name: "emails"}, func(q *task.Queue) error {
		q.DeadLetterQueue = "dead2"
		return nil
	})
	if err != nil || got.DeadLetterQueue != "dead2" {
		t.Fatalf("QueueUpdate to an existing DLQ = %+v, %v", got, err)
	}
	got, err = e.s.QueueUpdate(e.ctx, store.QueueRef{InstanceID: inst.ID, Name: "emails"}, func(q *task.Queue) error {
		q.DeadLetterQueue = ""
		return nil
	})
	if err != nil || got.DeadLetterQueue != "" {
		t.Fatalf("QueueUpdate clearing the DLQ = %+v, %v", got, err)
	}

	// A deadLetterQueue that leads back: refused on update and on create,
	// with the cycle named; a chain that ends, or a loop further on that
	// does not pass through the queue, is not.
	e.queue(inst, "c", task.ModePull, func(q *task.Queue) { q.DeadLetterQueue = "emails" })
	e.queue(inst, "b", task.ModePull, func(q *task.Queue) { q.DeadLetterQueue = "c" })
	_, err = e.s.QueueUpdate(e.ctx, store.QueueRef{InstanceID: inst.ID, Name: "emails"}, func(q *task.Queue) error {
		q.DeadLetterQueue = "b"
		return nil
	})
	wantDeadLetterField(t, err, "QueueUpdate closing a cycle")
	if !strings.Contains(err.Error(), "emails → b → c → emails") {
		t.Fatalf("the refusal does not name the cycle: %v", err)
	}
	if got, _ := e.s.QueueGet(e.ctx, store.QueueRef{InstanceID: inst.ID, Name: "emails"}); got.DeadLetterQueue != "" {
		t.Fatalf("the refused cycle was written: %+v", got)
	}
	_, err = e.s.QueueUpdate(e.ctx, store.QueueRef{InstanceID: inst.ID, Name: "emails"}, func(q *task.Queue) error {
		q.DeadLetterQueue = "dead"
		return nil
	})
	if err != nil {
		t.Fatalf("a chain that ends (emails → dead) was refused: %v", err)
	}
	_, err = e.s.QueueUpdate(e.ctx, store.QueueRef{InstanceID: inst.ID, Name: "dead"}, func(q *task.Queue) error {
		q.DeadLetterQueue = "b" // dead → b → c → emails → dead
		return nil
	})
	wantDeadLetterField(t, err, "QueueUpdate closing a longer cycle")
	e.queue(inst, "x", task.ModePull, func(q *task.Queue) { q.DeadLetterQueue = "b" }) // into b → c → emails → dead: ends
}

func wantDeadLetterField(t *testing.T, err error, what string) {
	t.Helper()
	wantCode(t, err, task.CodeInvalidArgument, what)
	var te *task.Error
	if !errors.As(err, &te) || te.Field != "deadLetterQueue" {
		t.Fatalf("%s: error %+v does not name deadLetterQueue in Field", what, err)
	}
}

func testQueueList(t *testing.T, e *env) {
	a := e.instance("acme", "jobs")
	b := e.instance("globex", "jobs")
	for _, n := range []string{"zeta", "alpha", "mid"} {
		e.queue(a, n, task.ModePull)
	}
	e.queue(b, "beta", task.ModePull)
	list, err := e.s.QueueList(e.ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, q := range list {
		names = append(names, q.Name)
	}
	if !reflect.DeepEqual(names, []string{"alpha", "default", "mid", "zeta"}) {
		t.Fatalf("QueueList = %v", names)
	}
	all, err := e.s.QueueListAll(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, q := range all {
		seen[q.InstanceID+"/"+q.Name] = true
	}
	for _, k := range []string{a.ID + "/alpha", a.ID + "/default", a.ID + "/mid", a.ID + "/zeta", b.ID + "/beta", b.ID + "/default"} {
		if !seen[k] {
			t.Fatalf("QueueListAll misses %s", k)
		}
	}
	if len(all) != 6 {
		t.Fatalf("QueueListAll has %d queues, want 6", len(all))
	}
}

func testQueueUpdate(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	q := e.queue(inst, "emails", task.ModePush)
	got, err := e.s.QueueUpdate(e.ctx, store.QueueRef{InstanceID: inst.ID, Name: "emails"}, func(q *task.Queue) error {
		q.MaxAttempts = 5
		q.Paused = true
		q.Target = &task.Target{Channel: "room-1"}
		q.RatePerSecond = 0.5
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := *q
	want.MaxAttempts, want.Paused, want.Target, want.RatePerSecond = 5, true, &task.Target{Channel: "room-1"}, 0.5
	if !reflect.DeepEqual(got, &want) {
		t.Fatalf("QueueUpdate = %+v, want %+v", got, want)
	}
	stored, _ := e.s.QueueGet(e.ctx, store.QueueRef{InstanceID: inst.ID, Name: "emails"})
	if !reflect.DeepEqual(stored, &want) {
		t.Fatalf("stored = %+v, want %+v", stored, want)
	}
	boom := errors.New("boom")
	_, err = e.s.QueueUpdate(e.ctx, store.QueueRef{InstanceID: inst.ID, Name: "emails"}, func(q *task.Queue) error {
		q.MaxAttempts = 9
		return boom
	})
	if err != boom {
		t.Fatalf("QueueUpdate fn error = %v, want it unchanged", err)
	}
	stored, _ = e.s.QueueGet(e.ctx, store.QueueRef{InstanceID: inst.ID, Name: "emails"})
	if stored.MaxAttempts != 5 {
		t.Fatal("fn error still wrote")
	}
	_, err = e.s.QueueUpdate(e.ctx, store.QueueRef{InstanceID: inst.ID, Name: "nope"}, func(*task.Queue) error { return nil })
	wantCode(t, err, task.CodeNotFound, "QueueUpdate(missing)")
	other := e.instance("globex", "jobs")
	_, err = e.s.QueueUpdate(e.ctx, store.QueueRef{InstanceID: other.ID, Name: "emails"}, func(*task.Queue) error { return nil })
	wantCode(t, err, task.CodeNotFound, "QueueUpdate(other instance)")
}

func testQueueDelete(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	q := e.queue(inst, "emails", task.ModePull)
	keep := e.queue(inst, "keep", task.ModePull)
	gone := e.addN(q, 4, T0, nil)
	kept := e.addN(keep, 2, T0, nil)
	n, err := e.s.QueueDelete(e.ctx, store.QueueRef{InstanceID: inst.ID, Name: "emails"})
	if err != nil || n != 4 {
		t.Fatalf("QueueDelete = %d, %v; want 4", n, err)
	}
	if _, err := e.s.QueueGet(e.ctx, store.QueueRef{InstanceID: inst.ID, Name: "emails"}); !task.IsCode(err, task.CodeNotFound) {
		t.Fatalf("QueueGet after delete: %v", err)
	}
	for _, tk := range gone {
		if _, err := e.s.TaskGet(e.ctx, store.TaskRef{InstanceID: inst.ID, ID: tk.ID}); !task.IsCode(err, task.CodeNotFound) {
			t.Fatalf("task after queue delete: %v", err)
		}
	}
	for _, tk := range kept {
		e.get(inst.ID, tk.ID)
	}
	_, err = e.s.QueueDelete(e.ctx, store.QueueRef{InstanceID: inst.ID, Name: "emails"})
	wantCode(t, err, task.CodeNotFound, "QueueDelete(missing)")
	// The name can be used again, empty.
	e.queue(inst, "emails", task.ModePull)
	page, err := e.s.TaskList(e.ctx, &store.ListParams{InstanceID: inst.ID, Queue: "emails", Limit: 10})
	if err != nil || len(page.Tasks) != 0 {
		t.Fatalf("recreated queue lists %v, %v", page, err)
	}
}

func testQueuePurge(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	q := e.queue(inst, "emails", task.ModePull)
	keep := e.queue(inst, "keep", task.ModePull)
	named := e.newTask(q, T0, func(in *task.AddInput) { in.Name = "once" })
	e.add(named)
	e.addN(q, 2, T0, nil)
	kept := e.addN(keep, 2, T0, nil)
	n, err := e.s.QueuePurge(e.ctx, store.QueueRef{InstanceID: inst.ID, Name: "emails"})
	if err != nil || n != 3 {
		t.Fatalf("QueuePurge = %d, %v; want 3", n, err)
	}
	if _, err := e.s.QueueGet(e.ctx, store.QueueRef{InstanceID: inst.ID, Name: "emails"}); err != nil {
		t.Fatalf("queue after purge: %v", err)
	}
	wantCounts(t, e, q, map[task.State]int{})
	for _, tk := range kept {
		e.get(inst.ID, tk.ID)
	}
	// The purged name is free again.
	e.add(e.newTask(q, T0, func(in *task.AddInput) { in.Name = "once" }))
	_, err = e.s.QueuePurge(e.ctx, store.QueueRef{InstanceID: inst.ID, Name: "nope"})
	wantCode(t, err, task.CodeNotFound, "QueuePurge(missing)")
}

// testQueuePurgeInFlight: a task whose attempt is in flight is counted by
// the purge but stays RUNNING, its slot under the queue's cap and its name
// held, its lease renewed by heartbeats, until the attempt's answer
// removes it (answered ErrPurged); one never answered is removed when the
// rescuer ends it.
func testQueuePurgeInFlight(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	q := e.queue(inst, "emails", task.ModePull, func(q *task.Queue) { q.MaxConcurrent = 1 })
	ref := store.QueueRef{InstanceID: inst.ID, Name: q.Name}
	e.add(e.newTask(q, T0, func(in *task.AddInput) { in.Name = "once" }))
	e.addN(q, 2, T0, nil)
	capped := func(now int64) []*task.Task {
		return e.claimWith(q, now, 5, func(p *store.ClaimParams) { p.MaxRunning = 1 })
	}
	running := capped(T0)
	if len(running) != 1 || running[0].Name != "once" {
		t.Fatalf("claimed %v, want the named task", ids(running))
	}
	tk := running[0]
	lease := tk.LeaseID
	if n, err := e.s.QueuePurge(e.ctx, ref); err != nil || n != 3 {
		t.Fatalf("QueuePurge = %d, %v; want 3", n, err)
	}
	wantCounts(t, e, q, map[task.State]int{task.Running: 1})
	if n, err := e.s.QueuePurge(e.ctx, ref); err != nil || n != 0 {
		t.Fatalf("QueuePurge again = %d, %v; want 0 (the attempt in flight is counted once)", n, err)
	}
	// Its slot and its name are held.
	e.addN(q, 1, T0, nil)
	if got := capped(T0 + 1); len(got) != 0 {
		t.Fatalf("claimed %v beside the purged attempt under maxConcurrent 1", ids(got))
	}
	res, err := e.s.TaskAdd(e.ctx, []*task.Task{e.newTask(q, T0, func(in *task.AddInput) { in.Name = "once" })})
	if err != nil || len(res) != 1 {
		t.Fatalf("TaskAdd(once) = %v, %v", res, err)
	}
	wantCode(t, res[0].Err, task.CodeTaskExists, "adding the name of a purged attempt in flight")
	// A heartbeat under the attempt's lease renews it.
	if n, err := e.s.TaskHeartbeat(e.ctx, []store.LeaseRef{{InstanceID: inst.ID, ID: tk.ID, LeaseID: lease}}, T0+5_000); err != nil || n != 1 {
		t.Fatalf("TaskHeartbeat = %d, %v; want 1", n, err)
	}
	if got := e.get(inst.ID, tk.ID); got.State != task.Running || got.LeaseExpiresAt != T0+5_000 {
		t.Fatalf("purged attempt in flight: %s until %d", got.State, got.LeaseExpiresAt)
	}
	// The attempt's answer removes it and frees the slot and the name.
	if _, err := tk.Finish(q, T0+2, succeed(`{}`)); err != nil {
		t.Fatal(err)
	}
	errs, err := e.s.TaskFinish(e.ctx, []*store.FinishParams{{Task: tk, LeaseID: lease}})
	if err != nil || len(errs) != 1 {
		t.Fatalf("TaskFinish = %v, %v", errs, err)
	}
	wantCode(t, errs[0], task.CodeLeaseLost, "the answer of a purged attempt")
	if !strings.Contains(errs[0].Error(), "purged") {
		t.Fatalf("the answer of a purged attempt: %v, want it to say the task was purged", errs[0])
	}
	_, err = e.s.TaskGet(e.ctx, store.TaskRef{InstanceID: inst.ID, ID: tk.ID})
	wantCode(t, err, task.CodeNotFound, "a purged task after its answer")
	if got := capped(T0 + 3); len(got) != 1 {
		t.Fatalf("claimed %d after the purged attempt ended, want 1", len(got))
	}
	e.add(e.newTask(q, T0, func(in *task.AddInput) { in.Name = "once" }))

	// An attempt that never answers: the rescuer's write, fenced on the
	// purged lease it read, removes the task rather than retry it.
	if n, err := e.s.QueuePurge(e.ctx, ref); err != nil || n != 2 {
		t.Fatalf("QueuePurge = %d, %v; want 2", n, err)
	}
	expired, err := e.s.TaskExpired(e.ctx, T0+1_000_000, 10)
	if err != nil || len(expired) != 1 || !task.IsPurgedLease(expired[0].LeaseID) {
		t.Fatalf("TaskExpired = %v, %v; want the purged attempt", expired, err)
	}
	gone := expired[0]
	fence := gone.LeaseID
	if _, err := gone.Finish(q, T0+1_000_000, task.Outcome{Status: task.AttemptExpired, Error: "lease expired"}); err != nil {
		t.Fatal(err)
	}
	// In one call with another queue's finish, and with a dead-letter copy
	// to add: the purged task goes, without its copy; the other is stored.
	dead := e.queue(inst, "dead", task.ModePull)
	copyOf := gone.DeadLetter(dead, T0+1_000_000)
	copyOf.ID = e.id("copy")
	other := e.queue(inst, "other", task.ModePull)
	e.addN(other, 1, T0, nil)
	mine := e.claim(other, T0, 1, 1000)[0]
	mineLease := mine.LeaseID
	if _, err := mine.Finish(other, T0+2, succeed(`{}`)); err != nil {
		t.Fatal(err)
	}
	errs, err = e.s.TaskFinish(e.ctx, []*store.FinishParams{{Task: gone, LeaseID: fence, DeadLetter: copyOf}, {Task: mine, LeaseID: mineLease}})
	if err != nil || len(errs) != 2 {
		t.Fatalf("TaskFinish(rescue) = %v, %v", errs, err)
	}
	wantCode(t, errs[0], task.CodeLeaseLost, "the rescue of a purged attempt")
	if errs[1] != nil {
		t.Fatalf("the other finish beside a purged one: %v", errs[1])
	}
	wantCounts(t, e, q, map[task.State]int{})
	wantCounts(t, e, dead, map[task.State]int{})
	if got := e.get(inst.ID, mine.ID); got.State != task.Succeeded {
		t.Fatalf("the other task is %s", got.State)
	}
}

// wantCounts checks q's counts: want's states, 0 for the others.
func wantCounts(t *testing.T, e *env, q *task.Queue, want map[task.State]int) {
	t.Helper()
	counts, err := e.s.QueueCounts(e.ctx, store.QueueRef{InstanceID: q.InstanceID, Name: q.Name}, 100)
	if err != nil {
		t.Fatal(err)
	}
	for s, c := range counts {
		if c != want[s] {
			t.Fatalf("count %s = %d, want %d", s, c, want[s])
		}
	}
}

func testQueueCounts(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	q := e.queue(inst, "work", task.ModePull, func(q *task.Queue) { q.MaxAttempts = 1 })
	r := e.queue(inst, "retry", task.ModePull)
	other := e.queue(inst, "other", task.ModePull)
	e.addN(other, 3, T0, nil)

	e.addN(q, 9, T0, nil)
	claimed := e.claim(q, T0, 6, 60_000) // 3 stay PENDING
	e.finish(q, claimed[0], T0+1, succeed(`1`))
	e.finish(q, claimed[1], T0+1, succeed(`2`))
	e.finish(q, claimed[2], T0+1, fail("x")) // maxAttempts 1: FAILED
	pending := e.addN(q, 1, T0, nil)[0]
	if _, err := e.s.TaskUpdate(e.ctx, store.TaskRef{InstanceID: inst.ID, ID: pending.ID}, func(t *task.Task) error { return t.Cancel(T0 + 2) }); err != nil {
		t.Fatal(err)
	}
	// claimed[3:] stay RUNNING: 3.
	e.addN(r, 2, T0, nil)
	rc := e.claim(r, T0, 2, 60_000)
	e.finish(r, rc[0], T0+1, fail("again"))

	counts, err := e.s.QueueCounts(e.ctx, store.QueueRef{InstanceID: inst.ID, Name: "work"}, 10_000)
	if err != nil {
		t.Fatal(err)
	}
	want := map[task.State]int{task.Pending: 3, task.Running: 3, task.Succeeded: 2, task.Failed: 1, task.Cancelled: 1}
	checkCounts(t, counts, want)
	counts, err = e.s.QueueCounts(e.ctx, store.QueueRef{InstanceID: inst.ID, Name: "retry"}, 10_000)
	if err != nil {
		t.Fatal(err)
	}
	checkCounts(t, counts, map[task.State]int{task.RetryWait: 1, task.Running: 1})
}

func checkCounts(t *testing.T, got, want map[task.State]int) {
	t.Helper()
	for _, s := range task.States {
		if got[s] != want[s] {
			t.Fatalf("counts = %v, want %v", got, want)
		}
	}
	for s := range got {
		if !s.Valid() {
			t.Fatalf("counts has unknown state %q", s)
		}
	}
}

func testQueueCountsLimit(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	q := e.queue(inst, "work", task.ModePull)
	e.addN(q, 12, T0, nil)
	e.claim(q, T0, 3, 60_000)
	counts, err := e.s.QueueCounts(e.ctx, store.QueueRef{InstanceID: inst.ID, Name: "work"}, 5)
	if err != nil {
		t.Fatal(err)
	}
	checkCounts(t, counts, map[task.State]int{task.Pending: 5, task.Running: 3})
	counts, err = e.s.QueueCounts(e.ctx, store.QueueRef{InstanceID: inst.ID, Name: "work"}, 9)
	if err != nil {
		t.Fatal(err)
	}
	checkCounts(t, counts, map[task.State]int{task.Pending: 9, task.Running: 3})
}

// testQueueCreateNeedsInstance: a queue of an instance that does not exist
// is NOT_FOUND.
func testQueueCreateNeedsInstance(t *testing.T, e *env) {
	e.instance("acme", "jobs")
	q := task.NewQueue("nope", "work", task.ModePull)
	q.CreatedAt = T0
	wantCode(t, e.s.QueueCreate(e.ctx, q), task.CodeNotFound, "QueueCreate in a missing instance")
}

// testQueueDeleteUnlinksDeadLetter: deleting a dead-letter queue clears it
// from the queues that named it, and a failure that still carries a copy
// for it (the engine's view was older) keeps no copy and loses nothing
// else.
func testQueueDeleteUnlinksDeadLetter(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	dlq := e.queue(inst, "dead", task.ModePull)
	q := e.queue(inst, "work", task.ModePull, func(q *task.Queue) { q.DeadLetterQueue, q.MaxAttempts = "dead", 1 })
	tk := e.add(e.newTask(q, T0))[0]
	c := e.claim(q, T0, 1, 1000)
	if len(c) != 1 {
		t.Fatalf("claimed %d tasks, want 1", len(c))
	}
	if _, err := e.s.QueueDelete(e.ctx, store.QueueRef{InstanceID: inst.ID, Name: "dead"}); err != nil {
		t.Fatal(err)
	}
	got, err := e.s.QueueGet(e.ctx, store.QueueRef{InstanceID: inst.ID, Name: "work"})
	if err != nil || got.DeadLetterQueue != "" {
		t.Fatalf("work after its dead-letter queue was deleted: %+v, %v", got, err)
	}
	lease := c[0].LeaseID
	if _, err := c[0].Finish(q, T0+1, fail("x")); err != nil {
		t.Fatal(err)
	}
	dl := c[0].DeadLetter(dlq, T0+1)
	dl.ID = e.id("dl")
	res, err := e.s.TaskFinish(e.ctx, []*store.FinishParams{{Task: c[0], LeaseID: lease, DeadLetter: dl}})
	if err != nil || len(res) != 1 || res[0] != nil {
		t.Fatalf("TaskFinish = %v, %v", res, err)
	}
	if got := e.get(inst.ID, tk.ID); got.State != task.Failed {
		t.Fatalf("failed task is %s, want FAILED", got.State)
	}
	_, err = e.s.TaskGet(e.ctx, store.TaskRef{InstanceID: inst.ID, ID: dl.ID})
	wantCode(t, err, task.CodeNotFound, "copy into a deleted queue")
}
