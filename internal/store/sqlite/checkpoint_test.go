package sqlite

import (
	"fmt"
	"testing"
	"time"

	"github.com/errandhq/errand/internal/task"
)

// TestCheckpointerCopiesTheWAL: the writer's commits kick the background
// checkpointer every checkpointEvery commits, and its PASSIVE checkpoint
// copies the WAL's frames back; the writer's own automatic checkpoint waits
// for writerCheckpointPages. Without the kick (or with the checkpointer's
// PRAGMA wrong) no result arrives and the test fails.
func TestCheckpointerCopiesTheWAL(t *testing.T) {
	results := make(chan checkpointResult, 16)
	s, q := openWithQueue(t, Options{checkpointed: func(r checkpointResult) {
		select {
		case results <- r:
		default:
		}
	}})

	var pages int
	if err := s.w.QueryRow("PRAGMA wal_autocheckpoint").Scan(&pages); err != nil {
		t.Fatal(err)
	}
	if pages != writerCheckpointPages {
		t.Fatalf("the writer checkpoints at %d pages, want %d", pages, writerCheckpointPages)
	}

	select {
	case r := <-results:
		t.Fatalf("a checkpoint ran after two commits: %+v", r)
	default:
	}
	// Commits up to the kick: checkpointEvery in all.
	for i := range checkpointEvery - 2 {
		tk, err := task.NewTask(q, task.AddInput{Payload: []byte(`{"n":1}`)}, 1_000, task.URLRules{})
		if err != nil {
			t.Fatal(err)
		}
		tk.ID = fmt.Sprintf("t%03d", i)
		if _, err := s.TaskAdd(t.Context(), []*task.Task{tk}); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case r := <-results:
		if r.err != nil || r.busy != 0 {
			t.Fatalf("checkpoint: %+v", r)
		}
		if r.log == 0 || r.copied != r.log {
			t.Fatalf("checkpoint copied %d of the WAL's %d frames, want all of them (more than none)", r.copied, r.log)
		}
	case <-time.After(30 * time.Second): // a guard, not a pace: the result comes in milliseconds
		t.Fatal("no checkpoint after checkpointEvery commits")
	}
}
