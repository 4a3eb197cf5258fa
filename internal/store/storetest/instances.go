package storetest

import (
	"errors"
	"reflect"
	"testing"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

var instanceCases = []testCase{
	{"CreateGet", testInstanceCreateGet},
	{"DefaultQueue", testInstanceDefaultQueue},
	{"Exists", testInstanceExists},
	{"PerOrgNames", testInstancePerOrgNames},
	{"OrgIsolation", testInstanceOrgIsolation},
	{"List", testInstanceList},
	{"Update", testInstanceUpdate},
	{"Delete", testInstanceDelete},
}

func testInstanceCreateGet(t *testing.T, e *env) {
	inst := &task.Instance{
		ID: e.id("inst"), Org: "acme", Name: "jobs", CreatedAt: T0 + 5,
		Settings:   task.Settings{RetentionDays: 3, RateLimit: 2.5, MaxInFlight: 7},
		WebhookKey: "whsec_abc",
	}
	if err := e.s.InstanceCreate(e.ctx, inst); err != nil {
		t.Fatal(err)
	}
	got, err := e.s.InstanceGet(e.ctx, store.InstanceRef{Org: "acme", Name: "jobs"})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, inst) {
		t.Fatalf("InstanceGet = %+v, want %+v", got, inst)
	}
	got, err = e.s.InstanceGetByID(e.ctx, inst.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, inst) {
		t.Fatalf("InstanceGetByID = %+v, want %+v", got, inst)
	}
	_, err = e.s.InstanceGet(e.ctx, store.InstanceRef{Org: "acme", Name: "nope"})
	wantCode(t, err, task.CodeNotFound, "InstanceGet(missing)")
	_, err = e.s.InstanceGetByID(e.ctx, "nope")
	wantCode(t, err, task.CodeNotFound, "InstanceGetByID(missing)")
}

func testInstanceDefaultQueue(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	q, err := e.s.QueueGet(e.ctx, store.QueueRef{InstanceID: inst.ID, Name: task.DefaultQueueName})
	if err != nil {
		t.Fatalf("default queue: %v", err)
	}
	want := task.NewQueue(inst.ID, task.DefaultQueueName, task.ModePush)
	want.CreatedAt = q.CreatedAt
	if !reflect.DeepEqual(q, want) {
		t.Fatalf("default queue = %+v, want %+v", q, want)
	}
	qs, err := e.s.QueueList(e.ctx, inst.ID)
	if err != nil || len(qs) != 1 || qs[0].Name != task.DefaultQueueName {
		t.Fatalf("QueueList = %v, %v; want only default", qs, err)
	}
}

func testInstanceExists(t *testing.T, e *env) {
	first := e.instance("acme", "jobs")
	dup := &task.Instance{ID: e.id("inst"), Org: "acme", Name: "jobs", CreatedAt: T0, Settings: task.DefaultSettings()}
	err := e.s.InstanceCreate(e.ctx, dup)
	wantCode(t, err, task.CodeInstanceExists, "InstanceCreate(duplicate)")
	if _, err := e.s.InstanceGetByID(e.ctx, dup.ID); !task.IsCode(err, task.CodeNotFound) {
		t.Fatalf("refused instance was stored: %v", err)
	}
	if _, err := e.s.QueueGet(e.ctx, store.QueueRef{InstanceID: dup.ID, Name: task.DefaultQueueName}); !task.IsCode(err, task.CodeNotFound) {
		t.Fatalf("refused instance's default queue was stored: %v", err)
	}
	got, err := e.s.InstanceGet(e.ctx, store.InstanceRef{Org: "acme", Name: "jobs"})
	if err != nil || got.ID != first.ID {
		t.Fatalf("InstanceGet after refusal = %+v, %v; want the first", got, err)
	}
}

func testInstancePerOrgNames(t *testing.T, e *env) {
	a := e.instance("acme", "jobs")
	b := e.instance("globex", "jobs")
	if a.ID == b.ID {
		t.Fatal("two instances share an id")
	}
	for _, inst := range []*task.Instance{a, b} {
		got, err := e.s.InstanceGet(e.ctx, store.InstanceRef{Org: inst.Org, Name: "jobs"})
		if err != nil || got.ID != inst.ID {
			t.Fatalf("InstanceGet(%s/jobs) = %+v, %v; want id %s", inst.Org, got, err, inst.ID)
		}
		if _, err := e.s.QueueGet(e.ctx, store.QueueRef{InstanceID: inst.ID, Name: task.DefaultQueueName}); err != nil {
			t.Fatalf("default queue of %s: %v", inst.Org, err)
		}
	}
}

func testInstanceOrgIsolation(t *testing.T, e *env) {
	a := e.instance("acme", "jobs")
	e.instance("globex", "other")
	if _, err := e.s.InstanceGet(e.ctx, store.InstanceRef{Org: "globex", Name: "jobs"}); !task.IsCode(err, task.CodeNotFound) {
		t.Fatalf("InstanceGet of a foreign instance: %v, want NOT_FOUND", err)
	}
	list, err := e.s.InstanceList(e.ctx, "globex")
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Name != "other" {
		t.Fatalf("InstanceList(globex) = %+v, want only other", list)
	}
	_, err = e.s.InstanceUpdate(e.ctx, store.InstanceRef{Org: "globex", Name: "jobs"}, func(*task.Instance) error {
		t.Error("fn called for a foreign instance")
		return nil
	})
	wantCode(t, err, task.CodeNotFound, "InstanceUpdate(foreign)")
	err = e.s.InstanceDelete(e.ctx, store.InstanceRef{Org: "globex", Name: "jobs"})
	wantCode(t, err, task.CodeNotFound, "InstanceDelete(foreign)")
	if got, err := e.s.InstanceGet(e.ctx, store.InstanceRef{Org: "acme", Name: "jobs"}); err != nil || got.ID != a.ID {
		t.Fatalf("instance after foreign delete: %+v, %v", got, err)
	}
}

func testInstanceList(t *testing.T, e *env) {
	for _, n := range []string{"zeta", "alpha", "mid"} {
		e.instance("acme", n)
	}
	e.instance("globex", "beta")
	list, err := e.s.InstanceList(e.ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, inst := range list {
		names = append(names, inst.Name)
		if inst.Org != "acme" {
			t.Fatalf("InstanceList(acme) returned %s/%s", inst.Org, inst.Name)
		}
	}
	if !reflect.DeepEqual(names, []string{"alpha", "mid", "zeta"}) {
		t.Fatalf("InstanceList names = %v, want alpha mid zeta", names)
	}
	list, err = e.s.InstanceList(e.ctx, "nobody")
	if err != nil || len(list) != 0 {
		t.Fatalf("InstanceList(nobody) = %v, %v", list, err)
	}
}

func testInstanceUpdate(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	got, err := e.s.InstanceUpdate(e.ctx, store.InstanceRef{Org: "acme", Name: "jobs"}, func(i *task.Instance) error {
		i.Settings.RetentionDays = 30
		i.Settings.RateLimit = 12.5
		i.Settings.MaxInFlight = 3
		i.WebhookKey = "whsec_rotated"
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := *inst
	want.Settings = task.Settings{RetentionDays: 30, RateLimit: 12.5, MaxInFlight: 3}
	want.WebhookKey = "whsec_rotated"
	if !reflect.DeepEqual(got, &want) {
		t.Fatalf("InstanceUpdate = %+v, want %+v", got, want)
	}
	stored, err := e.s.InstanceGet(e.ctx, store.InstanceRef{Org: "acme", Name: "jobs"})
	if err != nil || !reflect.DeepEqual(stored, &want) {
		t.Fatalf("stored after update = %+v, %v; want %+v", stored, err, want)
	}

	boom := errors.New("boom")
	_, err = e.s.InstanceUpdate(e.ctx, store.InstanceRef{Org: "acme", Name: "jobs"}, func(i *task.Instance) error {
		i.Settings.RetentionDays = 99
		return boom
	})
	if err != boom {
		t.Fatalf("InstanceUpdate fn error = %v, want it unchanged", err)
	}
	stored, _ = e.s.InstanceGet(e.ctx, store.InstanceRef{Org: "acme", Name: "jobs"})
	if stored.Settings.RetentionDays != 30 {
		t.Fatalf("fn error still wrote: retention %d", stored.Settings.RetentionDays)
	}
	_, err = e.s.InstanceUpdate(e.ctx, store.InstanceRef{Org: "acme", Name: "nope"}, func(*task.Instance) error { return nil })
	wantCode(t, err, task.CodeNotFound, "InstanceUpdate(missing)")
}

func testInstanceDelete(t *testing.T, e *env) {
	inst := e.instance("acme", "jobs")
	keep := e.instance("acme", "keep")
	q := e.queue(inst, "work", task.ModePush)
	kq := e.queue(keep, "work", task.ModePush)
	tasks := e.addN(q, 3, T0-5, func(_ int, in *task.AddInput) { in.RunAt = ptrTo(T0 - 5) })
	kept := e.addN(kq, 2, T0, nil)

	if err := e.s.InstanceDelete(e.ctx, store.InstanceRef{Org: "acme", Name: "jobs"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.s.InstanceGet(e.ctx, store.InstanceRef{Org: "acme", Name: "jobs"}); !task.IsCode(err, task.CodeNotFound) {
		t.Fatalf("InstanceGet after delete: %v", err)
	}
	if _, err := e.s.InstanceGetByID(e.ctx, inst.ID); !task.IsCode(err, task.CodeNotFound) {
		t.Fatalf("InstanceGetByID after delete: %v", err)
	}
	qs, err := e.s.QueueList(e.ctx, inst.ID)
	if err != nil || len(qs) != 0 {
		t.Fatalf("queues after instance delete: %v, %v", qs, err)
	}
	for _, tk := range tasks {
		if _, err := e.s.TaskGet(e.ctx, store.TaskRef{InstanceID: inst.ID, ID: tk.ID}); !task.IsCode(err, task.CodeNotFound) {
			t.Fatalf("task %s after instance delete: %v", tk.ID, err)
		}
	}
	all, err := e.s.QueueListAll(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range all {
		if q.InstanceID == inst.ID {
			t.Fatalf("QueueListAll still has %s", q.Name)
		}
	}
	for _, tk := range kept {
		e.get(keep.ID, tk.ID)
	}
	if err := e.s.InstanceDelete(e.ctx, store.InstanceRef{Org: "acme", Name: "jobs"}); !task.IsCode(err, task.CodeNotFound) {
		t.Fatalf("second InstanceDelete: %v, want NOT_FOUND", err)
	}
	// The name is free again, with a fresh default queue.
	again := e.instance("acme", "jobs")
	if _, err := e.s.QueueGet(e.ctx, store.QueueRef{InstanceID: again.ID, Name: task.DefaultQueueName}); err != nil {
		t.Fatal(err)
	}
	if next, due, err := e.s.TaskNextDue(e.ctx); err != nil || due != 0 || next != T0 {
		t.Fatalf("TaskNextDue after delete = %d, %d, %v; want only the kept tasks", next, due, err)
	}
}

func ptrTo[T any](v T) *T { return &v }
