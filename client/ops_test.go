package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/errandhq/errand/client"
	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/httpapi"
)

// runServices starts the engine's dispatcher and rescuer, which run the
// operations jobs in this process.
func (e *env) runServices() {
	e.t.Helper()
	if err := e.eng.Start(context.Background()); err != nil {
		e.t.Fatal(err)
	}
}

// waitJob waits until the job has finished, polling it through the client
// (the fake clock is never moved by the wait: the jobs' leases hold).
func (e *env) waitJob(id string) *errandapi.OpsTask {
	e.t.Helper()
	c := e.client("", client.RetryPolicy{})
	client.SetSleep(c, func(ctx context.Context, d time.Duration) error {
		select {
		case <-time.After(time.Millisecond):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return must(c.WaitOpsTask(ctx, id, time.Millisecond, nil)).of(e.t)
}

// failedTasks makes n FAILED tasks in the pull queue jobs/work (one
// attempt each).
func (e *env) failedTasks(t *testing.T, n int) []string {
	t.Helper()
	ctx := context.Background()
	must(e.c.CreateQueue(ctx, "jobs", "work", errandapi.QueueRequest{Mode: new(errandapi.ModePull), MaxAttempts: new(1)})).of(t)
	var ids []string
	for range n {
		ids = append(ids, must(e.c.AddTask(ctx, "jobs", "work", errandapi.NewTask{})).of(t).ID)
	}
	leased := must(e.c.Lease(ctx, "jobs", "work", errandapi.LeaseRequest{Count: new(n)})).of(t)
	for _, l := range leased {
		must(e.c.Release(ctx, "jobs", l.ID, errandapi.ReleaseRequest{LeaseID: l.LeaseID, Error: "boom"})).of(t)
	}
	return ids
}

// TestOpsCalls drives every route of httpapi.OpsRoutes through the client against a
// real node on each store: submission and its idempotency, list, get,
// cancel, retry, the three shortcuts with their jobs' results, and the
// operations refusals as *Error values errors.Is matches.
func TestOpsCalls(t *testing.T) {
	eachStore(t, func(t *testing.T, kind string) {
		dir := t.TempDir()
		e := start(t, options{kind: kind, ops: engine.OpsConfig{BackupDir: dir, BackupKey: bytes.Repeat([]byte{9}, engine.BackupKeySize)}})
		c, ctx := e.c, context.Background()
		must(c.CreateInstance(ctx, "jobs")).of(t)
		ids := e.failedTasks(t, 3)

		// Before the services run: a job stays PENDING and can be cancelled.
		replay := errandapi.OpsSubmit{Kind: errandapi.KindDLQReplay, IdempotencyKey: "r1",
			Payload: json.RawMessage(`{"instance":"jobs","ids":["` + ids[0] + `"]}`)}
		first := must(c.SubmitOpsTask(ctx, replay)).of(t)
		if first.AlreadyExisted || first.ID == "" || first.ID != first.Task.ID || first.Status != "PENDING" ||
			first.Task.Kind != "dlq.replay" || first.Task.Owner != "dev" || first.Task.MaxAttempts != 3 || first.Task.CreatedAt != t0.Unix() {
			t.Fatalf("submitted %+v", first)
		}
		replay.Payload = json.RawMessage(`{"instance":"jobs","queue":"work"}`) // the first submission wins
		again := must(c.SubmitOpsTask(ctx, replay)).of(t)
		if !again.AlreadyExisted || again.ID != first.ID || string(again.Task.Payload) != `{"instance":"jobs","ids":["`+ids[0]+`"]}` {
			t.Fatalf("resubmitted %+v", again)
		}
		cancelled := must(c.CancelOpsTask(ctx, first.ID)).of(t)
		if cancelled.Status != "CANCELLED" || cancelled.Task.Status != "CANCELLED" {
			t.Fatalf("cancelled %+v", cancelled)
		}
		if _, err := c.CancelOpsTask(ctx, first.ID); !errors.Is(err, client.ErrNotCancellable) {
			t.Fatalf("cancel twice: %v", err)
		}
		if _, err := c.RetryOpsTask(ctx, first.ID); !errors.Is(err, client.ErrNotRetryable) {
			t.Fatalf("retry of a cancelled job: %v", err)
		}

		// A replay of an instance that does not exist is refused; one whose
		// instance is deleted after it was stored fails its one attempt,
		// and once the instance is back, a retry runs it to success.
		later := errandapi.OpsSubmit{Kind: errandapi.KindDLQReplay, IdempotencyKey: "later",
			MaxAttempts: new(int64(1)), Payload: json.RawMessage(`{"instance":"later","queue":"work"}`)}
		if _, err := c.SubmitOpsTask(ctx, later); !errors.Is(err, client.ErrNotFound) {
			t.Fatalf("a replay of a missing instance: %v", err)
		}
		laterQueue := func() {
			must(c.CreateInstance(ctx, "later")).of(t)
			must(c.CreateQueue(ctx, "later", "work", errandapi.QueueRequest{Mode: new(errandapi.ModePull)})).of(t)
		}
		laterQueue()
		doomed := must(c.SubmitOpsTask(ctx, later)).of(t)
		if err := c.DeleteInstance(ctx, "later"); err != nil {
			t.Fatal(err)
		}
		e.runServices()
		if j := e.waitJob(doomed.ID); j.Status != "FAILED" || j.Attempt != 1 || j.LastError == "" {
			t.Fatalf("doomed job %+v", j)
		}
		laterQueue()
		retried := must(c.RetryOpsTask(ctx, doomed.ID)).of(t)
		if retried.Status != "PENDING" {
			t.Fatalf("retried %+v", retried)
		}
		if j := e.waitJob(doomed.ID); j.Status != "SUCCEEDED" {
			t.Fatalf("retried job %+v", j)
		}

		// The shortcuts: a purge of the queue's dead letters, an export, a
		// backup of the instance.
		purge := must(c.PurgeDeadLetters(ctx, errandapi.DLQSelector{Instance: "jobs", Queue: "work"}, client.OpsOptions{IdempotencyKey: "p1", MaxAttempts: 20})).of(t)
		if purge.Task.Kind != "dlq.purge" || purge.Task.MaxAttempts != 8 || purge.AlreadyExisted {
			t.Fatalf("purge %+v", purge)
		}
		var dlq errandapi.DLQResult
		if j := e.waitJob(purge.ID); j.Status != "SUCCEEDED" || json.Unmarshal(j.Result, &dlq) != nil || dlq.Purged != 3 || j.Progress == nil || j.Progress.Done != 3 {
			t.Fatalf("purge job %+v (%s)", j, j.Result)
		}
		if page := must(c.ListTasks(ctx, "jobs", "work", client.ListOptions{})).of(t); len(page.Tasks) != 0 {
			t.Fatalf("%d tasks left after the purge", len(page.Tasks))
		}
		export := must(c.ExportBackup(ctx, client.OpsOptions{})).of(t)
		var res errandapi.ExportResult
		if j := e.waitJob(export.ID); j.Status != "SUCCEEDED" || json.Unmarshal(j.Result, &res) != nil || res.Instances != 2 || res.Parts != 1 {
			t.Fatalf("export job %+v (%s)", j, j.Result)
		}
		var raw bytes.Buffer
		if err := c.DownloadBundle(ctx, export.ID, &raw); err != nil || int64(raw.Len()) != res.Bytes {
			t.Fatalf("download: %d bytes, %v", raw.Len(), err)
		}
		var bundle engine.Bundle
		if err := json.Unmarshal(raw.Bytes(), &bundle); err != nil || len(bundle.Instances) != 2 || bundle.Instances[0].Name != "jobs" || len(bundle.Instances[0].Queues) != 2 {
			t.Fatalf("bundle %s: %v", raw.Bytes(), err)
		}
		if err := c.DownloadBundle(ctx, purge.ID, &raw); !errors.Is(err, client.ErrInvalidArgument) {
			t.Fatalf("the bundle of a purge: %v", err)
		}
		backup := must(c.BackupInstance(ctx, "jobs", client.OpsOptions{IdempotencyKey: "b1"})).of(t)
		var br engine.BackupResult
		if j := e.waitJob(backup.ID); j.Status != "SUCCEEDED" || json.Unmarshal(j.Result, &br) != nil || br.Queues != 2 {
			t.Fatalf("backup job %+v (%s)", j, j.Result)
		}
		if fi, err := os.Stat(br.Path); err != nil || fi.Size() != int64(br.Bytes) {
			t.Fatalf("archive %s: %v", br.Path, err)
		}
		if again := must(c.BackupInstance(ctx, "jobs", client.OpsOptions{IdempotencyKey: "b1"})).of(t); !again.AlreadyExisted || again.ID != backup.ID {
			t.Fatalf("backup again %+v", again)
		}

		// List: newest first, the limit and offset used, clamped.
		list := must(c.ListOpsTasks(ctx, client.OpsListOptions{})).of(t)
		if list.Limit != 50 || list.Offset != 0 || len(list.Tasks) != 5 || list.Tasks[4].ID != first.ID {
			t.Fatalf("list %+v", list)
		}
		page := must(c.ListOpsTasks(ctx, client.OpsListOptions{Limit: 1000, Offset: 4})).of(t)
		if page.Limit != 200 || page.Offset != 4 || len(page.Tasks) != 1 || page.Tasks[0].ID != first.ID {
			t.Fatalf("page %+v", page)
		}
		got := must(c.GetOpsTask(ctx, backup.ID)).of(t)
		if got.ID != backup.ID || got.Task.Kind != "instance.backup" || got.AlreadyExisted {
			t.Fatalf("get %+v", got)
		}

		// Refusals: lowercase on the wire, the SDK's codes and sentinels here.
		for _, r := range []struct {
			err    error
			want   *client.Error
			status int
		}{
			{second(c.SubmitOpsTask(ctx, errandapi.OpsSubmit{Kind: "dlq.nope", IdempotencyKey: "k"})), client.ErrUnknownTaskKind, 400},
			{second(c.SubmitOpsTask(ctx, errandapi.OpsSubmit{Kind: errandapi.KindBackupExport})), client.ErrInvalidArgument, 400},
			{second(c.PurgeDeadLetters(ctx, errandapi.DLQSelector{Instance: "jobs"}, client.OpsOptions{})), client.ErrInvalidArgument, 400},
			{second(c.GetOpsTask(ctx, "0000000000000000000000")), client.ErrNotFound, 404},
			{second(c.RetryOpsTask(ctx, backup.ID)), client.ErrNotRetryable, 400},
		} {
			var ce *client.Error
			if !errors.As(r.err, &ce) || !errors.Is(r.err, r.want) || ce.Status != r.status || ce.Message == "" {
				t.Errorf("got %#v, want %s (%d)", r.err, r.want.Code, r.status)
				continue
			}
			for _, other := range append(errandapi.Codes(), errandapi.CodeUnknownTaskKind) {
				if errors.Is(r.err, errandapi.Sentinel(other)) != (other == r.want.Code) {
					t.Errorf("%s matches the sentinel of %s", ce.Code, other)
				}
			}
		}

		// Every route of the operations table was reached through the client
		// (TestEveryRoute holds the v1 table to the same rule).
		e.mu.Lock()
		defer e.mu.Unlock()
		for _, rt := range httpapi.OpsRoutes {
			if e.routes[rt.Method+" "+rt.Pattern] == 0 {
				t.Errorf("route %s %s was not reached through the client", rt.Method, rt.Pattern)
			}
		}
	})
}

// second is a call's error.
func second[T any](_ T, err error) error { return err }

// TestOpsTenancy: with API keys, another organization's job is not_found
// through every call that names a job, the list shows only the caller's
// jobs, and a key without the grant a kind needs is permission_denied.
func TestOpsTenancy(t *testing.T) {
	e := start(t, options{serve: true})
	ctx := context.Background()
	acme := e.client(e.key("acme", "full:*"), client.RetryPolicy{})
	other := e.client(e.key("other", "full:*"), client.RetryPolicy{})
	small := e.client(e.key("acme", "full:jobs"), client.RetryPolicy{})
	must(acme.CreateInstance(ctx, "jobs")).of(t)
	job := must(acme.ExportBackup(ctx, client.OpsOptions{IdempotencyKey: "same"})).of(t)
	for _, err := range []error{
		second(other.GetOpsTask(ctx, job.ID)),
		second(other.CancelOpsTask(ctx, job.ID)),
		second(other.RetryOpsTask(ctx, job.ID)),
		second(small.GetOpsTask(ctx, job.ID)), // backup.export needs full:*
	} {
		if !errors.Is(err, client.ErrNotFound) {
			t.Errorf("a foreign job: %v, want not_found", err)
		}
	}
	if _, err := small.ExportBackup(ctx, client.OpsOptions{}); !errors.Is(err, client.ErrPermissionDenied) {
		t.Errorf("export with full:jobs: %v", err)
	}
	// The same idempotency key in another organization is another job.
	theirs := must(other.ExportBackup(ctx, client.OpsOptions{IdempotencyKey: "same"})).of(t)
	if theirs.AlreadyExisted || theirs.ID == job.ID || theirs.Task.Owner != "other" {
		t.Fatalf("other org's job %+v", theirs)
	}
	if l := must(other.ListOpsTasks(ctx, client.OpsListOptions{})).of(t); len(l.Tasks) != 1 || l.Tasks[0].ID != theirs.ID {
		t.Fatalf("other's list %+v", l)
	}
	if l := must(small.ListOpsTasks(ctx, client.OpsListOptions{})).of(t); len(l.Tasks) != 0 {
		t.Fatalf("full:jobs sees %+v", l)
	}
	if _, err := e.client("", client.RetryPolicy{}).ListOpsTasks(ctx, client.OpsListOptions{}); !errors.Is(err, client.ErrUnauthenticated) {
		t.Fatalf("no key: %v", err)
	}
}

// TestOpsRetryRules: a submission with an idempotency key whose answer was
// lost is sent again and answers the job of the first try (one job); a
// shortcut without a key and a retry are not sent again once they may
// have reached the server.
func TestOpsRetryRules(t *testing.T) {
	t.Run("submit", func(t *testing.T) {
		f := &failing{n: 1, suffix: "/api/tasks", how: "lose"}
		e := start(t, options{wrap: f.wrap})
		res := must(e.c.SubmitOpsTask(context.Background(), errandapi.OpsSubmit{Kind: errandapi.KindBackupExport, IdempotencyKey: "once"})).of(t)
		if !res.AlreadyExisted || f.seen.Load() != 2 {
			t.Fatalf("after a lost answer: %+v in %d tries, want the first try's job in 2", res, f.seen.Load())
		}
		if l := must(e.c.ListOpsTasks(context.Background(), client.OpsListOptions{})).of(t); len(l.Tasks) != 1 || l.Tasks[0].ID != res.ID {
			t.Fatalf("jobs %+v, want one", l)
		}
	})
	t.Run("shortcut with a key", func(t *testing.T) {
		f := &failing{n: 1, suffix: "/export", how: "lose"}
		e := start(t, options{wrap: f.wrap})
		res := must(e.c.ExportBackup(context.Background(), client.OpsOptions{IdempotencyKey: "k"})).of(t)
		if !res.AlreadyExisted || f.seen.Load() != 2 {
			t.Fatalf("%+v in %d tries", res, f.seen.Load())
		}
	})
	t.Run("shortcut without a key", func(t *testing.T) {
		f := &failing{n: 1, suffix: "/export", how: "lose"}
		e := start(t, options{wrap: f.wrap})
		if _, err := e.c.ExportBackup(context.Background(), client.OpsOptions{}); !client.IsConnectionError(err) || f.seen.Load() != 1 {
			t.Fatalf("%v after %d tries, want the connection error after 1", err, f.seen.Load())
		}
	})
	t.Run("retry", func(t *testing.T) {
		f := &failing{n: 1, suffix: "/retry", how: "503"}
		e := start(t, options{wrap: f.wrap})
		job := must(e.c.ExportBackup(context.Background(), client.OpsOptions{})).of(t)
		if _, err := e.c.RetryOpsTask(context.Background(), job.ID); !errors.Is(err, client.ErrUnavailable) || f.seen.Load() != 1 {
			t.Fatalf("%v after %d tries, want UNAVAILABLE after 1", err, f.seen.Load())
		}
	})
	t.Run("get", func(t *testing.T) {
		f := &failing{n: 2, suffix: "/cancel", how: "cut"}
		e := start(t, options{wrap: f.wrap})
		job := must(e.c.ExportBackup(context.Background(), client.OpsOptions{})).of(t)
		if res := must(e.c.CancelOpsTask(context.Background(), job.ID)).of(t); res.Status != "CANCELLED" || f.seen.Load() != 3 {
			t.Fatalf("%+v after %d tries", res, f.seen.Load())
		}
	})
}
