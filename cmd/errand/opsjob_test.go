package main

import (
	"testing"
	"time"
)

// waitOpsJob waits until an attempt of the operations job id (of kind)
// ends on the `errand dev` whose log is logs, at most within, and returns
// the job as GET /api/tasks/{id} answers then. The event is the attempt's
// line in the log: dev logs every attempt, the jobs' too (they run in its
// dispatcher, in a queue named after their kind), once its outcome is
// stored.
func waitOpsJob(t *testing.T, url string, logs *lockedBuffer, kind, id string, within time.Duration) map[string]any {
	t.Helper()
	logs.waitFor(t, "queue="+kind+" task="+id+" attempt=", within)
	return getJSON(t, url+"/api/tasks/"+id)["task"].(map[string]any)
}

// pollOpsJob reads the operations job id until cond holds for it, at most
// within, and returns it. It is these tests' one poll, for what a job does
// while it runs: its progress is written to its row only, and nothing
// tells of it as an event. The operations API answers GET /api/tasks/{id}
// at once (no long poll, no stream); the job lives in the reserved
// instance _ops, which no task rule or channel can watch; the log tells
// only of an attempt's end (see waitOpsJob); client.WaitOpsTask and the
// console's job page poll too. An event would need the product to offer
// one, e.g. a long poll on GET /api/tasks/{id} answered when the job's row
// changes.
func pollOpsJob(t *testing.T, url, id, what string, within time.Duration, cond func(job map[string]any) bool) map[string]any {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		job := getJSON(t, url+"/api/tasks/"+id)["task"].(map[string]any)
		if cond(job) {
			return job
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s: %v", within, what, job)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
