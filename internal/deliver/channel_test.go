package deliver

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
	"github.com/errandhq/errand/internal/testkit/stores"
)

// TestChannelDeliver: an attempt succeeds once its message (the webhook
// body) is appended, with the event id as result, and tells Appended; the
// same task's next attempt answers the same event and appends nothing; a
// store that fails fails the attempt, to be retried.
func TestChannelDeliver(t *testing.T) {
	st := stores.Open(t, "sqlite")
	inst := &task.Instance{ID: "inst-1", Org: "acme", Name: "jobs", Settings: task.DefaultSettings(), WebhookKey: "whsec_x"}
	if err := st.InstanceCreate(context.Background(), inst); err != nil {
		t.Fatal(err)
	}
	var told []int64
	c := &Channel{Store: st, Appended: func(_ store.ChannelRef, m *store.ChannelMessage) { told = append(told, m.Seq) }}
	tk := &task.Task{ID: "t1", InstanceID: inst.ID, Queue: "default", Attempt: 1, MaxAttempts: 10, Payload: []byte(`{"n":1}`)}
	req := &Request{Task: tk, Target: task.Target{Channel: "room-1"}, Now: time.UnixMilli(1_790_000_000_000)}
	for attempt := 1; attempt <= 2; attempt++ {
		tk.Attempt = attempt
		res := c.Deliver(context.Background(), req)
		if res.Outcome.Status != task.AttemptSucceeded || string(res.Outcome.Result) != `{"channel":"room-1","eventId":"1"}` {
			t.Fatalf("attempt %d: %+v %s", attempt, res.Outcome, res.Outcome.Result)
		}
	}
	page, err := st.ChannelRead(context.Background(), &store.ChannelReadParams{Ref: store.ChannelRef{InstanceID: inst.ID, Channel: "room-1"}, Limit: 10})
	if err != nil || len(page.Messages) != 1 || string(page.Messages[0].Body) != string(Body(&task.Task{ID: "t1", InstanceID: inst.ID, Queue: "default", Attempt: 1, MaxAttempts: 10, Payload: []byte(`{"n":1}`)})) {
		t.Fatalf("log after two attempts: %+v %v", page, err)
	}
	if len(told) != 2 || told[0] != 1 || told[1] != 1 {
		t.Fatalf("Appended was told %v", told)
	}
	st.Close()
	tk.ID = "t2"
	res := c.Deliver(context.Background(), req)
	if res.Outcome.Status != task.AttemptFailed || !strings.HasPrefix(res.Outcome.Error, `appending to channel "room-1": `) {
		t.Fatalf("on a closed store: %+v", res.Outcome)
	}
}

// heldAppends is a real channel store whose first append waits for
// release, and which records how many messages each append wrote.
type heldAppends struct {
	store.ChannelStore
	entered, release chan struct{}
	mu               sync.Mutex
	sizes            []int
}

func (h *heldAppends) ChannelAppend(ctx context.Context, ps []*store.ChannelAppendParams) ([]*store.ChannelMessage, error) {
	h.mu.Lock()
	h.sizes = append(h.sizes, len(ps))
	first := len(h.sizes) == 1
	h.mu.Unlock()
	if first {
		close(h.entered)
		<-h.release
	}
	return h.ChannelStore.ChannelAppend(ctx, ps)
}

// TestChannelAppendsShareATransaction: attempts that append while another
// append is being written are written together in the next one, each
// answered with its own event id, in the order they arrived.
func TestChannelAppendsShareATransaction(t *testing.T) {
	raw := stores.Open(t, "sqlite")
	defer raw.Close()
	inst := &task.Instance{ID: "inst-1", Org: "acme", Name: "jobs", Settings: task.DefaultSettings(), WebhookKey: "whsec_x"}
	if err := raw.InstanceCreate(context.Background(), inst); err != nil {
		t.Fatal(err)
	}
	st := &heldAppends{ChannelStore: raw, entered: make(chan struct{}), release: make(chan struct{})}
	c := &Channel{Store: st}
	queued := make(chan int, 8)
	c.appends().Queued = func(n int) { queued <- n }
	joined := func() int {
		t.Helper()
		select {
		case n := <-queued:
			return n
		case <-time.After(10 * time.Second):
			t.Fatal("no append joined the group commit")
			return 0
		}
	}
	results := make(chan string, 4)
	deliver := func(id string) {
		tk := &task.Task{ID: id, InstanceID: inst.ID, Queue: "default", Attempt: 1, MaxAttempts: 10, Payload: []byte(`{"n":1}`)}
		res := c.Deliver(context.Background(), &Request{Task: tk, Target: task.Target{Channel: "room-1"}, Now: time.UnixMilli(1_790_000_000_000)})
		results <- id + " " + string(res.Outcome.Result)
	}
	go deliver("t1")
	joined()
	<-st.entered // the first append's transaction is being written
	for i, id := range []string{"t2", "t3", "t4"} {
		go deliver(id)
		if n := joined(); n != i+1 {
			t.Fatalf("%d appends waiting, want %d", n, i+1)
		}
	}
	close(st.release)
	got := map[string]bool{}
	for range 4 {
		got[<-results] = true
	}
	for i, id := range []string{"t1", "t2", "t3", "t4"} {
		if want := fmt.Sprintf(`%s {"channel":"room-1","eventId":"%d"}`, id, i+1); !got[want] {
			t.Fatalf("results %v, want %s", got, want)
		}
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if !slices.Equal(st.sizes, []int{1, 3}) {
		t.Fatalf("appends wrote %v messages, want [1 3]", st.sizes)
	}
}
