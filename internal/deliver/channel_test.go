package deliver

import (
	"context"
	"strings"
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
