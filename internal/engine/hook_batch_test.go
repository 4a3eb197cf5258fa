package engine_test

import (
	"context"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/store/sqlite"
	"github.com/errandhq/errand/internal/task"
)

// heldHookAdds is a real store whose first hook add waits for release,
// and which records how many calls each hook add wrote.
type heldHookAdds struct {
	store.Store
	entered, release chan struct{}
	mu               sync.Mutex
	sizes            []int
}

func (h *heldHookAdds) TriggerHookAdd(ctx context.Context, ps []*store.TriggerHookAddParams) ([]store.TriggerFireResult, error) {
	h.mu.Lock()
	h.sizes = append(h.sizes, len(ps))
	first := len(h.sizes) == 1
	h.mu.Unlock()
	if first {
		close(h.entered)
		<-h.release
	}
	return h.Store.TriggerHookAdd(ctx, ps)
}

// TestHookCallsShareATransaction: hook calls that arrive while another
// call's transaction is being written are written together in the next
// one (a rule's count is one row, so calls written one at a time would each
// wait for the last one's commit), and each is answered with its own task
// and counted on the rule.
func TestHookCallsShareATransaction(t *testing.T) {
	raw, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "errand.db"), sqlite.Options{Logger: discardLog})
	if err != nil {
		t.Fatal(err)
	}
	st := &heldHookAdds{Store: raw, entered: make(chan struct{}), release: make(chan struct{})}
	b := start(t, st, func() { _ = raw.Close() })
	b.queue("in", &task.QueuePatch{Mode: new(task.ModePull)})
	tr, err := b.eng.TriggerCreate(b.ctx, "dev", "jobs", &task.TriggerPatch{Queue: new("jobs/in"), Hook: &task.HookPatch{}})
	if err != nil {
		t.Fatal(err)
	}
	queued := make(chan int, 8)
	engine.OnHookQueued(b.eng, func(n int) { queued <- n })

	type answer struct {
		id  string
		err error
	}
	answers := make(chan answer, 4)
	call := func() {
		h, err := b.eng.HookFind(b.ctx, "jobs", tr.HookToken)
		if err != nil {
			answers <- answer{err: err}
			return
		}
		added, err := b.eng.HookFire(b.ctx, h, engine.HookCall{Body: []byte(`{"n":1}`), Header: func(string) string { return "" }})
		if err != nil {
			answers <- answer{err: err}
			return
		}
		answers <- answer{id: added.TaskID}
	}
	// Each wait is bounded: a call that never joins a batch fails the test.
	wait := func(c <-chan int) int {
		t.Helper()
		select {
		case n := <-c:
			return n
		case <-time.After(10 * time.Second):
			t.Fatal("no hook call joined the group commit")
			return 0
		}
	}
	go call()
	wait(queued)
	<-st.entered // the first call's transaction is being written
	for range 3 {
		go call()
	}
	for want := 1; want <= 3; want++ {
		if n := wait(queued); n != want {
			t.Fatalf("%d calls waiting, want %d", n, want)
		}
	}
	close(st.release)
	ids := map[string]bool{}
	for range 4 {
		a := <-answers
		if a.err != nil || a.id == "" {
			t.Fatalf("a hook call: %+v", a)
		}
		ids[a.id] = true
	}
	if len(ids) != 4 {
		t.Fatalf("4 calls answered %d tasks", len(ids))
	}
	st.mu.Lock()
	sizes := slices.Clone(st.sizes)
	st.mu.Unlock()
	if !slices.Equal(sizes, []int{1, 3}) {
		t.Fatalf("hook adds wrote %v calls, want [1 3]", sizes)
	}
	got, err := b.eng.TriggerGet(b.ctx, engine.TriggerRef{Org: "dev", Instance: "jobs", ID: tr.ID})
	if err != nil || got.Fired != 4 {
		t.Fatalf("rule fired %+v %v, want 4", got, err)
	}
}
