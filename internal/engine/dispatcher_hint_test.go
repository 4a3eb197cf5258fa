package engine_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/store/sqlite"
	"github.com/errandhq/errand/internal/task"
)

// callRecorder records, in order, the store calls a test looks at.
type callRecorder struct {
	mu    sync.Mutex
	calls []string
}

func (c *callRecorder) log(call string) {
	c.mu.Lock()
	c.calls = append(c.calls, call)
	c.mu.Unlock()
}

// take returns the calls so far and forgets them.
func (c *callRecorder) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.calls
	c.calls = nil
	return out
}

// callLog is a SQLite store that records the dispatcher's reads of the
// due queues ("due") and its claims ("claim QUEUE").
type callLog struct {
	*sqlite.Store
	callRecorder
	onClaim func(q *task.Queue) // if set (under mu), called after each claim
}

func (c *callLog) TaskDueQueues(ctx context.Context, now int64) ([]store.QueueRef, error) {
	c.log("due")
	return c.Store.TaskDueQueues(ctx, now)
}

func (c *callLog) TaskClaim(ctx context.Context, p *store.ClaimParams) ([]*task.Task, error) {
	c.mu.Lock()
	c.calls = append(c.calls, "claim "+p.Queue.Name)
	on := c.onClaim
	c.mu.Unlock()
	ts, err := c.Store.TaskClaim(ctx, p)
	if on != nil {
		on(p.Queue)
	}
	return ts, err
}

// storeBehind stores a task of q, due now, with id, behind the engine's
// back (as another node would: no hint, no wake).
func storeBehind(t *testing.T, b *bundle, st *callLog, q *task.Queue, id string) {
	t.Helper()
	tk, err := task.NewTask(q, task.AddInput{}, b.clock.Now().UnixMilli(), task.URLRules{AllowHTTP: true})
	if err != nil {
		t.Error(err)
		return
	}
	tk.ID = id
	if res, err := st.Store.TaskAdd(b.ctx, []*task.Task{tk}); err != nil || res[0].Err != nil {
		t.Error(err, res)
	}
}

// setupLogged is setup on a store that logs the dispatcher's calls.
func setupLogged(t *testing.T) (*bundle, *callLog) {
	t.Helper()
	raw, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "errand.db"), sqlite.Options{Logger: discardLog})
	if err != nil {
		t.Fatal(err)
	}
	st := &callLog{Store: raw}
	return start(t, st, func() { _ = raw.Close() }), st
}

// TestAddedTaskClaimedBeforeTheDueRead: a task added due now that its add
// does not claim (a named one: see TaskAddClaim) is claimed by the pass
// the add wakes before that pass reads which queues have a task due (a
// round trip the delivery does not wait for on PostgreSQL).
func TestAddedTaskClaimedBeforeTheDueRead(t *testing.T) {
	t.Parallel()
	b, st := setupLogged(t)
	rcv := newReceiver(t)
	b.queue("emails", &task.QueuePatch{Target: targetPtr(rcv.URL + "/hook")})
	b.sig.Settle(t)
	st.take()
	b.add("emails", task.AddInput{Name: "once"})
	rcv.next(t)
	if calls := st.take(); len(calls) == 0 || calls[0] != "claim emails" {
		t.Fatalf("after the add the dispatcher called %v, want the claim of emails first", calls)
	}
}

// TestStaleHintFallsBack: a hint for a queue with nothing due (another
// node took the task) claims nothing, and the same pass then reads the due
// queues and delivers what another queue holds.
func TestStaleHintFallsBack(t *testing.T) {
	t.Parallel()
	b, st := setupLogged(t)
	rcv := newReceiver(t)
	empty := b.queue("empty", &task.QueuePatch{Target: targetPtr(rcv.URL + "/hook")})
	full := b.queue("full", &task.QueuePatch{Target: targetPtr(rcv.URL + "/hook")})
	b.sig.Settle(t)
	// A task stored behind the engine's back (as another node would),
	// and a hint that names the wrong queue.
	storeBehind(t, b, st, full, "stale-hint-task")
	st.take()
	engine.DueAdded(b.eng, empty.InstanceID, empty.Name)
	b.eng.Wake()
	rcv.next(t)
	calls := st.take()
	i := slices.Index(calls, "claim empty")
	if i != 0 || !slices.Equal(calls[i:min(i+3, len(calls))], []string{"claim empty", "due", "claim full"}) {
		t.Fatalf("the dispatcher called %v, want the hinted claim of empty, then the due read and the claim of full", calls)
	}
}

// TestHintDoesNotStarveOtherQueues: a pass whose hinted claim starts a
// delivery still reads the due queues and claims the others, so that a
// queue added to all the time (a new task and its hint after every claim
// here) does not keep them waiting.
func TestHintDoesNotStarveOtherQueues(t *testing.T) {
	t.Parallel()
	b, st := setupLogged(t)
	rcv := newReceiver(t)
	busy := b.queue("busy", &task.QueuePatch{Target: targetPtr(rcv.URL + "/hook")})
	other := b.queue("other", &task.QueuePatch{Target: targetPtr(rcv.URL + "/hook")})
	b.sig.Settle(t)
	// A task of other stored behind the engine's back (no hint).
	storeBehind(t, b, st, other, "fair-other")
	var mu sync.Mutex
	busyAdds := 0
	st.mu.Lock()
	st.onClaim = func(q *task.Queue) {
		mu.Lock()
		defer mu.Unlock()
		if q.Name != "busy" || busyAdds >= 5 {
			return
		}
		busyAdds++
		storeBehind(t, b, st, busy, fmt.Sprint("fair-busy-", busyAdds))
		engine.DueAdded(b.eng, busy.InstanceID, busy.Name)
	}
	st.mu.Unlock()
	st.take()
	storeBehind(t, b, st, busy, "fair-busy-0")
	engine.DueAdded(b.eng, busy.InstanceID, busy.Name)
	b.eng.Wake()
	for range 7 { // every task of both queues delivered
		rcv.next(t)
	}
	calls := st.take()
	first := slices.Index(calls, "claim busy")
	other1 := slices.Index(calls, "claim other")
	second := first + 1 + slices.Index(calls[first+1:], "claim busy")
	if first != 0 || other1 < 0 || other1 > second {
		t.Fatalf("the dispatcher called %v: other waited behind the busy queue's hints", calls)
	}
}
