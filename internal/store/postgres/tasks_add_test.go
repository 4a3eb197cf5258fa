package postgres_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/store/postgres"
	"github.com/errandhq/errand/internal/task"
)

// TestAddTakenIDUnnamed adds a batch of unnamed tasks, one of whose ids is
// taken: the plain insert fails as a whole and the batch goes again with ON
// CONFLICT, so that the taken id answers TASK_EXISTS, the others are
// stored, and the stored task is left as it was.
func TestAddTakenIDUnnamed(t *testing.T) {
	s := postgres.OpenTest(t)
	defer s.Close()
	ctx := context.Background()
	inst := &task.Instance{ID: "i1", Org: "acme", Name: "jobs", CreatedAt: 1, Settings: task.DefaultSettings()}
	if err := s.InstanceCreate(ctx, inst); err != nil {
		t.Fatal(err)
	}
	q := task.NewQueue("i1", "work", task.ModePull)
	if err := s.QueueCreate(ctx, q); err != nil {
		t.Fatal(err)
	}
	addTasks(t, s, q, 3, 0) // t000000000, t000000001, t000000002
	var batch []*task.Task
	for _, id := range []string{"t000000005", "t000000001", "t000000006"} {
		tk, err := task.NewTask(q, task.AddInput{Payload: []byte(`"again"`)}, 2, task.URLRules{})
		if err != nil {
			t.Fatal(err)
		}
		tk.ID = id
		batch = append(batch, tk)
	}
	res, err := s.TaskAdd(ctx, batch)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		switch i {
		case 1:
			if r.Err == nil || r.Err.Code != task.CodeTaskExists || r.Err.ID != "t000000001" {
				t.Fatalf("result 1 = %+v, want TASK_EXISTS t000000001", r)
			}
		default:
			if r.Err != nil || r.Task == nil || r.Task.ID != batch[i].ID {
				t.Fatalf("result %d = %+v, want stored", i, r)
			}
		}
	}
	for _, id := range []string{"t000000001", "t000000005", "t000000006"} {
		got, err := s.TaskGet(ctx, store.TaskRef{InstanceID: "i1", ID: id})
		if err != nil {
			t.Fatal(err)
		}
		want := `"again"`
		if id == "t000000001" {
			want = string(payload)
		}
		if string(got.Payload) != want {
			t.Fatalf("%s: payload %s, want %s", id, got.Payload, want)
		}
	}
}

// TestAddCopy adds batches large enough for COPY: one that COPY stores
// whole (read back field by field), one with a taken id and one with a
// queue that does not exist, which COPY leaves to the ON CONFLICT insert
// and its answer per task.
func TestAddCopy(t *testing.T) {
	s := postgres.OpenTest(t)
	defer s.Close()
	ctx := context.Background()
	inst := &task.Instance{ID: "i1", Org: "acme", Name: "jobs", CreatedAt: 1, Settings: task.DefaultSettings()}
	if err := s.InstanceCreate(ctx, inst); err != nil {
		t.Fatal(err)
	}
	q := task.NewQueue("i1", "work", task.ModePush)
	q.Target = &task.Target{Webhook: "https://example.com/q"}
	if err := s.QueueCreate(ctx, q); err != nil {
		t.Fatal(err)
	}
	newBatch := func(from int, queue string) []*task.Task {
		var batch []*task.Task
		for i := from; i < from+100; i++ {
			qq := *q
			qq.Name = queue
			tk, err := task.NewTask(&qq, task.AddInput{Payload: []byte(`{"n":1}`), Params: []byte(`{"p":2}`),
				Target: &task.Target{Webhook: "https://example.com/h"}}, 2, task.URLRules{})
			if err != nil {
				t.Fatal(err)
			}
			tk.ID = fmt.Sprintf("c%09d", i)
			batch = append(batch, tk)
		}
		return batch
	}
	check := func(batch []*task.Task, res []store.AddResult, refused map[int]task.Code) {
		t.Helper()
		for i, r := range res {
			if code, ok := refused[i]; ok {
				if r.Err == nil || r.Err.Code != code {
					t.Fatalf("result %d = %+v, want %s", i, r, code)
				}
				continue
			}
			if r.Err != nil || r.Task == nil || r.Task.ID != batch[i].ID {
				t.Fatalf("result %d = %+v, want stored", i, r)
			}
			got, err := s.TaskGet(ctx, store.TaskRef{InstanceID: "i1", ID: batch[i].ID})
			if err != nil {
				t.Fatal(err)
			}
			want := *batch[i]
			if !reflect.DeepEqual(got, &want) {
				t.Fatalf("stored %+v\nwant %+v", got, &want)
			}
		}
	}
	first := newBatch(0, "work")
	res, err := s.TaskAdd(ctx, first)
	if err != nil {
		t.Fatal(err)
	}
	check(first, res, nil)

	taken := newBatch(100, "work")
	taken[7].ID = first[3].ID
	res, err = s.TaskAdd(ctx, taken)
	if err != nil {
		t.Fatal(err)
	}
	check(taken, res, map[int]task.Code{7: task.CodeTaskExists})
	if got, err := s.TaskGet(ctx, store.TaskRef{InstanceID: "i1", ID: first[3].ID}); err != nil || !reflect.DeepEqual(got, first[3]) {
		t.Fatalf("the taken task changed: %+v, %v", got, err)
	}

	gone := append(newBatch(200, "work")[:50], newBatch(250, "nosuch")[:50]...)
	res, err = s.TaskAdd(ctx, gone)
	if err != nil {
		t.Fatal(err)
	}
	refused := map[int]task.Code{}
	for i := 50; i < 100; i++ {
		refused[i] = task.CodeNotFound
	}
	check(gone, res, refused)
}
