package storetest

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

var finishCases = []testCase{
	{"Success", testFinishSuccess},
	{"FailureHistory", testFinishFailureHistory},
	{"StaleLease", testFinishStaleLease},
	{"BatchInOrder", testFinishBatchInOrder},
	{"MixedOutcomes", testFinishMixedOutcomes},
	{"DeadLetter", testFinishDeadLetter},
	{"DeadLetterNotOnLeaseLost", testFinishDeadLetterNotOnLeaseLost},
	{"ExtendAndRelease", testFinishExtendAndRelease},
	{"SameTaskTwiceInBatch", testFinishSameTaskTwice},
	{"LargeBatch", testFinishLargeBatch},
	{"LiveAtFence", testFinishLiveAt},
}

func testFinishSuccess(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	q := e.queue(inst, "work", task.ModePush)
	e.addN(q, 1, T0, nil)
	c := e.claim(q, T0, 1, 60_000)[0]
	want := *c
	if _, err := want.Finish(q, T0+70, succeed(`{"id": 9}`)); err != nil {
		t.Fatal(err)
	}
	failed, got := e.finish(q, c, T0+70, succeed(`{"id": 9}`))
	if failed {
		t.Fatal("success reported failed")
	}
	sameTask(t, "stored", got, &want)
	if got.State != task.Succeeded || got.FinishedAt != T0+70 || got.LeaseID != "" || got.LeaseExpiresAt != 0 || got.DeadlineAt != 0 {
		t.Fatalf("stored = %+v", got)
	}
	wantAttempts := []task.Attempt{{Attempt: 1, Status: task.AttemptSucceeded, StartedAt: T0, EndedAt: T0 + 70, HTTPStatus: 200}}
	if len(got.Attempts) != 1 || got.Attempts[0] != wantAttempts[0] {
		t.Fatalf("attempts = %+v, want %+v", got.Attempts, wantAttempts)
	}
}

func testFinishFailureHistory(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	q := e.queue(inst, "work", task.ModePush, func(q *task.Queue) { q.MaxAttempts = 3 })
	tk := e.addN(q, 1, T0, nil)[0]
	now := T0
	var history []task.Attempt
	for i := 1; i <= 3; i++ {
		c := e.claim(q, now, 1, 60_000)
		if len(c) != 1 {
			t.Fatalf("attempt %d: nothing claimed at %d", i, now)
		}
		if c[0].Attempt != i || len(c[0].Attempts) != i-1 {
			t.Fatalf("attempt %d: claimed attempt %d with %d in history", i, c[0].Attempt, len(c[0].Attempts))
		}
		history = append(history, task.Attempt{Attempt: i, Status: task.AttemptFailed, StartedAt: now, EndedAt: now + 5, HTTPStatus: 500, Error: "boom"})
		failed, got := e.finish(q, c[0], now+5, fail("boom"))
		if len(got.Attempts) != i {
			t.Fatalf("after attempt %d: history %+v", i, got.Attempts)
		}
		for j, a := range got.Attempts {
			if a != history[j] {
				t.Fatalf("attempt %d = %+v, want %+v", j, a, history[j])
			}
		}
		if i < 3 {
			wantRun := now + 5 + task.Backoff(i, q.Backoff()).Milliseconds()
			if failed || got.State != task.RetryWait || got.RunAt != wantRun || got.LastError != "boom" {
				t.Fatalf("after attempt %d: failed=%v %+v", i, failed, got)
			}
			now = got.RunAt
		} else if !failed || got.State != task.Failed || got.FinishedAt != now+5 {
			t.Fatalf("after the last attempt: failed=%v %+v", failed, got)
		}
	}
	if got := e.get(inst.ID, tk.ID); got.Attempt != 3 {
		t.Fatalf("attempt counter %d", got.Attempt)
	}
}

func testFinishStaleLease(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	q := e.queue(inst, "work", task.ModePull)
	e.addN(q, 1, T0, nil)
	first := e.claim(q, T0, 1, 1000)[0]
	before := e.get(inst.ID, first.ID)

	// A wrong lease id.
	wrong := *first
	if _, err := wrong.Finish(q, T0+10, succeed(`1`)); err != nil {
		t.Fatal(err)
	}
	res, err := e.s.TaskFinish(e.ctx, []*store.FinishParams{{Task: &wrong, LeaseID: "not-the-lease"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 {
		t.Fatalf("%d results", len(res))
	}
	wantCode(t, res[0], task.CodeLeaseLost, "TaskFinish(wrong lease)")
	sameTask(t, "after a refused finish", e.get(inst.ID, first.ID), before)

	// The lease expires, the rescuer ends the attempt, the task is claimed
	// again: the first holder's lease is stale.
	exp, err := e.s.TaskExpired(e.ctx, T0+1000, 10)
	if err != nil || len(exp) != 1 {
		t.Fatalf("TaskExpired = %v, %v", exp, err)
	}
	e.finish(q, exp[0], T0+1000, task.Outcome{Status: task.AttemptExpired})
	second := e.claim(q, T0+100_000, 1, 1000)
	if len(second) != 1 || second[0].LeaseID == first.LeaseID {
		t.Fatalf("second claim = %+v", second)
	}
	before = e.get(inst.ID, first.ID)
	stale := *first
	if _, err := stale.Finish(q, T0+100_001, succeed(`1`)); err != nil {
		t.Fatal(err)
	}
	res, err = e.s.TaskFinish(e.ctx, []*store.FinishParams{{Task: &stale, LeaseID: first.LeaseID}})
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, res[0], task.CodeLeaseLost, "TaskFinish(stale lease)")
	sameTask(t, "after a stale finish", e.get(inst.ID, first.ID), before)

	// Once finished, the lease that finished it is spent too.
	e.finish(q, second[0], T0+100_002, succeed(`2`))
	again := *second[0]
	again.State = task.Running
	res, err = e.s.TaskFinish(e.ctx, []*store.FinishParams{{Task: &again, LeaseID: second[0].LeaseID}})
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, res[0], task.CodeLeaseLost, "TaskFinish(finished task)")
	if got := e.get(inst.ID, first.ID); got.State != task.Succeeded || string(got.Result) != `2` {
		t.Fatalf("finished task changed: %+v", got)
	}
}

func testFinishBatchInOrder(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	q := e.queue(inst, "work", task.ModePull)
	e.addN(q, 4, T0, nil)
	c := e.claim(q, T0, 4, 60_000)
	var ps []*store.FinishParams
	for i, tk := range c {
		lease := tk.LeaseID
		if _, err := tk.Finish(q, T0+10, succeed(`"ok"`)); err != nil {
			t.Fatal(err)
		}
		if i == 1 {
			lease = "stale"
		}
		ps = append(ps, &store.FinishParams{Task: tk, LeaseID: lease})
	}
	res, err := e.s.TaskFinish(e.ctx, ps)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 4 || res[0] != nil || res[2] != nil || res[3] != nil {
		t.Fatalf("results = %v", res)
	}
	wantCode(t, res[1], task.CodeLeaseLost, "TaskFinish[1]")
	for i, tk := range c {
		got := e.get(inst.ID, tk.ID)
		if wantState := map[bool]task.State{true: task.Running, false: task.Succeeded}[i == 1]; got.State != wantState {
			t.Fatalf("task %d state %s, want %s", i, got.State, wantState)
		}
	}
	res, err = e.s.TaskFinish(e.ctx, nil)
	if err != nil || len(res) != 0 {
		t.Fatalf("TaskFinish(nil) = %v, %v", res, err)
	}
}

// testFinishMixedOutcomes finishes successes, failures and releases in
// one call, some under stale leases: each answer and each stored row is
// its own entry's, whatever statements a backend splits the call into.
func testFinishMixedOutcomes(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	q := e.queue(inst, "work", task.ModePull, func(q *task.Queue) { q.MaxAttempts = 5 })
	e.addN(q, 6, T0, nil)
	c := e.claim(q, T0, 6, 60_000)
	outcomes := []task.Outcome{fail("boom"), succeed(`{"n":1}`), succeed(`{"n":2}`),
		{Status: task.AttemptReleased, Delay: time.Second}, succeed(`{"n":4}`), fail("late")}
	stale := map[int]bool{2: true, 5: true}
	var ps []*store.FinishParams
	want := make([]*task.Task, len(c))
	for i, tk := range c {
		before := e.get(inst.ID, tk.ID)
		lease := tk.LeaseID
		if _, err := tk.Finish(q, T0+10+int64(i), outcomes[i]); err != nil {
			t.Fatal(err)
		}
		want[i] = tk
		if stale[i] {
			lease, want[i] = "stale", before
		}
		ps = append(ps, &store.FinishParams{Task: tk, LeaseID: lease})
	}
	res, err := e.s.TaskFinish(e.ctx, ps)
	if err != nil || len(res) != len(ps) {
		t.Fatalf("TaskFinish = %v, %v", res, err)
	}
	for i := range ps {
		if stale[i] {
			wantCode(t, res[i], task.CodeLeaseLost, fmt.Sprintf("TaskFinish[%d]", i))
		} else if res[i] != nil {
			t.Fatalf("TaskFinish[%d] = %v", i, res[i])
		}
		sameTask(t, fmt.Sprintf("task %d", i), e.get(inst.ID, c[i].ID), want[i])
	}
}

func testFinishDeadLetter(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	dlq := e.queue(inst, "dead", task.ModePull)
	q := e.queue(inst, "work", task.ModePush, func(q *task.Queue) { q.MaxAttempts = 1; q.DeadLetterQueue = "dead" })
	tk := e.addN(q, 1, T0, func(_ int, in *task.AddInput) {
		in.Name = "named"
		in.Payload = json.RawMessage(`{"x":  1}`)
		in.Params = json.RawMessage(`{"p":2}`)
		in.Depth = 2
	})[0]
	c := e.claim(q, T0, 1, 60_000)[0]
	lease := c.LeaseID
	failed, err := c.Finish(q, T0+5, fail("gone"))
	if err != nil || !failed {
		t.Fatalf("Finish = %v, %v; want failed", failed, err)
	}
	dl := c.DeadLetter(dlq, T0+5)
	dl.ID = e.id("dl")
	res, err := e.s.TaskFinish(e.ctx, []*store.FinishParams{{Task: c, LeaseID: lease, DeadLetter: dl}})
	if err != nil || len(res) != 1 || res[0] != nil {
		t.Fatalf("TaskFinish = %v, %v", res, err)
	}
	if got := e.get(inst.ID, tk.ID); got.State != task.Failed {
		t.Fatalf("original = %+v", got)
	}
	got := e.get(inst.ID, dl.ID)
	sameTask(t, "dead letter", got, dl)
	if got.Queue != "dead" || got.DeadLetterOf != tk.ID || got.Source != task.SourceDeadLetter || got.Name != "" ||
		string(got.Payload) != `{"x":  1}` || string(got.Params) != `{"p":2}` || got.State != task.Pending || !got.Pull {
		t.Fatalf("dead letter = %+v", got)
	}
	claimed := e.claim(dlq, T0+5, 10, 1000)
	sameIDs(t, "claim from the dead-letter queue", claimed, dl.ID)
}

func testFinishDeadLetterNotOnLeaseLost(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	dlq := e.queue(inst, "dead", task.ModePull)
	q := e.queue(inst, "work", task.ModePull, func(q *task.Queue) { q.MaxAttempts = 1; q.DeadLetterQueue = "dead" })
	e.addN(q, 1, T0, nil)
	c := e.claim(q, T0, 1, 60_000)[0]
	if _, err := c.Finish(q, T0+5, fail("gone")); err != nil {
		t.Fatal(err)
	}
	dl := c.DeadLetter(dlq, T0+5)
	dl.ID = e.id("dl")
	res, err := e.s.TaskFinish(e.ctx, []*store.FinishParams{{Task: c, LeaseID: "stale", DeadLetter: dl}})
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, res[0], task.CodeLeaseLost, "TaskFinish(stale, dead letter)")
	if _, err := e.s.TaskGet(e.ctx, store.TaskRef{InstanceID: inst.ID, ID: dl.ID}); !task.IsCode(err, task.CodeNotFound) {
		t.Fatalf("dead letter of a refused finish was added: %v", err)
	}
}

func testFinishExtendAndRelease(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	q := e.queue(inst, "work", task.ModePull)
	tk := e.addN(q, 1, T0, nil)[0]
	c := e.claim(q, T0, 1, 10_000)[0]
	lease := c.LeaseID
	if err := c.Extend(lease, T0+5_000, 120); err != nil {
		t.Fatal(err)
	}
	res, err := e.s.TaskFinish(e.ctx, []*store.FinishParams{{Task: c, LeaseID: lease}})
	if err != nil || res[0] != nil {
		t.Fatalf("TaskFinish(extend) = %v, %v", res, err)
	}
	got := e.get(inst.ID, tk.ID)
	if got.State != task.Running || got.LeaseID != lease || got.LeaseExpiresAt != T0+125_000 {
		t.Fatalf("after extend: %+v", got)
	}
	// A release without an error gives the attempt back.
	_, got = e.finish(q, c, T0+6_000, task.Outcome{Status: task.AttemptReleased, Delay: 3 * time.Second})
	if got.State != task.RetryWait || got.Attempt != 0 || got.RunAt != T0+9_000 || len(got.Attempts) != 1 {
		t.Fatalf("after release: %+v", got)
	}
}

// testFinishSameTaskTwice sends several writes for one task in one batch:
// they apply in order, each fenced by the row as the previous left it.
func testFinishSameTaskTwice(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	q := e.queue(inst, "work", task.ModePull)
	e.addN(q, 2, T0, nil)
	c := e.claim(q, T0, 2, 10_000)
	lease := c[0].LeaseID
	extended := *c[0]
	if err := extended.Extend(lease, T0+1_000, 60); err != nil {
		t.Fatal(err)
	}
	done := *c[0]
	if _, err := done.Finish(q, T0+2_000, succeed(`"once"`)); err != nil {
		t.Fatal(err)
	}
	again := *c[0]
	if _, err := again.Finish(q, T0+3_000, succeed(`"twice"`)); err != nil {
		t.Fatal(err)
	}
	other := *c[1]
	if _, err := other.Finish(q, T0+2_000, succeed(`"other"`)); err != nil {
		t.Fatal(err)
	}
	res, err := e.s.TaskFinish(e.ctx, []*store.FinishParams{
		{Task: &extended, LeaseID: lease},
		{Task: &done, LeaseID: lease},
		{Task: &other, LeaseID: c[1].LeaseID},
		{Task: &again, LeaseID: lease},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 4 || res[0] != nil || res[1] != nil || res[2] != nil {
		t.Fatalf("results = %v", res)
	}
	wantCode(t, res[3], task.CodeLeaseLost, "the third write of one lease")
	got := e.get(inst.ID, c[0].ID)
	if got.State != task.Succeeded || string(got.Result) != `"once"` || got.FinishedAt != T0+2_000 {
		t.Fatalf("stored = %+v", got)
	}
	if got := e.get(inst.ID, c[1].ID); got.State != task.Succeeded || string(got.Result) != `"other"` {
		t.Fatalf("other = %+v", got)
	}
}

// testFinishLargeBatch finishes a large batch in which every seventh lease
// is stale: every result lands at its own index, and only the fenced writes
// are refused.
func testFinishLargeBatch(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	q := e.queue(inst, "work", task.ModePull)
	e.addN(q, 157, T0, nil)
	c := e.claim(q, T0, 157, 60_000)
	if len(c) != 157 {
		t.Fatalf("claimed %d", len(c))
	}
	ps := make([]*store.FinishParams, len(c))
	for i, tk := range c {
		lease := tk.LeaseID
		if i%7 == 3 {
			lease = "stale"
		}
		if _, err := tk.Finish(q, T0+int64(i), succeed(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
		ps[i] = &store.FinishParams{Task: tk, LeaseID: lease}
	}
	res, err := e.s.TaskFinish(e.ctx, ps)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != len(ps) {
		t.Fatalf("%d results for %d", len(res), len(ps))
	}
	for i, r := range res {
		got := e.get(inst.ID, c[i].ID)
		if i%7 == 3 {
			wantCode(t, r, task.CodeLeaseLost, fmt.Sprintf("result %d", i))
			if got.State != task.Running {
				t.Fatalf("task %d with a stale lease is %s", i, got.State)
			}
			continue
		}
		if r != nil || got.State != task.Succeeded || string(got.Result) != fmt.Sprint(i) || got.FinishedAt != T0+int64(i) {
			t.Fatalf("result %d = %v, stored %+v", i, r, got)
		}
	}
}

// testFinishLiveAt: a write with LiveAt applies only while the stored lease
// expires after LiveAt, whatever expiry the entry's own copy carried (the
// row's expiry decides: one lease is extended and one shortened in the
// store first); LiveAt 0 checks the lease id alone, even long after the
// lease ran out. A refused write leaves the row as it was.
func testFinishLiveAt(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	q := e.queue(inst, "work", task.ModePull)
	e.addN(q, 6, T0, nil)
	c := e.claim(q, T0, 6, 10_000) // every lease expires at T0+10_000
	if len(c) != 6 {
		t.Fatalf("claimed %d", len(c))
	}
	// c[4]'s lease is extended to T0+61_000 and c[5]'s shortened to
	// T0+2_000 in the store; the entries below still carry the claimed
	// copies (T0+10_000).
	for i, secs := range map[int]int{4: 60, 5: 1} {
		if _, err := e.s.TaskUpdate(e.ctx, store.TaskRef{InstanceID: inst.ID, ID: c[i].ID}, func(tk *task.Task) error {
			return tk.Extend(c[i].LeaseID, T0+1_000, secs)
		}); err != nil {
			t.Fatal(err)
		}
	}
	liveAt := []int64{T0 + 9_999, T0 + 10_000, T0 + 20_000, 0, T0 + 30_000, T0 + 5_000}
	applies := []bool{true, false, false, true, true, false}
	before := make([]*task.Task, len(c))
	ps := make([]*store.FinishParams, len(c))
	for i, tk := range c {
		before[i] = e.get(inst.ID, tk.ID)
		lease := tk.LeaseID
		if _, err := tk.Finish(q, T0+50_000, succeed(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
		ps[i] = &store.FinishParams{Task: tk, LeaseID: lease, LiveAt: liveAt[i]}
	}
	res, err := e.s.TaskFinish(e.ctx, ps)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != len(ps) {
		t.Fatalf("%d results for %d writes", len(res), len(ps))
	}
	for i, tk := range c {
		got := e.get(inst.ID, tk.ID)
		if !applies[i] {
			wantCode(t, res[i], task.CodeLeaseLost, fmt.Sprintf("write %d (liveAt %d)", i, liveAt[i]))
			sameTask(t, fmt.Sprintf("task %d after a refused write", i), got, before[i])
			continue
		}
		if res[i] != nil {
			t.Fatalf("write %d (liveAt %d): %v, want it applied", i, liveAt[i], res[i])
		}
		if got.State != task.Succeeded || string(got.Result) != fmt.Sprint(i) {
			t.Fatalf("task %d = %+v", i, got)
		}
	}
}
