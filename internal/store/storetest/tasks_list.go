package storetest

import (
	"fmt"
	"sync"
	"testing"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

var listCases = []testCase{
	{"OrderPending", testListOrderPending},
	{"OrderNoState", testListOrderNoState},
	{"OrderFinished", testListOrderFinished},
	{"OrderRunningRetryWait", testListOrderRunningRetryWait},
	{"NameFilter", testListNameFilter},
	{"NoPayloads", testListNoPayloads},
	{"Scope", testListScope},
	{"PagingExact", testListPagingExact},
	{"PagingConcurrentInserts", testListPagingConcurrentInserts},
	{"BadCursor", testListBadCursor},
}

// withID adds a task with an explicit id, made at created and due at runAt.
func (e *env) withID(q *task.Queue, id string, created, runAt int64, mod ...func(*task.AddInput)) *task.Task {
	e.t.Helper()
	tk := e.newTask(q, created, append([]func(*task.AddInput){func(in *task.AddInput) { in.RunAt = &runAt }}, mod...)...)
	tk.ID = id
	e.add(tk)
	return tk
}

func (e *env) list(p store.ListParams) *store.ListPage {
	e.t.Helper()
	page, err := e.s.TaskList(e.ctx, &p)
	if err != nil {
		e.t.Fatalf("TaskList(%+v): %v", p, err)
	}
	return page
}

func testListOrderPending(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	q := e.queue(inst, "work", task.ModePull)
	// Ids made out of runAt order so that ties must break by id, not by
	// insertion.
	e.withID(q, "b", T0, T0+300)
	e.withID(q, "d", T0, T0+100)
	e.withID(q, "a", T0, T0+200)
	e.withID(q, "c", T0, T0+100)
	page := e.list(store.ListParams{InstanceID: inst.ID, Queue: "work", State: task.Pending, Limit: 10})
	sameIDs(t, "PENDING", page.Tasks, "c", "d", "a", "b")
	if page.Cursor != "" {
		t.Fatalf("cursor %q on the last page", page.Cursor)
	}
	page = e.list(store.ListParams{InstanceID: inst.ID, Queue: "work", State: task.Pending, Limit: 3})
	sameIDs(t, "PENDING page 1", page.Tasks, "c", "d", "a")
	if page.Cursor == "" {
		t.Fatal("no cursor with more to come")
	}
	page = e.list(store.ListParams{InstanceID: inst.ID, Queue: "work", State: task.Pending, Limit: 3, Cursor: page.Cursor})
	sameIDs(t, "PENDING page 2", page.Tasks, "b")
	if page.Cursor != "" {
		t.Fatalf("cursor %q on the last page", page.Cursor)
	}
	page = e.list(store.ListParams{InstanceID: inst.ID, Queue: "work", State: task.Succeeded, Limit: 3})
	sameIDs(t, "SUCCEEDED (none)", page.Tasks)
}

func testListOrderNoState(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	q := e.queue(inst, "work", task.ModePull)
	e.withID(q, "b", T0+5, T0+5)
	e.withID(q, "d", T0+1, T0+900)
	e.withID(q, "a", T0+5, T0+5)
	e.withID(q, "c", T0+3, T0+3)
	e.withID(q, "e", T0+2, T0+2)
	// States do not matter without a state filter.
	c := e.claim(q, T0+3, 1, 60_000)
	sameIDs(t, "claim", c, "e")
	e.finish(q, c[0], T0+4, succeed(`1`))
	c = e.claim(q, T0+3, 1, 60_000) // left RUNNING
	sameIDs(t, "second claim", c, "c")
	page := e.list(store.ListParams{InstanceID: inst.ID, Queue: "work", Limit: 10})
	sameIDs(t, "no state", page.Tasks, "b", "a", "c", "e", "d")
	cursor := ""
	for i, want := range [][]string{{"b", "a"}, {"c", "e"}, {"d"}} {
		page = e.list(store.ListParams{InstanceID: inst.ID, Queue: "work", Limit: 2, Cursor: cursor})
		cursor = page.Cursor
		sameIDs(t, fmt.Sprintf("no state page %d", i+1), page.Tasks, want...)
		if (page.Cursor == "") != (i == 2) {
			t.Fatalf("page %d cursor %q", i+1, page.Cursor)
		}
	}
}

func testListOrderFinished(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	q := e.queue(inst, "work", task.ModePull, func(q *task.Queue) { q.MaxAttempts = 1 })
	for _, id := range []string{"e", "f", "g", "h", "i", "j", "k"} {
		e.withID(q, id, T0, T0)
	}
	claimed := e.claim(q, T0+10, 10, 60_000)
	sameIDs(t, "claim", claimed, "e", "f", "g", "h", "i", "j", "k")
	by := map[string]*task.Task{}
	for _, c := range claimed {
		by[c.ID] = c
	}
	e.finish(q, by["e"], T0+50, succeed(`1`))
	e.finish(q, by["f"], T0+20, succeed(`1`))
	e.finish(q, by["g"], T0+50, succeed(`1`))
	e.finish(q, by["h"], T0+30, succeed(`1`))
	e.finish(q, by["i"], T0+40, fail("x"))
	e.finish(q, by["j"], T0+60, fail("x"))
	page := e.list(store.ListParams{InstanceID: inst.ID, Queue: "work", State: task.Succeeded, Limit: 10})
	sameIDs(t, "SUCCEEDED", page.Tasks, "g", "e", "h", "f")
	page = e.list(store.ListParams{InstanceID: inst.ID, Queue: "work", State: task.Succeeded, Limit: 2})
	sameIDs(t, "SUCCEEDED page 1", page.Tasks, "g", "e")
	page = e.list(store.ListParams{InstanceID: inst.ID, Queue: "work", State: task.Succeeded, Limit: 2, Cursor: page.Cursor})
	sameIDs(t, "SUCCEEDED page 2", page.Tasks, "h", "f")
	if page.Cursor != "" {
		t.Fatalf("cursor %q on the last page", page.Cursor)
	}
	page = e.list(store.ListParams{InstanceID: inst.ID, Queue: "work", State: task.Failed, Limit: 10})
	sameIDs(t, "FAILED", page.Tasks, "j", "i")
	page = e.list(store.ListParams{InstanceID: inst.ID, Queue: "work", State: task.Running, Limit: 10})
	sameIDs(t, "RUNNING", page.Tasks, "k")

	for _, id := range []string{"m", "l", "n"} {
		e.withID(q, id, T0, T0+1000)
	}
	for id, at := range map[string]int64{"m": T0 + 70, "l": T0 + 70, "n": T0 + 80} {
		if _, err := e.s.TaskUpdate(e.ctx, store.TaskRef{InstanceID: inst.ID, ID: id}, func(t *task.Task) error { return t.Cancel(at) }); err != nil {
			t.Fatal(err)
		}
	}
	page = e.list(store.ListParams{InstanceID: inst.ID, Queue: "work", State: task.Cancelled, Limit: 10})
	sameIDs(t, "CANCELLED", page.Tasks, "n", "m", "l")
}

func testListOrderRunningRetryWait(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	q := e.queue(inst, "work", task.ModePull)
	e.withID(q, "r3", T0, T0+30)
	e.withID(q, "r1", T0, T0+10)
	e.withID(q, "r2", T0, T0+10)
	e.withID(q, "w2", T0, T0+1)
	e.withID(q, "w1", T0, T0+2)
	e.withID(q, "w3", T0, T0+3)
	claimed := e.claim(q, T0+100, 10, 60_000)
	sameIDs(t, "claim", claimed, "w2", "w1", "w3", "r1", "r2", "r3")
	// w1 and w2 fail at the same time (same runAt after backoff), w3 sooner.
	e.finish(q, claimed[0], T0+500, fail("x"))
	e.finish(q, claimed[1], T0+500, fail("x"))
	e.finish(q, claimed[2], T0+400, fail("x"))
	page := e.list(store.ListParams{InstanceID: inst.ID, Queue: "work", State: task.RetryWait, Limit: 10})
	sameIDs(t, "RETRY_WAIT", page.Tasks, "w3", "w1", "w2")
	page = e.list(store.ListParams{InstanceID: inst.ID, Queue: "work", State: task.Running, Limit: 10})
	sameIDs(t, "RUNNING", page.Tasks, "r1", "r2", "r3")
	page = e.list(store.ListParams{InstanceID: inst.ID, Queue: "work", State: task.Running, Limit: 2})
	sameIDs(t, "RUNNING page 1", page.Tasks, "r1", "r2")
	page = e.list(store.ListParams{InstanceID: inst.ID, Queue: "work", State: task.Running, Limit: 2, Cursor: page.Cursor})
	sameIDs(t, "RUNNING page 2", page.Tasks, "r3")
}

func testListNameFilter(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	q := e.queue(inst, "work", task.ModePull)
	other := e.queue(inst, "other", task.ModePull)
	named := e.withID(q, "x1", T0, T0, func(in *task.AddInput) { in.Name = "invoice-7" })
	e.withID(q, "x2", T0, T0, func(in *task.AddInput) { in.Name = "invoice-8" })
	e.withID(other, "x3", T0, T0, func(in *task.AddInput) { in.Name = "invoice-7" })
	e.withID(q, "x4", T0, T0)
	page := e.list(store.ListParams{InstanceID: inst.ID, Queue: "work", Name: "invoice-7", Limit: 10})
	sameIDs(t, "name", page.Tasks, named.ID)
	page = e.list(store.ListParams{InstanceID: inst.ID, Queue: "work", Name: "invoice-7", State: task.Pending, Limit: 10})
	sameIDs(t, "name+state", page.Tasks, named.ID)
	page = e.list(store.ListParams{InstanceID: inst.ID, Queue: "work", Name: "invoice-7", State: task.Running, Limit: 10})
	sameIDs(t, "name+other state", page.Tasks)
	page = e.list(store.ListParams{InstanceID: inst.ID, Queue: "work", Name: "nothing", Limit: 10})
	sameIDs(t, "unknown name", page.Tasks)
}

func testListNoPayloads(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	q := e.queue(inst, "work", task.ModePull)
	tk := e.addN(q, 2, T0, nil)
	c := e.claim(q, T0, 1, 1000)
	e.finish(q, c[0], T0+1, succeed(`{"big":"result"}`))
	for _, st := range []task.State{"", task.Pending, task.Succeeded} {
		page := e.list(store.ListParams{InstanceID: inst.ID, Queue: "work", State: st, Limit: 10})
		if len(page.Tasks) == 0 {
			t.Fatalf("state %q listed nothing", st)
		}
		for _, got := range page.Tasks {
			if got.Payload != nil || got.Result != nil {
				t.Fatalf("listed task %s carries payload %q result %q", got.ID, got.Payload, got.Result)
			}
			if got.InstanceID != inst.ID || got.Queue != "work" || got.CreatedAt != T0 || got.State == "" {
				t.Fatalf("listed task lacks its fields: %+v", got)
			}
		}
	}
	_ = tk
}

func testListScope(t *testing.T, e *env) {
	a := e.instance("acme", "jobs")
	b := e.instance("globex", "jobs")
	qa := e.queue(a, "work", task.ModePull)
	qa2 := e.queue(a, "else", task.ModePull)
	qb := e.queue(b, "work", task.ModePull)
	mine := e.addN(qa, 3, T0, nil)
	e.addN(qa2, 2, T0, nil)
	e.addN(qb, 2, T0, nil)
	page := e.list(store.ListParams{InstanceID: a.ID, Queue: "work", Limit: 10})
	if len(page.Tasks) != 3 {
		t.Fatalf("listed %v, want only %v", ids(page.Tasks), ids(mine))
	}
	for _, tk := range page.Tasks {
		if tk.InstanceID != a.ID || tk.Queue != "work" {
			t.Fatalf("listed foreign task %+v", tk)
		}
	}
	page = e.list(store.ListParams{InstanceID: a.ID, Queue: "missing", Limit: 10})
	sameIDs(t, "missing queue", page.Tasks)
}

func testListPagingExact(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	q := e.queue(inst, "work", task.ModePull)
	e.addN(q, 20, T0, func(i int, in *task.AddInput) { in.RunAt = ptr(T0 + int64(i%3)) })
	for _, st := range []task.State{"", task.Pending} {
		var cursor string
		seen := map[string]bool{}
		for pageNo := 1; ; pageNo++ {
			page := e.list(store.ListParams{InstanceID: inst.ID, Queue: "work", State: st, Limit: 5, Cursor: cursor})
			if len(page.Tasks) != 5 {
				t.Fatalf("state %q page %d has %d tasks", st, pageNo, len(page.Tasks))
			}
			for _, tk := range page.Tasks {
				if seen[tk.ID] {
					t.Fatalf("duplicate %s", tk.ID)
				}
				seen[tk.ID] = true
			}
			if pageNo == 4 {
				if page.Cursor != "" {
					t.Fatalf("state %q: cursor %q on the last page", st, page.Cursor)
				}
				break
			}
			if page.Cursor == "" {
				t.Fatalf("state %q: no cursor on page %d", st, pageNo)
			}
			cursor = page.Cursor
		}
	}
}

// testListPagingConcurrentInserts pages through many tasks, some sharing
// sort keys, while other tasks are added between pages and from another
// goroutine: no task is listed twice, and none that was there throughout is
// skipped.
func testListPagingConcurrentInserts(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	q := e.queue(inst, "work", task.ModePull)
	const n = 230
	orig := e.addN(q, n, T0, func(i int, in *task.AddInput) { in.RunAt = ptr(T0 + 1000 + int64(i%17)*10) })
	want := map[string]bool{}
	for _, tk := range orig {
		want[tk.ID] = true
	}

	for _, st := range []task.State{task.Pending, ""} {
		var wg sync.WaitGroup
		stop := make(chan struct{})
		wg.Go(func() {
			for i := 0; i < 40; i++ {
				select {
				case <-stop:
					return
				default:
				}
				// Both before and after whatever the pages have reached.
				at := T0 + int64(i%20)*10*17/2
				tk, err := task.NewTask(q, task.AddInput{Payload: []byte(`{}`), RunAt: &at}, T0+int64(i), task.URLRules{})
				if err != nil {
					t.Errorf("NewTask: %v", err)
					return
				}
				tk.ID = e.id("conc")
				if _, err := e.s.TaskAdd(e.ctx, []*task.Task{tk}); err != nil {
					t.Errorf("concurrent TaskAdd: %v", err)
					return
				}
			}
		})

		seen := map[string]bool{}
		var cursor string
		pages := 0
		for {
			page := e.list(store.ListParams{InstanceID: inst.ID, Queue: "work", State: st, Limit: 7, Cursor: cursor})
			pages++
			if pages > 1000 {
				t.Fatal("paging does not end")
			}
			for _, tk := range page.Tasks {
				if seen[tk.ID] {
					t.Fatalf("state %q: %s listed twice", st, tk.ID)
				}
				seen[tk.ID] = true
			}
			// Insert between pages too, around the current position.
			extra := e.newTask(q, T0+int64(pages), func(in *task.AddInput) { in.RunAt = ptr(T0 + 1000 + int64(pages%17)*10) })
			e.add(extra)
			if page.Cursor == "" {
				break
			}
			if len(page.Tasks) != 7 {
				t.Fatalf("state %q: short page (%d) with a cursor", st, len(page.Tasks))
			}
			cursor = page.Cursor
		}
		close(stop)
		wg.Wait()
		for id := range want {
			if !seen[id] {
				t.Fatalf("state %q: %s was never listed", st, id)
			}
		}
	}
}

func testListBadCursor(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	e.queue(inst, "work", task.ModePull)
	_, err := e.s.TaskList(e.ctx, &store.ListParams{InstanceID: inst.ID, Queue: "work", Limit: 5, Cursor: "%%%not-a-cursor"})
	wantCode(t, err, task.CodeInvalidArgument, "TaskList(bad cursor)")
}
