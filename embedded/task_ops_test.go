package embedded

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/errandhq/errand/errandapi"
)

// wantCode fails t unless err is an *Error with code (and, when field is
// not "", a message naming it first).
func wantCode(t *testing.T, err error, code, field, what string) {
	t.Helper()
	var pe *Error
	if !errors.As(err, &pe) || string(pe.Code) != code {
		t.Fatalf("%s: %v, want %s", what, err, code)
	}
	if field != "" && (len(pe.Message) < len(field) || pe.Message[:len(field)] != field) {
		t.Fatalf("%s: %q does not name %s", what, pe.Message, field)
	}
}

// TestTaskOperations: the embedded engine cancels, runs now, retries and
// deletes a task as the v1 API does, refusing with the API's codes what
// the task's state does not allow.
func TestTaskOperations(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, kind string) {
		e, fc := open(t, kind)
		ctx := context.Background()
		must(t, e.CreateQueue(ctx, "jobs", "work", QueueOptions{Pull: true, MaxAttempts: 1}))
		ids := add(t, e, "work",
			NewTask{Name: "later", Delay: time.Hour},
			NewTask{Name: "gone", Delay: time.Hour},
			NewTask{Name: "fails"})

		// RunNow: due at once; leased then, so Cancel and Delete refuse it.
		tk, err := e.RunNow(ctx, "jobs", ids[0])
		if err != nil || tk.State != "scheduled" || !tk.RunAt.Equal(fc.Now()) {
			t.Fatalf("RunNow: %+v %v; want scheduled, due now", tk, err)
		}
		leased, err := e.Lease(ctx, "jobs", "work", 10, time.Minute, 0)
		if err != nil || len(leased) != 2 {
			t.Fatalf("Lease: %d tasks, %v; want 2", len(leased), err)
		}
		_, err = e.Cancel(ctx, "jobs", ids[0])
		wantCode(t, err, "RUNNING_NOT_CANCELLABLE", "", "Cancel(leased)")
		_, err = e.Delete(ctx, "jobs", ids[0])
		wantCode(t, err, "RUNNING_NOT_CANCELLABLE", "", "Delete(leased)")
		if tk, err = e.RunNow(ctx, "jobs", ids[0]); err != nil || tk.State != "leased" {
			t.Fatalf("RunNow(leased): %+v %v; want it as it is", tk, err)
		}

		// Retry: only a failed task, with a fresh budget.
		var fails *Task
		for _, l := range leased {
			if l.ID == ids[2] {
				fails = l
			}
		}
		_, err = e.Retry(ctx, "jobs", ids[2])
		wantCode(t, err, "NOT_RETRYABLE", "", "Retry(leased)")
		must(t, e.Release(ctx, "jobs", fails.ID, fails.LeaseID, "boom", 0))
		waitState(t, e, ids[2], "failed")
		if tk, err = e.Retry(ctx, "jobs", ids[2]); err != nil || tk.State != "scheduled" || tk.Attempt != 0 {
			t.Fatalf("Retry(failed): %+v %v; want scheduled, attempt 0", tk, err)
		}

		// Cancel: a scheduled task at once; a finished one refused.
		if tk, err = e.Cancel(ctx, "jobs", ids[1]); err != nil || tk.State != "cancelled" {
			t.Fatalf("Cancel(scheduled): %+v %v", tk, err)
		}
		_, err = e.Cancel(ctx, "jobs", ids[1])
		wantCode(t, err, "NOT_CANCELLABLE", "", "Cancel(cancelled)")
		_, err = e.RunNow(ctx, "jobs", ids[1])
		wantCode(t, err, "NOT_RUNNABLE", "", "RunNow(cancelled)")

		// Delete: the record goes, and its name is free again.
		if tk, err = e.Delete(ctx, "jobs", ids[1]); err != nil || tk.ID != ids[1] || tk.State != "cancelled" {
			t.Fatalf("Delete: %+v %v; want the task as it was", tk, err)
		}
		_, err = e.Get(ctx, "jobs", ids[1])
		wantCode(t, err, "NOT_FOUND", "", "Get(deleted)")
		_, err = e.Delete(ctx, "jobs", ids[1])
		wantCode(t, err, "NOT_FOUND", "", "Delete(deleted)")
		add(t, e, "work", NewTask{Name: "gone"})
		for _, op := range []func(context.Context, string, string) (*Task, error){e.Cancel, e.RunNow, e.Retry, e.Delete} {
			_, err = op(ctx, "jobs", "no-such-task")
			wantCode(t, err, "NOT_FOUND", "", "an operation on a missing task")
		}
	})
}

// TestListPages: List pages through a queue's tasks by state, as the v1
// API's list does, and refuses a bad state, limit or name naming it.
func TestListPages(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, kind string) {
		e, _ := open(t, kind)
		ctx := context.Background()
		must(t, e.CreateQueue(ctx, "jobs", "work", QueueOptions{Pull: true}))
		var want []string
		for i := 0; i < 5; i++ {
			want = append(want, add(t, e, "work", NewTask{Payload: json.RawMessage(`1`), Delay: time.Duration(i+1) * time.Minute})...)
		}
		named := add(t, e, "work", NewTask{Name: "one", Payload: json.RawMessage(`1`), Delay: time.Hour})[0]
		_, err := e.Cancel(ctx, "jobs", named)
		must(t, err)

		var got []string
		cursor := ""
		for pages := 0; ; pages++ {
			page, err := e.List(ctx, "jobs", "work", ListOptions{State: "scheduled", Limit: 2, Cursor: cursor})
			if err != nil {
				t.Fatal(err)
			}
			for _, tk := range page.Tasks {
				if tk.State != "scheduled" || tk.Payload != nil {
					t.Fatalf("listed %+v; want scheduled, without its payload", tk)
				}
				got = append(got, tk.ID)
			}
			if cursor = page.Cursor; cursor == "" {
				if pages != 2 {
					t.Fatalf("%d pages of 2 for 5 tasks, want 3", pages+1)
				}
				break
			}
		}
		if len(got) != 5 {
			t.Fatalf("listed %v, want %v (soonest due first)", got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("listed %v, want %v (soonest due first)", got, want)
			}
		}
		page, err := e.List(ctx, "jobs", "work", ListOptions{Name: "one"})
		if err != nil || len(page.Tasks) != 1 || page.Tasks[0].State != "cancelled" || page.Cursor != "" {
			t.Fatalf("List by name: %+v %v", page, err)
		}
		if page, err = e.List(ctx, "jobs", "work", ListOptions{}); err != nil || len(page.Tasks) != 6 {
			t.Fatalf("List of every state: %+v %v; want 6 tasks", page, err)
		}
		_, err = e.List(ctx, "jobs", "work", ListOptions{State: "done"})
		wantCode(t, err, "INVALID_ARGUMENT", "state", "List(state done)")
		_, err = e.List(ctx, "jobs", "work", ListOptions{Limit: 201})
		wantCode(t, err, "INVALID_ARGUMENT", "limit", "List(limit 201)")
		_, err = e.List(ctx, "jobs", "work", ListOptions{Limit: -1})
		wantCode(t, err, "INVALID_ARGUMENT", "limit", "List(limit -1)")
		_, err = e.List(ctx, "jobs", "work", ListOptions{Name: "no spaces"})
		wantCode(t, err, "INVALID_ARGUMENT", "name", "List(bad name)")
		_, err = e.List(ctx, "jobs", "work", ListOptions{Cursor: "nonsense"})
		wantCode(t, err, "INVALID_ARGUMENT", "cursor", "List(bad cursor)")
		_, err = e.List(ctx, "jobs", "nowhere", ListOptions{})
		wantCode(t, err, "NOT_FOUND", "", "List(missing queue)")
	})
}

// TestExtendLease: Extend moves a held lease's expiry from now, and is
// LEASE_LOST for a lease that is not held.
func TestExtendLease(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, kind string) {
		e, fc := open(t, kind)
		ctx := context.Background()
		must(t, e.CreateQueue(ctx, "jobs", "work", QueueOptions{Pull: true}))
		add(t, e, "work", NewTask{})
		got, err := e.Lease(ctx, "jobs", "work", 1, time.Minute, 0)
		if err != nil || len(got) != 1 {
			t.Fatalf("Lease: %v %v", got, err)
		}
		l := got[0]
		fc.Advance(50 * time.Second)
		tk, err := e.Extend(ctx, "jobs", l.ID, l.LeaseID, 1500*time.Millisecond)
		if err != nil || !tk.LeaseExpiresAt.Equal(fc.Now().Add(2*time.Second)) || tk.State != "leased" {
			t.Fatalf("Extend(1.5 s): %+v %v; want leased until now + 2 s", tk, err)
		}
		fc.Advance(1500 * time.Millisecond) // past the first lease's minute, inside the extension
		errs, err := e.AckMany(ctx, "jobs", "work", []Ack{{ID: l.ID, LeaseID: l.LeaseID}})
		if err != nil || errs[0] != nil {
			t.Fatalf("ack inside the extension: %v %v", errs, err)
		}
		_, err = e.Extend(ctx, "jobs", l.ID, l.LeaseID, time.Minute)
		wantCode(t, err, "LEASE_LOST", "", "Extend(after the ack)")
		_, err = e.Extend(ctx, "jobs", l.ID, l.LeaseID, -time.Second)
		wantCode(t, err, "INVALID_ARGUMENT", "leaseSeconds", "Extend(negative)")
		_, err = e.Extend(ctx, "jobs", l.ID, l.LeaseID, 25*time.Hour)
		wantCode(t, err, "INVALID_ARGUMENT", "leaseSeconds", "Extend(25 h)")
	})
}

// TestQueuesDeleteAndPurge: Queues lists an instance's queues with their
// counts; DeleteQueue and PurgeQueue remove tasks and say how many, and
// the queue "default" cannot be deleted.
func TestQueuesDeleteAndPurge(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, kind string) {
		e, _ := open(t, kind)
		ctx := context.Background()
		must(t, e.CreateQueue(ctx, "jobs", "a", QueueOptions{Pull: true}))
		must(t, e.CreateQueue(ctx, "jobs", "b", QueueOptions{Pull: true}))
		add(t, e, "a", NewTask{}, NewTask{})
		add(t, e, "b", NewTask{Delay: time.Hour})
		qs, err := e.Queues(ctx, "jobs")
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, q := range qs {
			names = append(names, q.Name)
		}
		if len(qs) != 3 || names[0] != "a" || names[1] != "b" || names[2] != "default" ||
			qs[0].Counts["scheduled"] != 2 || !qs[0].Pull || qs[1].Counts["scheduled"] != 1 {
			t.Fatalf("Queues: %v %+v", names, qs)
		}
		if n, err := e.PurgeQueue(ctx, "jobs", "a"); err != nil || n != 2 {
			t.Fatalf("PurgeQueue: %d %v; want 2", n, err)
		}
		if q, err := e.Queue(ctx, "jobs", "a"); err != nil || q.Counts["scheduled"] != 0 {
			t.Fatalf("purged queue: %+v %v", q, err)
		}
		if n, err := e.DeleteQueue(ctx, "jobs", "b"); err != nil || n != 1 {
			t.Fatalf("DeleteQueue: %d %v; want 1", n, err)
		}
		_, err = e.Queue(ctx, "jobs", "b")
		wantCode(t, err, "NOT_FOUND", "", "Queue(deleted)")
		_, err = e.DeleteQueue(ctx, "jobs", "default")
		wantCode(t, err, "INVALID_ARGUMENT", "queue", "DeleteQueue(default)")
		_, err = e.PurgeQueue(ctx, "jobs", "b")
		wantCode(t, err, "NOT_FOUND", "", "PurgeQueue(deleted)")
	})
}

// TestUpdateQueue: UpdateQueue sets what QueueOptions cannot (a dead-letter
// queue, a rate, a maximum age, targetControl), which then acts, answers
// them in Settings, clears a Nullable sent as null, and refuses a rename
// or a change of mode.
func TestUpdateQueue(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, kind string) {
		e, _ := open(t, kind)
		ctx := context.Background()
		must(t, e.CreateQueue(ctx, "jobs", "work", QueueOptions{Pull: true, MaxAttempts: 1}))
		must(t, e.CreateQueue(ctx, "jobs", "dead", QueueOptions{Pull: true}))
		f := false
		q, err := e.UpdateQueue(ctx, "jobs", "work", errandapi.QueueRequest{
			DeadLetterQueue: errandapi.Value("dead"), RatePerSecond: errandapi.Value(50.0),
			MaxAgeSeconds: errandapi.Value(int64(3600)), TargetControl: &f,
		})
		if err != nil {
			t.Fatal(err)
		}
		s := q.Settings
		if s.DeadLetterQueue == nil || *s.DeadLetterQueue != "dead" || s.RatePerSecond == nil || *s.RatePerSecond != 50 ||
			s.MaxAgeSeconds == nil || *s.MaxAgeSeconds != 3600 || s.TargetControl || s.MaxAttempts != 1 || s.Mode != errandapi.ModePull {
			t.Fatalf("updated settings: %+v", s)
		}
		// The dead-letter queue acts: a task that fails its one attempt is
		// copied there.
		id := add(t, e, "work", NewTask{Payload: json.RawMessage(`{"n":1}`)})[0]
		got, err := e.Lease(ctx, "jobs", "work", 1, time.Minute, 0)
		if err != nil || len(got) != 1 {
			t.Fatalf("Lease: %v %v", got, err)
		}
		must(t, e.Release(ctx, "jobs", id, got[0].LeaseID, "boom", 0))
		waitState(t, e, id, "failed")
		if d, err := e.Queue(ctx, "jobs", "dead"); err != nil || d.Counts["scheduled"] != 1 {
			t.Fatalf("dead-letter queue: %+v %v; want the failed task's copy", d, err)
		}
		q, err = e.UpdateQueue(ctx, "jobs", "work", errandapi.QueueRequest{DeadLetterQueue: errandapi.Null[string](), RatePerSecond: errandapi.Null[float64]()})
		if err != nil || q.Settings.DeadLetterQueue != nil || q.Settings.RatePerSecond != nil || q.Settings.MaxAgeSeconds == nil {
			t.Fatalf("cleared: %+v %v; want no dead-letter queue, no rate, the age kept", q.Settings, err)
		}
		other, push := "other", errandapi.ModePush
		_, err = e.UpdateQueue(ctx, "jobs", "work", errandapi.QueueRequest{Name: &other})
		wantCode(t, err, "INVALID_ARGUMENT", "name", "UpdateQueue(rename)")
		_, err = e.UpdateQueue(ctx, "jobs", "work", errandapi.QueueRequest{Mode: &push})
		wantCode(t, err, "INVALID_ARGUMENT", "mode", "UpdateQueue(mode)")
		_, err = e.UpdateQueue(ctx, "jobs", "work", errandapi.QueueRequest{DeadLetterQueue: errandapi.Value("nowhere")})
		wantCode(t, err, "INVALID_ARGUMENT", "deadLetterQueue", "UpdateQueue(missing dead-letter queue)")
		_, err = e.UpdateQueue(ctx, "jobs", "nowhere", errandapi.QueueRequest{Paused: &f})
		wantCode(t, err, "NOT_FOUND", "", "UpdateQueue(missing queue)")
	})
}

// TestInstances: Instances lists the organization's instances,
// InstanceSettings answers an instance's settings as the API does, and
// DeleteInstance removes one with its queues and tasks.
func TestInstances(t *testing.T) {
	t.Parallel()
	eachStore(t, func(t *testing.T, kind string) {
		e, _ := open(t, kind)
		ctx := context.Background()
		must(t, e.CreateInstance(ctx, "billing"))
		must(t, e.CreateQueue(ctx, "billing", "invoices", QueueOptions{Pull: true}))
		res, err := e.Add(ctx, "billing", "invoices", NewTask{})
		if err != nil || res[0].Err != nil {
			t.Fatalf("Add: %v %v", res, err)
		}
		names, err := e.Instances(ctx)
		if err != nil || !slices.Contains(names, "billing") {
			t.Fatalf("Instances: %v %v", names, err)
		}
		ten := 10
		must(t, e.UpdateSettings(ctx, "billing", Settings{MaxInFlight: &ten}))
		s, err := e.InstanceSettings(ctx, "billing")
		if err != nil || s.MaxInFlight != 10 || s.RetentionDays != 7 || s.RateLimit != nil {
			t.Fatalf("InstanceSettings: %+v %v; want maxInFlight 10, retention 7, no rate limit", s, err)
		}
		must(t, e.DeleteInstance(ctx, "billing"))
		if names, err = e.Instances(ctx); err != nil || slices.Contains(names, "billing") {
			t.Fatalf("Instances after the delete: %v %v", names, err)
		}
		_, err = e.Get(ctx, "billing", res[0].ID)
		wantCode(t, err, "NOT_FOUND", "", "Get(a deleted instance's task)")
		err = e.DeleteInstance(ctx, "nosuch")
		wantCode(t, err, "NOT_FOUND", "", "DeleteInstance(missing)")
	})
}
