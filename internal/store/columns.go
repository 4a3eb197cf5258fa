package store

import (
	"strings"

	"github.com/errandhq/errand/internal/task"
)

// TaskListColumns are the task columns a listing reads, in the order every
// backend scans them: all but payload and result.
var TaskListColumns = []string{
	"instance_id", "id", "queue", "name", "state", "pull", "attempt", "max_attempts",
	"run_at", "created_at", "started_at", "deadline_at", "finished_at", "lease_id",
	"lease_expires_at", "deadline_seconds", "source", "depth", "priority", "dead_letter_of",
	"last_error", "target", "params", "attempts",
}

// TaskColumns are TaskListColumns with payload and result, last.
var TaskColumns = append(append([]string{}, TaskListColumns...), "payload", "result")

// QueueColumns are the queue columns, in the order every backend writes
// and scans them (see ScanQueue).
var QueueColumns = []string{
	"instance_id", "name", "mode", "target", "rate_per_second", "max_concurrent", "max_attempts",
	"min_backoff_seconds", "max_backoff_seconds", "max_doublings", "max_age_seconds", "deadline_seconds",
	"dead_letter_queue", "target_control", "paused", "created_at",
}

// Columns joins columns for a SELECT, each prefixed by alias and a dot when
// alias is set.
func Columns(alias string, cs []string) string {
	if alias == "" {
		return strings.Join(cs, ", ")
	}
	return alias + "." + strings.Join(cs, ", "+alias+".")
}

// ByID maps tasks by id.
func ByID(tasks []*task.Task) map[string]*task.Task {
	out := make(map[string]*task.Task, len(tasks))
	for _, t := range tasks {
		out[t.ID] = t
	}
	return out
}
