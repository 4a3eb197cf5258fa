package history

import (
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/errandhq/errand/errandapi"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.UnixMilli(1_790_000_000_000)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

func ptr[T any](v T) *T { return &v }

// clean is a history where nothing went wrong: a push task delivered once
// (2xx), a pull task leased, released with an error, leased again and
// acked, and an add whose answer was lost and whose task was never stored.
func clean() ([]Entry, Final) {
	es := []Entry{
		{F: Add, Type: OK, Queue: "push", Name: "p1", ID: "id-p1", Start: at(0), End: at(5)},
		{F: Add, Type: OK, Queue: "pull", Name: "q1", ID: "id-q1", Start: at(0), End: at(5)},
		{F: Add, Type: Info, Queue: "pull", Name: "q2", Start: at(0), End: at(5), Err: "connection reset"},
		{F: Deliver, Type: OK, Queue: "push", Name: "p1", ID: "id-p1", Attempt: 1, Start: at(10), End: at(12), Status: 200, WebhookID: "id-p1", SigOK: true},
		{F: Lease, Type: OK, Queue: "pull", Name: "q1", ID: "id-q1", Attempt: 1, LeaseID: "L1", Expires: at(3010), Start: at(8), End: at(10)},
		{F: Release, Type: OK, Queue: "pull", Name: "q1", ID: "id-q1", LeaseID: "L1", Start: at(20), End: at(22)},
		{F: Lease, Type: OK, Queue: "pull", Name: "q1", ID: "id-q1", Attempt: 2, LeaseID: "L2", Expires: at(3200), Start: at(198), End: at(200)},
		{F: Ack, Type: OK, Queue: "pull", Name: "q1", ID: "id-q1", LeaseID: "L2", Start: at(210), End: at(212)},
	}
	final := Final{
		Tasks: []errandapi.Task{
			{ID: "id-p1", Queue: "push", Name: ptr("p1"), State: errandapi.StateSucceeded, Attempt: 1,
				Attempts: []errandapi.Attempt{{Attempt: 1, Status: errandapi.AttemptSucceeded}}},
			{ID: "id-q1", Queue: "pull", Name: ptr("q1"), State: errandapi.StateSucceeded, Attempt: 2,
				Attempts: []errandapi.Attempt{{Attempt: 1, Status: errandapi.AttemptFailed}, {Attempt: 2, Status: errandapi.AttemptSucceeded}}},
		},
		Counts: map[errandapi.State]int{errandapi.StateSucceeded: 2},
	}
	return es, final
}

func TestCleanHistoryPasses(t *testing.T) {
	es, final := clean()
	r := Check(FromEntries(es), final, Options{MaxConcurrent: map[string]int{"push": 1}})
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if r.Acknowledged != 2 || r.Indeterminate != 1 || r.Completed != 2 || r.Redeliveries != 1 || r.Duplicates != 0 || r.Deliveries != 1 || r.Leases != 2 {
		t.Fatalf("figures: %s", r.Figures())
	}
}

// TestCheckerFailsOnPlantedFaults plants one fault at a time into the
// clean history and wants the checker to name it in the right category.
func TestCheckerFailsOnPlantedFaults(t *testing.T) {
	for _, tc := range []struct {
		name  string
		plant func(es []Entry, f *Final) []Entry
		kind  func(r *Report) []string
		want  string
	}{
		{"lost: the only delivery of an acknowledged task is missing", func(es []Entry, f *Final) []Entry {
			return append(es[:3:3], es[4:]...)
		}, func(r *Report) []string { return r.Lost }, "p1: acknowledged"},
		{"lost: an acknowledged task is gone from the store", func(es []Entry, f *Final) []Entry {
			f.Tasks = f.Tasks[1:]
			f.Counts[errandapi.StateSucceeded] = 1
			return es
		}, func(r *Report) []string { return r.Lost }, "not in the store"},
		{"unexpected: a delivery of a task never added", func(es []Entry, f *Final) []Entry {
			return append(es, Entry{F: Deliver, Type: OK, Queue: "push", Name: "ghost", ID: "id-g", Attempt: 1, Start: at(50), End: at(51), WebhookID: "id-g", SigOK: true})
		}, func(r *Report) []string { return r.Unexpected }, "ghost"},
		{"unexpected: a task in the store never added", func(es []Entry, f *Final) []Entry {
			f.Tasks = append(f.Tasks, errandapi.Task{ID: "id-x", Name: ptr("x"), State: errandapi.StateSucceeded})
			f.Counts[errandapi.StateSucceeded] = 3
			return es
		}, func(r *Report) []string { return r.Unexpected }, "id-x"},
		{"completed twice: acks of two leases both ok", func(es []Entry, f *Final) []Entry {
			return append(es, Entry{F: Ack, Type: OK, Queue: "pull", Name: "q1", LeaseID: "L1", Start: at(30), End: at(31)})
		}, func(r *Report) []string { return r.CompletedTwice }, "acks of 2 different leases"},
		{"completed twice: two succeeded attempts stored", func(es []Entry, f *Final) []Entry {
			f.Tasks[1].Attempts[0].Status = errandapi.AttemptSucceeded
			return es
		}, func(r *Report) []string { return r.CompletedTwice }, "all succeeded"},
		{"completed twice: delivered after its success was stored", func(es []Entry, f *Final) []Entry {
			return append(es, Entry{F: Deliver, Type: OK, Queue: "push", Name: "p1", ID: "id-p1", Attempt: 2, Start: at(900), End: at(901), WebhookID: "id-p1", SigOK: true})
		}, func(r *Report) []string { return r.CompletedTwice }, "after attempt 1 was stored"},
		{"overlap: a lease granted while the first is held", func(es []Entry, f *Final) []Entry {
			es[6].Start, es[6].End = at(12), at(15) // before the release of L1 was sent
			return es
		}, func(r *Report) []string { return r.Overlaps }, "granted while lease L1"},
		{"overlap: a delivery beside an open one", func(es []Entry, f *Final) []Entry {
			return append(es, Entry{F: Deliver, Type: Fail, Queue: "push", Name: "p1", ID: "id-p1", Attempt: 2, Start: at(11), End: at(13), Status: 500, WebhookID: "id-p1", SigOK: true})
		}, func(r *Report) []string { return r.Overlaps }, "while an earlier delivery was open"},
		{"overlap: a stale ack accepted after the task was leased again", func(es []Entry, f *Final) []Entry {
			es[5].F, es[5].Start, es[5].End = Ack, at(300), at(301)
			return es
		}, func(r *Report) []string { return r.Overlaps }, "after the task was leased again"},
		{"attempt order: a re-lease with the same attempt number", func(es []Entry, f *Final) []Entry {
			es[6].Attempt = 1
			return es
		}, func(r *Report) []string { return r.AttemptOrder }, "attempt 1 after attempt 1"},
		{"final: the counts disagree with the tasks", func(es []Entry, f *Final) []Entry {
			f.Counts[errandapi.StateSucceeded] = 1
			return es
		}, func(r *Report) []string { return r.FinalMismatch }, "count 1 succeeded"},
		{"final: a task left retrying", func(es []Entry, f *Final) []Entry {
			f.Tasks[1].State = errandapi.StateRetrying
			f.Counts = map[errandapi.State]int{errandapi.StateSucceeded: 1, errandapi.StateRetrying: 1}
			return es
		}, func(r *Report) []string { return r.FinalMismatch }, "retrying at the end"},
		{"final: a delivered attempt missing from the task's history", func(es []Entry, f *Final) []Entry {
			f.Tasks[1].Attempts = f.Tasks[1].Attempts[1:]
			return es
		}, func(r *Report) []string { return r.FinalMismatch }, "attempt 1, which is not in its attempt history"},
		{"headers: a delivery with a wrong Webhook-Id", func(es []Entry, f *Final) []Entry {
			es[3].WebhookID = "other"
			return es
		}, func(r *Report) []string { return r.BadHeaders }, "Webhook-Id \"other\""},
		{"concurrency: two deliveries open on a maxConcurrent 1 queue", func(es []Entry, f *Final) []Entry {
			es = append(es, Entry{F: Add, Type: OK, Queue: "push", Name: "p2", ID: "id-p2", Start: at(0), End: at(5)},
				Entry{F: Deliver, Type: OK, Queue: "push", Name: "p2", ID: "id-p2", Attempt: 1, Start: at(11), End: at(14), WebhookID: "id-p2", SigOK: true})
			f.Tasks = append(f.Tasks, errandapi.Task{ID: "id-p2", Name: ptr("p2"), State: errandapi.StateSucceeded, Attempt: 1,
				Attempts: []errandapi.Attempt{{Attempt: 1, Status: errandapi.AttemptSucceeded}}})
			f.Counts[errandapi.StateSucceeded] = 3
			return es
		}, func(r *Report) []string { return r.Concurrency }, "2 deliveries open at once"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			es, final := clean()
			es = tc.plant(es, &final)
			r := Check(FromEntries(es), final, Options{MaxConcurrent: map[string]int{"push": 1}})
			if r.OK() || r.Err() == nil {
				t.Fatalf("the checker passed a history with a planted fault: %s", r.Figures())
			}
			found := tc.kind(r)
			if !strings.Contains(strings.Join(found, "\n"), tc.want) {
				t.Fatalf("want a violation naming %q in its category; got:\n%v", tc.want, r.Err())
			}
		})
	}
}

// TestIndeterminateAddMayOrMayNotExist: an add whose answer was lost may
// show up delivered and stored, or never: neither is a violation; a
// refused add that shows up is.
func TestIndeterminateAddMayOrMayNotExist(t *testing.T) {
	es, final := clean()
	es = append(es,
		Entry{F: Lease, Type: OK, Queue: "pull", Name: "q2", ID: "id-q2", Attempt: 1, LeaseID: "L9", Expires: at(5000), Start: at(8), End: at(10)},
		Entry{F: Ack, Type: Info, Queue: "pull", Name: "q2", LeaseID: "L9", Start: at(20), End: at(40)})
	final.Tasks = append(final.Tasks, errandapi.Task{ID: "id-q2", Name: ptr("q2"), State: errandapi.StateSucceeded, Attempt: 1,
		Attempts: []errandapi.Attempt{{Attempt: 1, Status: errandapi.AttemptSucceeded}}})
	final.Counts[errandapi.StateSucceeded] = 3
	if err := Check(FromEntries(es), final, Options{}).Err(); err != nil {
		t.Fatalf("an indeterminate add that was stored, with an ack whose answer was lost: %v", err)
	}
	es[2].Type = Fail // the add was refused: the task may not exist
	if r := Check(FromEntries(es), final, Options{}); len(r.Unexpected) == 0 {
		t.Fatalf("a refused add that was delivered passed: %s", r.Figures())
	}
}

// TestRecorderPairsBeginAndEnd: Begin and End through the History, its
// Changed signal and Count.
func TestRecorderPairsBeginAndEnd(t *testing.T) {
	h := New()
	now := t0
	h.Now = func() time.Time { now = now.Add(time.Millisecond); return now }
	ch := h.Changed()
	e := h.Begin(Entry{F: Add, Name: "a"})
	select {
	case <-ch:
	default:
		t.Fatal("Begin did not signal Changed")
	}
	if got := h.Entries()[0]; got.Type != Pending || !got.Start.Equal(at(1)) {
		t.Fatalf("begun: %+v", got)
	}
	h.End(e, OK, func(e *Entry) { e.ID = "x" })
	h.Record(Entry{F: Deliver, Name: "a", ID: "x", Type: OK})
	es := h.Entries()
	if es[0].Type != OK || es[0].ID != "x" || !es[0].End.Equal(at(2)) || es[1].Index != 1 || h.Count(Add, OK) != 1 || h.Count(Deliver, OK) != 1 {
		t.Fatalf("entries: %+v", es)
	}
}
