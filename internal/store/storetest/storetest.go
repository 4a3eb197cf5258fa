// Package storetest is the conformance suite of store.Store. Every backend
// runs it from its own tests:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store { return openFresh(t) })
//	}
//
// Each subtest opens a fresh, empty store with open and closes it when it
// ends; open must not close the store itself (it may register other cleanup,
// such as t.TempDir). All times are synthetic epoch milliseconds: the suite
// never sleeps.
package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sync/atomic"
	"testing"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// T0 is the synthetic "now" every test starts from (epoch ms).
const T0 int64 = 1_700_000_000_000

// Day is one day in milliseconds.
const Day int64 = 86_400_000

// Run runs every conformance test against stores made by open.
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	groups := []struct {
		name  string
		cases []testCase
	}{
		{"Instance", instanceCases},
		{"Queue", queueCases},
		{"TaskAdd", addCases},
		{"TaskGetUpdate", updateCases},
		{"TaskList", listCases},
		{"TaskClaim", claimCases},
		{"TaskAddClaim", addClaimCases},
		{"TaskFinish", finishCases},
		{"Maintenance", maintenanceCases},
		{"Nodes", nodeCases},
		{"APIRate", apiRateCases},
		{"Keys", keyCases},
		{"Context", contextCases},
		{"Triggers", triggerCases},
		{"Ops", opsCases},
		{"Usage", usageCases},
		{"Channels", channelCases},
		{"ConsoleSessions", sessionCases},
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			t.Parallel()
			for _, c := range g.cases {
				t.Run(c.name, func(t *testing.T) {
					t.Parallel()
					c.fn(t, newEnv(t, open))
				})
			}
		})
	}
}

type testCase struct {
	name string
	fn   func(t *testing.T, e *env)
}

// env is one subtest's store and helpers.
type env struct {
	t   *testing.T
	s   store.Store
	ctx context.Context
	seq atomic.Int64
}

func newEnv(t *testing.T, open func(t *testing.T) store.Store) *env {
	t.Helper()
	s := open(t)
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return &env{t: t, s: s, ctx: t.Context()}
}

// id returns a fresh id with prefix; ids of one prefix sort in the order
// they were made.
func (e *env) id(prefix string) string {
	return fmt.Sprintf("%s-%06d", prefix, e.seq.Add(1))
}

// lease returns a NewLeaseID function whose ids are unique in this env.
func (e *env) leases() func() string {
	return func() string { return e.id("lease") }
}

var hook = &task.Target{Webhook: "https://example.com/hook"}

// instance creates an instance of org named name with default settings.
func (e *env) instance(org, name string) *task.Instance {
	e.t.Helper()
	inst := &task.Instance{
		ID:         e.id("inst"),
		Org:        org,
		Name:       name,
		CreatedAt:  T0,
		Settings:   task.DefaultSettings(),
		WebhookKey: "whsec_" + name,
	}
	if err := e.s.InstanceCreate(e.ctx, inst); err != nil {
		e.t.Fatalf("InstanceCreate(%s/%s): %v", org, name, err)
	}
	return inst
}

// queue creates a queue; a push queue gets a webhook target unless mod
// clears it.
func (e *env) queue(inst *task.Instance, name string, mode task.Mode, mod ...func(*task.Queue)) *task.Queue {
	e.t.Helper()
	q := task.NewQueue(inst.ID, name, mode)
	q.CreatedAt = T0
	if mode == task.ModePush {
		q.Target = hook
	}
	for _, m := range mod {
		m(q)
	}
	if err := e.s.QueueCreate(e.ctx, q); err != nil {
		e.t.Fatalf("QueueCreate(%s): %v", name, err)
	}
	return q
}

// newTask builds (does not store) a task for q at now through the domain.
func (e *env) newTask(q *task.Queue, now int64, mod ...func(*task.AddInput)) *task.Task {
	e.t.Helper()
	in := task.AddInput{Payload: json.RawMessage(`{"n":1}`)}
	if q.Mode == task.ModePush && q.Target == nil {
		in.Target = hook
	}
	for _, m := range mod {
		m(&in)
	}
	tk, err := task.NewTask(q, in, now, task.URLRules{})
	if err != nil {
		e.t.Fatalf("NewTask: %v", err)
	}
	tk.ID = e.id("task")
	return tk
}

// add stores tasks and fails the test on any refusal.
func (e *env) add(tasks ...*task.Task) []*task.Task {
	e.t.Helper()
	res, err := e.s.TaskAdd(e.ctx, tasks)
	if err != nil {
		e.t.Fatalf("TaskAdd: %v", err)
	}
	if len(res) != len(tasks) {
		e.t.Fatalf("TaskAdd: %d results for %d tasks", len(res), len(tasks))
	}
	for i, r := range res {
		if r.Err != nil {
			e.t.Fatalf("TaskAdd[%d]: %v", i, r.Err)
		}
		if r.Task == nil || r.Task.ID != tasks[i].ID {
			e.t.Fatalf("TaskAdd[%d]: result task %+v, want id %s", i, r.Task, tasks[i].ID)
		}
	}
	return tasks
}

// addN stores n tasks of q made at now, each changed by mod(i, in).
func (e *env) addN(q *task.Queue, n int, now int64, mod func(i int, in *task.AddInput)) []*task.Task {
	e.t.Helper()
	var out []*task.Task
	for start := 0; start < n; start += task.MaxAddBatch {
		var batch []*task.Task
		for i := start; i < min(n, start+task.MaxAddBatch); i++ {
			batch = append(batch, e.newTask(q, now, func(in *task.AddInput) {
				if mod != nil {
					mod(i, in)
				}
			}))
		}
		out = append(out, e.add(batch...)...)
	}
	return out
}

// get reads a task and fails the test if it is missing.
func (e *env) get(instanceID, id string) *task.Task {
	e.t.Helper()
	tk, err := e.s.TaskGet(e.ctx, store.TaskRef{InstanceID: instanceID, ID: id})
	if err != nil {
		e.t.Fatalf("TaskGet(%s): %v", id, err)
	}
	return tk
}

// claim claims up to limit tasks of q at now with a lease of leaseMs.
func (e *env) claim(q *task.Queue, now int64, limit int, leaseMs int64) []*task.Task {
	e.t.Helper()
	got, err := e.s.TaskClaim(e.ctx, &store.ClaimParams{Queue: q, Now: now, Limit: limit, LeaseMs: leaseMs, NewLeaseID: e.leases()})
	if err != nil {
		e.t.Fatalf("TaskClaim: %v", err)
	}
	return got
}

// finish ends tk's attempt through task.Finish at now and stores it; it
// returns whether the task failed and the stored task.
func (e *env) finish(q *task.Queue, tk *task.Task, now int64, o task.Outcome) (bool, *task.Task) {
	e.t.Helper()
	lease := tk.LeaseID
	failed, err := tk.Finish(q, now, o)
	if err != nil {
		e.t.Fatalf("Finish: %v", err)
	}
	res, err := e.s.TaskFinish(e.ctx, []*store.FinishParams{{Task: tk, LeaseID: lease}})
	if err != nil {
		e.t.Fatalf("TaskFinish: %v", err)
	}
	if len(res) != 1 || res[0] != nil {
		e.t.Fatalf("TaskFinish results %v, want [nil]", res)
	}
	return failed, e.get(tk.InstanceID, tk.ID)
}

func succeed(result string) task.Outcome {
	return task.Outcome{Status: task.AttemptSucceeded, HTTPStatus: 200, Result: json.RawMessage(result)}
}

func fail(msg string) task.Outcome {
	return task.Outcome{Status: task.AttemptFailed, HTTPStatus: 500, Error: msg}
}

// wantCode fails the test unless err carries code.
func wantCode(t *testing.T, err error, code task.Code, what string) {
	t.Helper()
	if !task.IsCode(err, code) {
		t.Fatalf("%s: error %v (code %q), want code %s", what, err, task.ErrorCode(err), code)
	}
}

// ids returns the ids of tasks in order.
func ids(tasks []*task.Task) []string {
	out := make([]string, len(tasks))
	for i, tk := range tasks {
		out[i] = tk.ID
	}
	return out
}

func sameIDs(t *testing.T, what string, got []*task.Task, want ...string) {
	t.Helper()
	g := ids(got)
	if len(want) == 0 {
		want = []string{}
	}
	if !reflect.DeepEqual(g, want) {
		t.Fatalf("%s: ids %v, want %v", what, g, want)
	}
}

// normalize makes the empty and the nil forms of a task's slices alike so
// that two tasks can be compared with reflect.DeepEqual.
func normalize(tk *task.Task) task.Task {
	c := *tk
	if len(c.Params) == 0 {
		c.Params = nil
	}
	if len(c.Payload) == 0 {
		c.Payload = nil
	}
	if len(c.Result) == 0 {
		c.Result = nil
	}
	if len(c.Attempts) == 0 {
		c.Attempts = nil
	}
	return c
}

// sameTask fails the test unless got and want hold the same values, field
// by field.
func sameTask(t *testing.T, what string, got, want *task.Task) {
	t.Helper()
	g, w := normalize(got), normalize(want)
	if reflect.DeepEqual(g, w) {
		return
	}
	gv, wv := reflect.ValueOf(g), reflect.ValueOf(w)
	for i := 0; i < gv.NumField(); i++ {
		if !reflect.DeepEqual(gv.Field(i).Interface(), wv.Field(i).Interface()) {
			t.Errorf("%s: field %s = %s, want %s", what, gv.Type().Field(i).Name, show(gv.Field(i).Interface()), show(wv.Field(i).Interface()))
		}
	}
	t.FailNow()
}

func show(v any) string {
	switch x := v.(type) {
	case json.RawMessage:
		if x == nil {
			return "nil"
		}
		return fmt.Sprintf("%q", string(x))
	case *task.Target:
		if x == nil {
			return "nil"
		}
		return fmt.Sprintf("%+v", *x)
	}
	return fmt.Sprintf("%+v", v)
}

func ptr[T any](v T) *T { return &v }
