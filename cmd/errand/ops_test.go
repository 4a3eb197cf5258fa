package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/errandhq/errand/internal/id"
	"github.com/errandhq/errand/internal/store/sqlite"
	"github.com/errandhq/errand/internal/task"
)

// seedFailed writes an instance "jobs" with a pull queue "q" holding n
// FAILED tasks into the dev store of data, before errand starts on it: a
// task the replay puts back is due at once, which a lease's long poll
// tells (an event the test can wait on).
func seedFailed(t *testing.T, data string, n int) {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(data, "errand.db"), sqlite.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Now()
	inst := &task.Instance{ID: id.New(now), Org: "dev", Name: "jobs", CreatedAt: now.UnixMilli(), Settings: task.DefaultSettings(), WebhookKey: id.WebhookKey()}
	if err := st.InstanceCreate(ctx, inst); err != nil {
		t.Fatal(err)
	}
	q := task.NewQueue(inst.ID, "q", task.ModePull)
	if err := st.QueueCreate(ctx, q); err != nil {
		t.Fatal(err)
	}
	ms := now.UnixMilli() - 1000
	for done := 0; done < n; done += 1000 {
		batch := make([]*task.Task, 0, 1000)
		for range min(1000, n-done) {
			batch = append(batch, &task.Task{InstanceID: inst.ID, ID: id.New(now), Queue: "q", State: task.Failed, Attempt: 10, MaxAttempts: 10,
				RunAt: ms, CreatedAt: ms, FinishedAt: ms, Source: task.SourceAPI, Payload: json.RawMessage(`{}`), LastError: "HTTP 500"})
		}
		if _, err := st.TaskAdd(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
}

func getJSON(t *testing.T, url string) map[string]any {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&m)
	return m
}

// TestOpsJobSurvivesKill9: a dead-letter replay killed (-9) mid-run is
// neither lost nor done twice: after the restart its lease runs out, the
// next attempt resumes from the last checkpoint, and every dead letter is
// replayed exactly once.
func TestOpsJobSurvivesKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary, and waits out a 30 s lease")
	}
	const n = 60_000
	bin := buildErrand(t)
	data := t.TempDir()
	seedFailed(t, data, n)
	cmd, url, _ := startMode(t, bin, "dev", "--data", data)
	st, m := post(t, url+"/api/tasks", `{"kind":"dlq.replay","idempotency_key":"k9","payload":{"instance":"jobs","queue":"q"}}`)
	if st != 201 {
		t.Fatalf("submit: %d %v", st, m)
	}
	jid := m["id"].(string)
	// The replay is under way when its first task is due again: a lease's
	// long poll answers then (the task stays leased, out of the job's way).
	for try := 0; ; try++ {
		st, m := post(t, url+"/v1/tasks/jobs/queues/q/lease", `{"count":1,"leaseSeconds":3600,"waitSeconds":30}`)
		if st != 200 {
			t.Fatalf("waiting for the replay to be under way: %d %v", st, m)
		}
		if ts, _ := m["tasks"].([]any); len(ts) == 1 {
			break
		}
		if try == 1 {
			t.Fatal("the replay put no task back within two long polls (60 s)")
		}
	}
	var done float64
	if p, ok := getJSON(t, url+"/api/tasks/"+jid)["task"].(map[string]any)["progress"].(map[string]any); ok {
		done = p["done"].(float64)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if done >= n {
		t.Fatalf("the replay finished (%v) before the kill; seed more", done)
	}

	_, url, logs := startMode(t, bin, "dev", "--data", data)
	job := getJSON(t, url+"/api/tasks/"+jid)["task"].(map[string]any)
	if job["status"] != "RUNNING" || job["attempt"] != 1.0 {
		t.Fatalf("after the restart: %v", job)
	}
	// Its lease runs out (30 s), and the next attempt's end is the event.
	job = waitOpsJob(t, url, logs, "dlq.replay", jid, 120*time.Second)
	res := job["result"].(map[string]any)
	t.Logf("killed at %v of %d; result %v, attempt %v", done, n, res, job["attempt"])
	if job["status"] != "SUCCEEDED" || job["attempt"] != 2.0 {
		t.Fatalf("job: %v", job)
	}
	// Items replayed after the last checkpoint and before the kill are
	// seen again as skipped (no longer failed): at most one chunk.
	if res["replayed"].(float64)+res["skipped"].(float64) != n || res["skipped"].(float64) > 200 {
		t.Fatalf("result: %v", res)
	}
	q := getJSON(t, url+"/v1/tasks/jobs/queues/q")["queue"].(map[string]any)
	counts := q["counts"].(map[string]any)
	if counts["failed"] != nil && counts["failed"] != 0.0 {
		t.Fatalf("counts after the replay: %v", counts)
	}
}
