package store

import (
	"slices"
	"testing"

	"github.com/errandhq/errand/internal/task"
)

// TestAddClaimPicks: an add's claim takes the queue's earlier due tasks
// and the tasks added in one runAt order (ties by id), up to the room,
// then trims a function's tasks to its free slots.
func TestAddClaimPicks(t *testing.T) {
	q := task.NewQueue("i", "q", task.ModePush)
	mk := func(id string, runAt int64, fn string) *task.Task {
		tk := &task.Task{ID: id, InstanceID: "i", Queue: "q", RunAt: runAt, CreatedAt: runAt}
		if fn != "" {
			tk.Target = &task.Target{Function: fn}
		}
		return tk
	}
	due := []*task.Task{mk("d1", 100, ""), mk("d2", 108, "")}
	added := []*task.Task{mk("x2", 105, ""), mk("x1", 105, ""), mk("x3", 105, "")}
	p := &ClaimParams{Queue: q, Now: 110}
	cases := []struct {
		room int
		want []AddPick
	}{
		{0, []AddPick{}},
		{-3, []AddPick{}},
		{1, []AddPick{{Due: true, I: 0}}},
		{3, []AddPick{{Due: true, I: 0}, {I: 1}, {I: 0}}},
		{10, []AddPick{{Due: true, I: 0}, {I: 1}, {I: 0}, {I: 2}, {Due: true, I: 1}}},
	}
	for _, c := range cases {
		if got := AddClaimPicks(p, due, added, c.room); !slices.Equal(got, c.want) {
			t.Errorf("room %d: %v; want %v", c.room, got, c.want)
		}
	}
	// One slot of app/send: the first task of it is kept, the next is not,
	// and a task of no function is kept whatever the slots.
	fns := []*task.Task{mk("f1", 105, "app/send"), mk("f2", 105, "app/send"), mk("f3", 105, "")}
	p.Functions = map[string]int{"app/send": 1}
	if got, want := AddClaimPicks(p, nil, fns, 10), []AddPick{{I: 0}, {I: 2}}; !slices.Equal(got, want) {
		t.Errorf("one slot: %v; want %v", got, want)
	}
}
