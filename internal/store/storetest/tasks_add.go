package storetest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

var addCases = []testCase{
	{"BatchInOrder", testAddBatchInOrder},
	{"RoundTrip", testAddRoundTrip},
	{"PayloadBytes", testAddPayloadBytes},
	{"DuplicateName", testAddDuplicateName},
	{"DuplicateNameInBatch", testAddDuplicateNameInBatch},
	{"MissingQueueOrDuplicateID", testAddMissingQueueOrDuplicateID},
	{"ManyQueuesAndInstances", testAddManyQueuesAndInstances},
	{"MissingQueueWholeBatch", testAddMissingQueueWholeBatch},
	{"TakenIDAmongMany", testAddTakenIDAmongMany},
	{"NameScope", testAddNameScope},
	{"NameReuseAfterRetention", testAddNameReuseAfterRetention},
	{"Empty", testAddEmpty},
	{"FullBatch", testAddFullBatch},
}

func testAddBatchInOrder(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	q := e.queue(inst, "work", task.ModePush)
	var batch []*task.Task
	for i := range 5 {
		batch = append(batch, e.newTask(q, T0+int64(i)))
	}
	res, err := e.s.TaskAdd(e.ctx, batch)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != len(batch) {
		t.Fatalf("%d results for %d tasks", len(res), len(batch))
	}
	for i, r := range res {
		if r.Err != nil || r.Task == nil || r.Task.ID != batch[i].ID {
			t.Fatalf("result %d = %+v, want task %s", i, r, batch[i].ID)
		}
		sameTask(t, "stored", e.get(inst.ID, batch[i].ID), batch[i])
	}
}

func testAddRoundTrip(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	q := e.queue(inst, task.DefaultQueueName+"2", task.ModePush, func(q *task.Queue) { q.Target = nil; q.MaxAttempts = 4 })
	tk := e.newTask(q, T0, func(in *task.AddInput) {
		in.Name = "receipt-42.v1"
		in.Payload = json.RawMessage(`{"order":42,"items":["a","b"]}`)
		in.Params = json.RawMessage(`{"lang":"en"}`)
		in.Target = &task.Target{Function: "app/send-receipt"}
		in.Delay = ptr(1.5)
		in.DeadlineSeconds = ptr(30)
		in.Source = task.SourceSchedule
		in.Depth = 3
	})
	tk.DeadLetterOf = "task-original"
	e.add(tk)
	got := e.get(inst.ID, tk.ID)
	sameTask(t, "TaskGet", got, tk)
	if got.RunAt != T0+1500 || got.MaxAttempts != 4 || got.State != task.Pending || got.Pull {
		t.Fatalf("stored task = %+v", got)
	}

	p := e.queue(inst, "pulled", task.ModePull)
	pt := e.newTask(p, T0)
	e.add(pt)
	got = e.get(inst.ID, pt.ID)
	sameTask(t, "TaskGet(pull)", got, pt)
	if !got.Pull || got.Target != nil || got.Name != "" || got.Params != nil {
		t.Fatalf("stored pull task = %+v", got)
	}
}

func testAddPayloadBytes(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	q := e.queue(inst, "work", task.ModePull)
	payloads := []string{
		`{"b":1,  "a":2}`,
		"{\n\t\"z\" : [ 1 ,2 ],\"a\":\"é\\u00e9\"\n}",
		`  "spaced string"  `,
		`null`,
		`12.50`,
	}
	var batch []*task.Task
	for _, p := range payloads {
		batch = append(batch, e.newTask(q, T0, func(in *task.AddInput) {
			in.Payload = json.RawMessage(p)
			in.Params = json.RawMessage(`{ "k" :  "v" }`)
		}))
	}
	e.add(batch...)
	for i, tk := range batch {
		got := e.get(inst.ID, tk.ID)
		if !bytes.Equal(got.Payload, []byte(payloads[i])) {
			t.Fatalf("payload %d = %q, want %q byte for byte", i, got.Payload, payloads[i])
		}
		if string(got.Params) != `{ "k" :  "v" }` {
			t.Fatalf("params = %q", got.Params)
		}
	}
	claimed := e.claim(q, T0, 10, 1000)
	for _, c := range claimed {
		found := false
		for i, tk := range batch {
			if tk.ID == c.ID {
				found = true
				if !bytes.Equal(c.Payload, []byte(payloads[i])) {
					t.Fatalf("claimed payload = %q, want %q", c.Payload, payloads[i])
				}
			}
		}
		if !found {
			t.Fatalf("claimed unknown %s", c.ID)
		}
	}
	// A result is kept byte for byte too.
	_, got := e.finish(q, claimed[0], T0+1, succeed(`{"ok" : true,"n":[1, 2]}`))
	if string(got.Result) != `{"ok" : true,"n":[1, 2]}` {
		t.Fatalf("result = %q", got.Result)
	}
}

func testAddDuplicateName(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	q := e.queue(inst, "work", task.ModePull)
	first := e.newTask(q, T0, func(in *task.AddInput) { in.Name = "once" })
	e.add(first)
	dup := e.newTask(q, T0+1, func(in *task.AddInput) { in.Name = "once"; in.Payload = json.RawMessage(`"second"`) })
	other := e.newTask(q, T0+1, func(in *task.AddInput) { in.Name = "twice" })
	res, err := e.s.TaskAdd(e.ctx, []*task.Task{dup, other})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 {
		t.Fatalf("%d results", len(res))
	}
	wantExists(t, res[0], first.ID)
	if res[1].Err != nil || res[1].Task == nil || res[1].Task.ID != other.ID {
		t.Fatalf("result 1 = %+v, want stored", res[1])
	}
	if _, err := e.s.TaskGet(e.ctx, store.TaskRef{InstanceID: inst.ID, ID: dup.ID}); !task.IsCode(err, task.CodeNotFound) {
		t.Fatalf("refused task was stored: %v", err)
	}
	if got := e.get(inst.ID, first.ID); string(got.Payload) != `{"n":1}` {
		t.Fatalf("the existing task was changed: %q", got.Payload)
	}
	e.get(inst.ID, other.ID)
	// Still refused once the first has finished, while its record is kept.
	c := e.claim(q, T0+5, 1, 1000)
	e.finish(q, c[0], T0+6, succeed(`1`))
	res, err = e.s.TaskAdd(e.ctx, []*task.Task{e.newTask(q, T0+7, func(in *task.AddInput) { in.Name = "once" })})
	if err != nil {
		t.Fatal(err)
	}
	wantExists(t, res[0], first.ID)
}

func wantExists(t *testing.T, r store.AddResult, id string) {
	t.Helper()
	if r.Err == nil || r.Err.Code != task.CodeTaskExists || r.Err.ID != id {
		t.Fatalf("result = %+v (err %+v), want TASK_EXISTS with id %s", r, r.Err, id)
	}
}

func testAddDuplicateNameInBatch(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	q := e.queue(inst, "work", task.ModePull)
	a := e.newTask(q, T0, func(in *task.AddInput) { in.Name = "n1" })
	b := e.newTask(q, T0, func(in *task.AddInput) { in.Name = "n2" })
	c := e.newTask(q, T0, func(in *task.AddInput) { in.Name = "n1" })
	d := e.newTask(q, T0)
	res, err := e.s.TaskAdd(e.ctx, []*task.Task{a, b, c, d})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 4 {
		t.Fatalf("%d results", len(res))
	}
	for _, i := range []int{0, 1, 3} {
		if res[i].Err != nil {
			t.Fatalf("result %d: %v", i, res[i].Err)
		}
	}
	wantExists(t, res[2], a.ID)
	if _, err := e.s.TaskGet(e.ctx, store.TaskRef{InstanceID: inst.ID, ID: c.ID}); !task.IsCode(err, task.CodeNotFound) {
		t.Fatalf("duplicate in batch was stored: %v", err)
	}
	page, err := e.s.TaskList(e.ctx, &store.ListParams{InstanceID: inst.ID, Queue: "work", Limit: 10})
	if err != nil || len(page.Tasks) != 3 {
		t.Fatalf("listed %v, %v; want 3 tasks", page, err)
	}
}

func testAddNameScope(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	q1 := e.queue(inst, "one", task.ModePull)
	q2 := e.queue(inst, "two", task.ModePull)
	other := e.instance("globex", "jobs")
	q3 := e.queue(other, "one", task.ModePull)
	name := func(in *task.AddInput) { in.Name = "shared" }
	e.add(e.newTask(q1, T0, name))
	e.add(e.newTask(q2, T0, name))
	e.add(e.newTask(q3, T0, name))
	// Unnamed tasks never collide.
	e.addN(q1, 3, T0, nil)
}

func testAddNameReuseAfterRetention(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	q := e.queue(inst, "work", task.ModePull)
	old := e.newTask(q, T0, func(in *task.AddInput) { in.Name = "daily" })
	e.add(old)
	if _, err := e.s.TaskUpdate(e.ctx, store.TaskRef{InstanceID: inst.ID, ID: old.ID}, func(t *task.Task) error { return t.Cancel(T0 + 1) }); err != nil {
		t.Fatal(err)
	}
	n, err := e.s.TaskDeleteFinished(e.ctx, T0+2+int64(inst.Settings.RetentionDays)*Day, 100)
	if err != nil || n != 1 {
		t.Fatalf("TaskDeleteFinished = %d, %v; want 1", n, err)
	}
	again := e.newTask(q, T0+3, func(in *task.AddInput) { in.Name = "daily" })
	e.add(again)
	e.get(inst.ID, again.ID)
}

func testAddEmpty(t *testing.T, e *env) {
	res, err := e.s.TaskAdd(e.ctx, nil)
	if err != nil || len(res) != 0 {
		t.Fatalf("TaskAdd(nil) = %v, %v", res, err)
	}
}

// testAddFullBatch adds a batch of the largest size with duplicate names
// scattered through it: every result lands at its own index.
func testAddFullBatch(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	q := e.queue(inst, "work", task.ModePull)
	dupOf := map[int]int{37: 5, 99: 98, 64: 63, 11: 5}
	var batch []*task.Task
	for i := range task.MaxAddBatch {
		name := fmt.Sprintf("n%d", i)
		if j, ok := dupOf[i]; ok {
			name = fmt.Sprintf("n%d", j)
		}
		batch = append(batch, e.newTask(q, T0, func(in *task.AddInput) {
			in.Name = name
			in.Payload = json.RawMessage(fmt.Sprintf(`{"i": %d}`, i))
		}))
	}
	res, err := e.s.TaskAdd(e.ctx, batch)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != len(batch) {
		t.Fatalf("%d results for %d tasks", len(res), len(batch))
	}
	for i, r := range res {
		if j, ok := dupOf[i]; ok {
			wantExists(t, r, batch[j].ID)
			continue
		}
		if r.Err != nil || r.Task == nil || r.Task.ID != batch[i].ID {
			t.Fatalf("result %d = %+v", i, r)
		}
		if got := e.get(inst.ID, batch[i].ID); string(got.Payload) != fmt.Sprintf(`{"i": %d}`, i) {
			t.Fatalf("task %d payload %q", i, got.Payload)
		}
	}
	counts, err := e.s.QueueCounts(e.ctx, store.QueueRef{InstanceID: inst.ID, Name: "work"}, 1000)
	if err != nil {
		t.Fatal(err)
	}
	checkCounts(t, counts, map[task.State]int{task.Pending: task.MaxAddBatch - len(dupOf)})
}

// testAddMissingQueueOrDuplicateID: a task of a queue that does not exist
// is NOT_FOUND, an id taken (in the batch or stored) TASK_EXISTS with that
// id; the other tasks of the batch are stored.
func testAddMissingQueueOrDuplicateID(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	q := e.queue(inst, "work", task.ModePull)
	gone := task.NewQueue(inst.ID, "gone", task.ModePull)
	a, c := e.newTask(q, T0), e.newTask(q, T0)
	again := e.newTask(q, T0)
	again.ID = a.ID
	res, err := e.s.TaskAdd(e.ctx, []*task.Task{a, e.newTask(gone, T0), again, c})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 4 || res[0].Err != nil || res[3].Err != nil {
		t.Fatalf("results = %+v", res)
	}
	if res[1].Err == nil || res[1].Err.Code != task.CodeNotFound {
		t.Fatalf("task of a missing queue: %+v", res[1])
	}
	wantExists(t, res[2], a.ID)
	e.get(inst.ID, a.ID)
	e.get(inst.ID, c.ID)
	// An id already stored is TASK_EXISTS too.
	stored := e.newTask(q, T0)
	stored.ID = c.ID
	res, err = e.s.TaskAdd(e.ctx, []*task.Task{stored})
	if err != nil || len(res) != 1 {
		t.Fatalf("stored id again: %+v, %v", res, err)
	}
	wantExists(t, res[0], c.ID)
}

// testAddManyQueuesAndInstances: one TaskAdd of tasks of two instances and
// three queues (as the engine's group commit of single adds makes) stores
// each in its own queue, a name taken in one queue free in the others and
// taken again in its own, answered in order.
func testAddManyQueuesAndInstances(t *testing.T, e *env) {
	a, b := e.instance("acme", "jobs"), e.instance("other", "jobs")
	qa, qa2, qb := e.queue(a, "work", task.ModePull), e.queue(a, "mail", task.ModePush), e.queue(b, "work", task.ModePull)
	named := func(q *task.Queue, name string) *task.Task {
		return e.newTask(q, T0, func(in *task.AddInput) { in.Name = name })
	}
	batch := []*task.Task{named(qa, "n"), named(qb, "n"), named(qa2, "n"), named(qa, "n"), e.newTask(qb, T0)}
	res, err := e.s.TaskAdd(e.ctx, batch)
	if err != nil || len(res) != len(batch) {
		t.Fatalf("TaskAdd: %+v, %v", res, err)
	}
	for _, i := range []int{0, 1, 2, 4} {
		if res[i].Err != nil || res[i].Task == nil || res[i].Task.ID != batch[i].ID {
			t.Fatalf("task %d: %+v", i, res[i])
		}
		if got := e.get(batch[i].InstanceID, batch[i].ID); got.Queue != batch[i].Queue {
			t.Fatalf("task %d stored in %s/%s, want %s", i, got.InstanceID, got.Queue, batch[i].Queue)
		}
	}
	wantExists(t, res[3], batch[0].ID)
}

// testAddMissingQueueWholeBatch: a batch whose tasks are all of one queue
// that does not exist (a backend may store such a batch in one statement)
// is NOT_FOUND task by task, and nothing of it is stored; the same batch
// is stored whole once the queue exists.
func testAddMissingQueueWholeBatch(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	gone := task.NewQueue(inst.ID, "later", task.ModePull)
	batch := []*task.Task{e.newTask(gone, T0), e.newTask(gone, T0), e.newTask(gone, T0)}
	res, err := e.s.TaskAdd(e.ctx, batch)
	if err != nil || len(res) != len(batch) {
		t.Fatalf("TaskAdd: %+v, %v", res, err)
	}
	for i, r := range res {
		if r.Err == nil || r.Err.Code != task.CodeNotFound || r.Task != nil {
			t.Fatalf("task %d of a missing queue: %+v", i, r)
		}
		if _, err := e.s.TaskGet(e.ctx, store.TaskRef{InstanceID: inst.ID, ID: batch[i].ID}); !task.IsCode(err, task.CodeNotFound) {
			t.Fatalf("task %d of a missing queue was stored: %v", i, err)
		}
	}
	e.queue(inst, "later", task.ModePull)
	res, err = e.s.TaskAdd(e.ctx, batch)
	if err != nil || len(res) != len(batch) {
		t.Fatalf("TaskAdd once the queue exists: %+v, %v", res, err)
	}
	for i, r := range res {
		if r.Err != nil || r.Task == nil {
			t.Fatalf("task %d once the queue exists: %+v", i, r)
		}
		e.get(inst.ID, batch[i].ID)
	}
}

// testAddTakenIDAmongMany: in a batch of unnamed tasks, one whose id is
// already stored is TASK_EXISTS and the others before and after it are
// stored (a backend that inserts in chunks meets it in a later one).
func testAddTakenIDAmongMany(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	q := e.queue(inst, "work", task.ModePull)
	held := e.add(e.newTask(q, T0))[0]
	batch := make([]*task.Task, 25)
	for i := range batch {
		batch[i] = e.newTask(q, T0)
	}
	batch[17].ID = held.ID
	res, err := e.s.TaskAdd(e.ctx, batch)
	if err != nil || len(res) != len(batch) {
		t.Fatalf("TaskAdd: %d results, %v", len(res), err)
	}
	for i, r := range res {
		if i == 17 {
			wantExists(t, r, held.ID)
			continue
		}
		if r.Err != nil || r.Task == nil {
			t.Fatalf("task %d: %+v, want stored", i, r)
		}
		e.get(inst.ID, batch[i].ID)
	}
}
