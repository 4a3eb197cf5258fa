package engine_test

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/errandhq/errand/internal/clock"
	"github.com/errandhq/errand/internal/deliver"
	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/store/sqlite"
	"github.com/errandhq/errand/internal/task"
)

// callLog records, in order, the dispatcher's reads of the due queues
// ("due") and its claims ("claim QUEUE").
type callLog struct {
	*sqlite.Store
	mu    sync.Mutex
	calls []string
}

func (c *callLog) TaskDueQueues(ctx context.Context, now int64) ([]store.QueueRef, error) {
	c.mu.Lock()
	c.calls = append(c.calls, "due")
	c.mu.Unlock()
	return c.Store.TaskDueQueues(ctx, now)
}

func (c *callLog) TaskClaim(ctx context.Context, p *store.ClaimParams) ([]*task.Task, error) {
	c.mu.Lock()
	c.calls = append(c.calls, "claim "+p.Queue.Name)
	c.mu.Unlock()
	return c.Store.TaskClaim(ctx, p)
}

// take returns the calls so far and forgets them.
func (c *callLog) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.calls
	c.calls = nil
	return out
}

// setupLogged is setup on a store that logs the dispatcher's calls.
func setupLogged(t *testing.T) (*bundle, *callLog) {
	t.Helper()
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	raw, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "errand.db"), sqlite.Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	st := &callLog{Store: raw}
	fc := clock.NewFake(T0)
	wh := deliver.NewWebhook(deliver.WebhookOptions{})
	eng := engine.New(engine.Config{
		Store: st, Clock: fc, Dev: true, URLRules: task.URLRules{AllowHTTP: true},
		Logger: log, Deliverer: &deliver.Mux{Webhook: wh},
	})
	sig := engine.WithSignals(eng)
	if err := eng.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		eng.Stop()
		wh.Close()
		_ = raw.Close()
	})
	return &bundle{t: t, eng: eng, clock: fc, ctx: ctx, sig: sig}, st
}

// TestAddedTaskClaimedBeforeTheDueRead: a task added due now is claimed
// by the pass the add wakes before that pass reads which queues have a
// task due (a round trip the delivery does not wait for on PostgreSQL).
func TestAddedTaskClaimedBeforeTheDueRead(t *testing.T) {
	t.Parallel()
	b, st := setupLogged(t)
	rcv := newReceiver(t)
	b.queue("emails", &task.QueuePatch{Target: targetPtr(rcv.URL + "/hook")})
	b.sig.Settle(t)
	st.take()
	b.add("emails", task.AddInput{})
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
	tk, err := task.NewTask(full, task.AddInput{}, b.clock.Now().UnixMilli(), task.URLRules{AllowHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	tk.ID = "stale-hint-task"
	if res, err := st.Store.TaskAdd(b.ctx, []*task.Task{tk}); err != nil || res[0].Err != nil {
		t.Fatal(err, res)
	}
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
