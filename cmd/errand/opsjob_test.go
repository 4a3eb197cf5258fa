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
