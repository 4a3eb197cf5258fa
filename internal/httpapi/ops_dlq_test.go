package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/errandhq/errand/internal/id"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
	"github.com/errandhq/errand/internal/testkit"
)

// failed stores n FAILED tasks in instance/queue (made through the v1 API,
// paused so that a replayed task stays PENDING) and returns their ids. With
// dlq set, each also gets a dead-letter copy in the pull queue dlq.
func (b *bundle) failed(instance, queue, dlq string, n int) (ids, copies []string) {
	b.t.Helper()
	ctx := context.Background()
	if dlq != "" {
		b.do("POST", "/v1/tasks/"+instance+"/queues", map[string]any{"name": dlq, "mode": "pull"}).want(b.t, 201, "")
	}
	qb := map[string]any{"name": queue, "mode": "push", "target": map[string]any{"webhook": "http://127.0.0.1:9/x"}, "paused": true}
	if dlq != "" {
		qb["deadLetterQueue"] = dlq
	}
	b.do("POST", "/v1/tasks/"+instance+"/queues", qb).want(b.t, 201, "")
	inst, err := b.eng.Store().InstanceGet(ctx, store.InstanceRef{Org: "dev", Name: instance})
	if err != nil {
		b.t.Fatal(err)
	}
	q, _ := b.eng.Store().QueueGet(ctx, store.QueueRef{InstanceID: inst.ID, Name: queue})
	now := b.clock.Now().UnixMilli()
	var batch []*task.Task
	flush := func() {
		if _, err := b.eng.Store().TaskAdd(ctx, batch); err != nil {
			b.t.Fatal(err)
		}
		batch = batch[:0]
	}
	for i := range n {
		t := &task.Task{InstanceID: inst.ID, ID: id.New(b.clock.Now()), Queue: queue, State: task.Failed, Attempt: q.MaxAttempts,
			MaxAttempts: q.MaxAttempts, RunAt: now, CreatedAt: now, FinishedAt: now, Source: task.SourceAPI,
			Payload: json.RawMessage(`{"n":1}`), LastError: "HTTP 500"}
		ids = append(ids, t.ID)
		batch = append(batch, t)
		if dlq != "" {
			c := t.DeadLetter(&task.Queue{Name: dlq, Mode: task.ModePull, MaxAttempts: 10}, now)
			c.ID = id.New(b.clock.Now())
			copies = append(copies, c.ID)
			batch = append(batch, c)
		}
		if len(batch) >= 500 || i == n-1 {
			flush()
		}
	}
	return ids, copies
}

// counts returns the queue's counts by state (a state absent counts 0).
func (b *bundle) counts(instance, queue string) map[string]float64 {
	b.t.Helper()
	q := b.do("GET", "/v1/tasks/"+instance+"/queues/"+queue, nil).want(b.t, 200, "").obj("queue")
	out := map[string]float64{}
	for st, n := range q["counts"].(map[string]any) {
		out[st] = n.(float64)
	}
	return out
}

// v1State returns a task's v1 state.
func (b *bundle) v1State(instance, tid string) any {
	b.t.Helper()
	return b.do("GET", "/v1/tasks/"+instance+"/tasks/"+tid, nil).want(b.t, 200, "").obj("task")["state"]
}

func result(r res) map[string]any {
	m, _ := r.obj("task")["result"].(map[string]any)
	return m
}

// TestOpsReplay10000: every failed task of a queue goes back to PENDING
// with a fresh budget, 10,000 of them (2,000 under the race detector),
// counted.
func TestOpsReplay10000(t *testing.T) {
	onEach(t, func(t *testing.T, b *bundle) {
		n := 10_000
		if testkit.Race {
			n = 2_000
		}
		b.failed("jobs", "q", "", n)
		b.start()
		began := time.Now()
		j := b.job("dlq.replay", "all", map[string]any{"instance": "jobs", "queue": "q"}).want(t, 201, "")
		r := b.waitJob(j.body["id"].(string), "SUCCEEDED")
		t.Logf("replayed %d dead letters in %v", n, time.Since(began))
		res := result(r)
		if res["replayed"] != float64(n) || res["skipped"] != 0.0 || res["refused"] != 0.0 {
			t.Fatalf("result: %v", res)
		}
		if p := r.obj("task")["progress"].(map[string]any); p["done"] != float64(n) || p["total"] != float64(n) {
			t.Fatalf("progress: %v", p)
		}
		if c := b.counts("jobs", "q"); c["scheduled"] != float64(n) || c["failed"] != 0 {
			t.Fatalf("counts after replay: %v", c)
		}
		page := b.do("GET", "/v1/tasks/jobs/queues/q/tasks?limit=1", nil).list("tasks")[0].(map[string]any)
		if page["attempt"] != 0.0 || page["state"] != "scheduled" {
			t.Fatalf("a replayed task: %v", page)
		}
	})
}

// TestOpsReplayByIDsAndDeadLetterQueue: ids replayed, skipped (not failed)
// and refused (not the owner's instance's); a dead-letter queue's copies
// replay their originals and leave the queue.
func TestOpsReplayByIDsAndDeadLetterQueue(t *testing.T) {
	onEach(t, func(t *testing.T, b *bundle) {
		ids, _ := b.failed("jobs", "q", "", 3)
		other, _ := b.failed("other", "q", "", 1)
		b.do("POST", "/v1/tasks/jobs/tasks/"+ids[0]+"/retry", nil).want(t, 200, "") // no longer failed
		b.start()
		sel := map[string]any{"instance": "jobs", "ids": append(append([]string{}, ids...), other[0], "missing")}
		r := b.waitJob(b.job("dlq.replay", "ids", sel).want(t, 201, "").body["id"].(string), "SUCCEEDED")
		if res := result(r); res["replayed"] != 2.0 || res["skipped"] != 1.0 || res["refused"] != 2.0 {
			t.Fatalf("result: %v", res)
		}
		if st := b.v1State("other", other[0]); st != "failed" {
			t.Fatalf("another instance's task was touched: %v", st)
		}

		orig, copies := b.failed("jobs", "src", "dead", 5)
		b.do("POST", "/v1/tasks/jobs/tasks/"+orig[4]+"/retry", nil).want(t, 200, "")
		r = b.waitJob(b.job("dlq.replay", "dlq", map[string]any{"instance": "jobs", "dead_letter_queue": "dead"}).want(t, 201, "").body["id"].(string), "SUCCEEDED")
		if res := result(r); res["replayed"] != 4.0 || res["skipped"] != 1.0 {
			t.Fatalf("dlq result: %v", res)
		}
		if c := b.counts("jobs", "src"); c["scheduled"] != 5 {
			t.Fatalf("originals: %v", c)
		}
		left := b.do("GET", "/v1/tasks/jobs/queues/dead/tasks", nil).list("tasks")
		if len(left) != 1 || left[0].(map[string]any)["id"] != copies[4] {
			t.Fatalf("copies left: %v", left)
		}
	})
}

// TestOpsReplayResumes: a node dies after replaying 600 of 1,000 (its
// checkpoint saved); the job's next attempt, on another node, replays the
// other 400 and never the first 600 again.
func TestOpsReplayResumes(t *testing.T) {
	onEach(t, func(t *testing.T, b *bundle) {
		ctx := context.Background()
		ids, _ := b.failed("jobs", "q", "", 1000)
		jid := b.job("dlq.replay", "resume", map[string]any{"instance": "jobs", "ids": ids}).want(t, 201, "").body["id"].(string)
		// Node A claims the job and gets 600 done before it dies.
		claimed := b.claimJob("dlq.replay")[0]
		inst, _ := b.eng.Store().InstanceGet(ctx, store.InstanceRef{Org: "dev", Name: "jobs"})
		for _, tid := range ids[:600] {
			if _, err := b.eng.Store().TaskUpdate(ctx, store.TaskRef{InstanceID: inst.ID, ID: tid}, func(t *task.Task) error { return t.Retry(b.clock.Now().UnixMilli()) }); err != nil {
				t.Fatal(err)
			}
		}
		cp := []byte(`{"progress":{"done":600,"total":1000},"replayed":600,"skipped":0,"refused":0,"since":1}`)
		if _, err := b.eng.Store().TaskUpdate(ctx, store.TaskRef{InstanceID: claimed.InstanceID, ID: claimed.ID}, func(t *task.Task) error {
			return t.Checkpoint(claimed.LeaseID, b.clock.Now().UnixMilli(), cp)
		}); err != nil {
			t.Fatal(err)
		}
		if p := b.do("GET", "/api/tasks/"+jid, nil).obj("task")["progress"].(map[string]any); p["done"] != 600.0 {
			t.Fatalf("progress while running: %v", p)
		}
		// The lease runs out; a rescuer counts the attempt and the backoff
		// runs.
		b.clock.Advance(31 * time.Second)
		if n, err := b.eng.Rescuer().RunOnce(ctx); err != nil || n != 1 {
			t.Fatalf("rescued %d, %v", n, err)
		}
		b.clock.Advance(5 * time.Second)
		b.start()
		r := b.waitJob(jid, "SUCCEEDED")
		if res := result(r); res["replayed"] != 1000.0 || res["skipped"] != 0.0 {
			t.Fatalf("result after resume: %v (skipped > 0 means finished items were seen again)", res)
		}
		if r.obj("task")["attempt"] != 2.0 {
			t.Fatalf("attempt %v, want 2", r.obj("task")["attempt"])
		}
	})
}

// TestOpsReplayQueueCountsAnUnsavedChunk: with "queue", a chunk the first
// attempt replayed after its last checkpoint is not listed again (no longer
// FAILED) and is not replayed again; the result counts it as skipped, so
// that the counts add up to the 1,000 the job selected.
func TestOpsReplayQueueCountsAnUnsavedChunk(t *testing.T) {
	onEach(t, func(t *testing.T, b *bundle) {
		ctx := context.Background()
		ids, _ := b.failed("jobs", "q", "", 1000)
		jid := b.job("dlq.replay", "unsaved", map[string]any{"instance": "jobs", "queue": "q"}).want(t, 201, "").body["id"].(string)
		// Node A claims the job, saves its first checkpoint (the count),
		// replays a chunk and dies before saving the next.
		claimed := b.claimJob("dlq.replay")[0]
		cp := fmt.Appendf(nil, `{"progress":{"done":0,"total":1000},"replayed":0,"skipped":0,"refused":0,"since":%d}`, b.clock.Now().UnixMilli())
		if _, err := b.eng.Store().TaskUpdate(ctx, store.TaskRef{InstanceID: claimed.InstanceID, ID: claimed.ID}, func(t *task.Task) error {
			return t.Checkpoint(claimed.LeaseID, b.clock.Now().UnixMilli(), cp)
		}); err != nil {
			t.Fatal(err)
		}
		inst, _ := b.eng.Store().InstanceGet(ctx, store.InstanceRef{Org: "dev", Name: "jobs"})
		for _, tid := range ids[:200] {
			if _, err := b.eng.Store().TaskUpdate(ctx, store.TaskRef{InstanceID: inst.ID, ID: tid}, func(t *task.Task) error { return t.Retry(b.clock.Now().UnixMilli()) }); err != nil {
				t.Fatal(err)
			}
		}
		b.clock.Advance(31 * time.Second)
		if n, err := b.eng.Rescuer().RunOnce(ctx); err != nil || n != 1 {
			t.Fatalf("rescued %d, %v", n, err)
		}
		b.clock.Advance(5 * time.Second)
		b.start()
		res := result(b.waitJob(jid, "SUCCEEDED"))
		if res["replayed"] != 800.0 || res["skipped"] != 200.0 {
			t.Fatalf("result: %v, want 800 replayed and 200 skipped", res)
		}
		if p := res["progress"].(map[string]any); p["total"] != 1000.0 || p["done"] != 1000.0 {
			t.Fatalf("progress: %v, want 1000 of 1000", p)
		}
	})
}

// TestOpsPurge: DELETE /api/dlq removes the owner's dead letters, failed
// tasks of a queue or a dead-letter queue's copies, and nothing else.
func TestOpsPurge(t *testing.T) {
	onEach(t, func(t *testing.T, b *bundle) {
		ids, _ := b.failed("jobs", "q", "", 250)
		other, _ := b.failed("other", "q", "", 2)
		b.do("POST", "/v1/tasks/jobs/tasks/"+ids[0]+"/retry", nil).want(t, 200, "")
		b.start()
		r := b.do("DELETE", "/api/dlq", map[string]any{"payload": map[string]any{"instance": "jobs", "queue": "q"}}).want(t, 201, "")
		if r.obj("task")["kind"] != "dlq.purge" {
			t.Fatalf("kind: %s", r.raw)
		}
		r = b.waitJob(r.body["id"].(string), "SUCCEEDED")
		if res := result(r); res["purged"] != 249.0 {
			t.Fatalf("purge: %v", res)
		}
		if c := b.counts("jobs", "q"); c["failed"] != 0 || c["scheduled"] != 1 {
			t.Fatalf("counts: %v", c)
		}
		sel := map[string]any{"instance": "jobs", "ids": []string{ids[0], other[0], "missing"}}
		r = b.waitJob(b.job("dlq.purge", "ids", sel).want(t, 201, "").body["id"].(string), "SUCCEEDED")
		if res := result(r); res["purged"] != 0.0 || res["replayed"] != nil || res["skipped"] != 1.0 || res["refused"] != 2.0 {
			t.Fatalf("purge by ids: %v", res)
		}
		if c := b.counts("other", "q"); c["failed"] != 2 {
			t.Fatalf("another instance lost tasks: %v", c)
		}
		_, _ = b.failed("jobs", "src", "dead", 3)
		r = b.waitJob(b.do("DELETE", "/api/dlq", map[string]any{"payload": map[string]any{"instance": "jobs", "dead_letter_queue": "dead"}, "idempotency_key": "d"}).want(t, 201, "").body["id"].(string), "SUCCEEDED")
		if res := result(r); res["purged"] != 3.0 {
			t.Fatalf("purge dlq: %v", res)
		}
		if c := b.counts("jobs", "src"); c["failed"] != 3 {
			t.Fatalf("purging copies touched the originals: %v", c)
		}
		b.do("DELETE", "/api/dlq", map[string]any{"payload": map[string]any{"instance": "jobs", "dead_letter_queue": "dead"}, "idempotency_key": "d"}).want(t, 200, "")
	})
}
