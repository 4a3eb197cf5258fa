package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/errandhq/errand/client"
	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/task"
)

// chainRig drives a chain rule on one `errand dev` process that it kills
// with SIGKILL and restarts on the same data.
type chainRig struct {
	t    *testing.T
	bin  string
	data string
	cmd  interface{ Wait() error }
	kill func() error
	c    *client.Client

	parentOf map[string]string // task id → the parent its payload names ("" for a root)
	depth    map[string]int
	acked    int
	pending  int // chain events found in the store right after a kill, summed
}

// holdTrigger keeps the chainer from ending any chain event: its removal
// of an event fails (a store fault, so the event stays and is tried
// again), while a finish still writes its events.
const holdTrigger = `CREATE TRIGGER test_hold_chains BEFORE DELETE ON trigger_events BEGIN SELECT RAISE(ABORT, 'held by the test'); END`

// sql runs one statement on the process's SQLite file from the test's own
// connection (waiting for the process's writer) and, when into is not nil,
// scans the one value it returns.
func (r *chainRig) sql(stmt string, into any) {
	r.t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(r.data, "errand.db")+"?_pragma=busy_timeout(10000)")
	if err != nil {
		r.t.Fatal(err)
	}
	defer db.Close()
	if into != nil {
		err = db.QueryRow(stmt).Scan(into)
	} else {
		_, err = db.Exec(stmt)
	}
	if err != nil {
		r.t.Fatalf("%s: %v", stmt, err)
	}
}

func (r *chainRig) start() {
	r.t.Helper()
	cmd, url := startErrand(r.t, r.bin, "--data", r.data)
	r.cmd, r.kill = cmd, func() error { return cmd.Process.Signal(syscall.SIGKILL) }
	c, err := client.New(url, client.Options{})
	if err != nil {
		r.t.Fatal(err)
	}
	r.c = c
}

// crash kills the process (no graceful anything), counts the chain events
// it left in the outbox, lets go of the chainer if it was held, and starts
// the process again on the same files. It returns the count.
func (r *chainRig) crash() int {
	r.t.Helper()
	if err := r.kill(); err != nil {
		r.t.Fatal(err)
	}
	_ = r.cmd.Wait()
	var n int
	r.sql(`SELECT count(*) FROM trigger_events`, &n)
	r.sql(`DROP TRIGGER IF EXISTS test_hold_chains`, nil)
	r.pending += n
	r.start()
	return n
}

// work leases up to count tasks of the chain queue (waiting up to wait
// seconds for one), records what each one's payload says, and acks them
// in one call. It returns how many it acked.
func (r *chainRig) work(count, wait int) int {
	r.t.Helper()
	ctx := context.Background()
	leased, err := r.c.Lease(ctx, "jobs", "chain", errandapi.LeaseRequest{Count: &count, LeaseSeconds: new(300), WaitSeconds: wait})
	if err != nil {
		r.t.Fatalf("lease: %v", err)
	}
	if len(leased) == 0 {
		return 0
	}
	acks := make([]errandapi.BatchAck, len(leased))
	for i, l := range leased {
		if _, seen := r.parentOf[l.ID]; seen {
			r.t.Fatalf("task %s leased a second time", l.ID)
		}
		var p struct {
			Root *int `json:"root"`
			Task *struct {
				ID    string `json:"id"`
				Depth int    `json:"depth"`
			} `json:"task"`
		}
		if err := json.Unmarshal(l.Payload, &p); err != nil {
			r.t.Fatalf("payload of %s: %v", l.ID, err)
		}
		switch {
		case p.Root != nil:
			r.parentOf[l.ID], r.depth[l.ID] = "", 0
		case p.Task != nil:
			r.parentOf[l.ID], r.depth[l.ID] = p.Task.ID, p.Task.Depth+1
		default:
			r.t.Fatalf("task %s has payload %s", l.ID, l.Payload)
		}
		acks[i] = errandapi.BatchAck{ID: l.ID, LeaseID: l.LeaseID}
	}
	res, err := r.c.AckMany(ctx, "jobs", "chain", acks)
	if err != nil {
		r.t.Fatalf("ack: %v", err)
	}
	for _, a := range res {
		if !a.OK {
			r.t.Fatalf("ack of %s refused: %s %s", a.ID, a.Code, a.Message)
		}
	}
	r.acked += len(res)
	return len(res)
}

// TestChainSurvivesKill9: a task rule chains a queue to itself while the
// process is killed with SIGKILL again and again, each time right after a
// batch of finishes was answered, and restarted on the same SQLite files.
// Whether the chainer ended a batch's events before the kill is a race, so
// before the last batch of each round the test holds the chainer (a SQLite
// trigger refuses its removal of an event, the store fault it retries):
// that batch's events are surely in the outbox when the kill lands. In the
// end every finished task below depth 8 has exactly one chained child,
// every one at depth 8 none (DEPTH_EXCEEDED, recorded once each on the
// rule), and no task exists that was not chained from a finished one.
func TestChainSurvivesKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	const roots, kills = 30, 6
	r := &chainRig{t: t, bin: buildErrand(t), data: t.TempDir(), parentOf: map[string]string{}, depth: map[string]int{}}
	r.start()
	ctx := context.Background()
	if _, err := r.c.CreateQueue(ctx, "jobs", "chain", errandapi.QueueRequest{Mode: new(errandapi.ModePull)}); err != nil {
		t.Fatal(err)
	}
	q := "jobs/chain"
	rule, err := r.c.CreateTrigger(ctx, "jobs", errandapi.TriggerRequest{Queue: &q, Task: &errandapi.TriggerTaskSpec{Queue: &q}})
	if err != nil {
		t.Fatal(err)
	}
	news := make([]errandapi.NewTask, roots)
	for i := range news {
		news[i] = errandapi.NewTask{Payload: json.RawMessage(fmt.Sprintf(`{"root":%d}`, i))}
	}
	if _, err := r.c.AddTasks(ctx, "jobs", "chain", news...); err != nil {
		t.Fatal(err)
	}

	// Work in batches; after every third batch answered, kill -9. The
	// third batch's events are held in the outbox.
	want := roots * (task.MaxDepth + 1)
	held := 0
	for k := 0; k < kills; k++ {
		r.work(15, 5)
		r.work(15, 5)
		r.sql(holdTrigger, nil)
		n := r.work(15, 5)
		if left := r.crash(); left < n {
			t.Fatalf("kill %d: %d chain events in the outbox, but the chainer was held for the last %d finishes", k+1, left, n)
		}
		held += n
	}
	// Then finish the chains: each lease waits (server side) for the next
	// chained task; a lease that finds none once all are acked ends it.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		n := r.work(50, 2)
		if n == 0 && r.acked >= want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("acked %d of %d tasks: chained tasks were lost", r.acked, want)
		}
	}
	// The rule's counts are written by the chainer after the last finish:
	// wait for them, with a server-side wait for a stray task between
	// reads (a duplicate would show up there).
	for {
		got, err := r.c.GetTrigger(ctx, "jobs", rule.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Fired == int64(want-roots) && got.ErrorCount == roots {
			break
		}
		if got.Fired > int64(want-roots) || got.ErrorCount > roots || time.Now().After(deadline) {
			t.Fatalf("rule fired %d (want %d), errorCount %d (want %d), last error %v", got.Fired, want-roots, got.ErrorCount, roots, deref(got.LastError))
		}
		r.work(50, 1)
	}

	// Every task the store holds was leased and recorded; each parent has
	// its one child.
	stored, cursor := 0, ""
	for {
		page, err := r.c.ListTasks(ctx, "jobs", "chain", client.ListOptions{Limit: 200, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		for _, tk := range page.Tasks {
			stored++
			if tk.State != errandapi.StateSucceeded || tk.Depth != r.depth[tk.ID] {
				t.Errorf("task %s: %s at depth %d, recorded depth %d", tk.ID, tk.State, tk.Depth, r.depth[tk.ID])
			}
		}
		if page.Cursor == nil {
			break
		}
		cursor = *page.Cursor
	}
	children := map[string]int{}
	for _, p := range r.parentOf {
		if p != "" {
			children[p]++
		}
	}
	for id, d := range r.depth {
		wantKids := 1
		if d == task.MaxDepth {
			wantKids = 0
		}
		if children[id] != wantKids {
			t.Errorf("task %s at depth %d has %d chained children, want %d", id, d, children[id], wantKids)
		}
	}
	if stored != want || len(r.parentOf) != want {
		t.Fatalf("%d tasks stored, %d leased, want %d", stored, len(r.parentOf), want)
	}
	t.Logf("%d kills left %d chain events in the outbox between a finish and its chained add (%d of them held)", kills, r.pending, held)
	if held == 0 {
		t.Fatalf("no kill landed between a finish and its chained add: the test proved nothing")
	}
}
