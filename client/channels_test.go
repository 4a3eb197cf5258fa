package client_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/errandhq/errand/client"
	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/id"
	"github.com/errandhq/errand/internal/store"
)

// appendTo appends a message to a channel's log as a delivery does and
// tells the engine, returning its body's payload.
func (e *env) appendTo(instance, channel, payload string) {
	e.t.Helper()
	inst, err := e.eng.Instance(context.Background(), "dev", instance)
	if err != nil {
		e.t.Fatal(err)
	}
	taskID := id.New(e.clock.Now())
	ref := store.ChannelRef{InstanceID: inst.ID, Channel: channel}
	m, err := e.st.ChannelAppend(context.Background(), &store.ChannelAppendParams{Ref: ref, TaskID: taskID,
		Body: []byte(`{"task":{"id":"` + taskID + `"},"payload":` + payload + `}`), Now: e.clock.Now().UnixMilli()})
	if err != nil {
		e.t.Fatal(err)
	}
	e.eng.ChannelAppended(ref, m)
}

// TestSubscribe: the SDK's subscription gets typed events in order, with
// event ids; a new one resumes after an id; when the connection breaks the
// next call resumes on a new one from the last id; an id the channel
// never gave and a bad channel name are INVALID_ARGUMENT; Close ends it.
func TestSubscribe(t *testing.T) {
	e := start(t, options{})
	ctx := t.Context()
	sub := must(e.c.Subscribe(ctx, "jobs", "room-1", "")).of(t)
	e.appendTo("jobs", "room-1", `{"n":1}`)
	e.appendTo("jobs", "room-1", `{"n":2}`)
	for _, want := range []string{"1", "2"} {
		ev, err := sub.Next()
		if err != nil || ev.Type != errandapi.ChannelMessage || ev.ID != want || sub.LastEventID() != want {
			t.Fatalf("event %+v %v, want message %s", ev, err, want)
		}
	}
	// From an id.
	from1 := must(e.c.Subscribe(ctx, "jobs", "room-1", "1")).of(t)
	if ev, err := from1.Next(); err != nil || ev.ID != "2" || !strings.HasSuffix(string(ev.Data), `"payload":{"n":2}}`) {
		t.Fatalf("from 1: %+v %v", ev, err)
	}
	_ = from1.Close()
	if _, err := from1.Next(); !errors.Is(err, client.ErrSubscriptionClosed) {
		t.Fatalf("after Close: %v", err)
	}
	if _, err := e.c.Subscribe(ctx, "jobs", "room-1", "99"); !errors.Is(err, client.ErrInvalidArgument) {
		t.Fatalf("an id never given: %v", err)
	}
	if _, err := e.c.Subscribe(ctx, "jobs", "bad.name", ""); !errors.Is(err, client.ErrInvalidArgument) {
		t.Fatalf("a bad channel name: %v", err)
	}
	// A broken connection: the next call resumes from the last id.
	e.srv.CloseClientConnections()
	e.appendTo("jobs", "room-1", `{"n":3}`)
	if ev, err := sub.Next(); err != nil || ev.ID != "3" || !strings.HasSuffix(string(ev.Data), `"payload":{"n":3}}`) {
		t.Fatalf("after the connection broke: %+v %v", ev, err)
	}
	_ = sub.Close()
}
