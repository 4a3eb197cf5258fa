package postgres_test

import (
	"context"
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
