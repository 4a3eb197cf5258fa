package channels

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/errandhq/errand/internal/store"
)

// TestQuietChannelIsNotLag: a subscriber that fell out of the stream and
// read its way back to the head is not dropped when the next message comes
// after a quiet LagTimeout, even before it rejoined the stream (its
// goroutine has not asked for more yet): no message had waited for it. One
// that took nothing while messages waited for it that long is dropped.
func TestQuietChannelIsNotLag(t *testing.T) {
	st, h, fc := startHubWith(t, Config{Buffer: 2, PageSize: 16, MaxLag: 1 << 20, LagTimeout: 10 * time.Second})
	passes := make(chan struct{}, 1000)
	h.passed = func() { // before the room starts, with the first subscriber
		select {
		case passes <- struct{}{}:
		default:
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ref := store.ChannelRef{InstanceID: "inst-1", Channel: "room-1"}
	caughtUp, err := h.Subscribe(ctx, ref, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer caughtUp.Close()
	idle, err := h.Subscribe(ctx, ref, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	next := 0
	// appendAndPass appends n messages and waits until the room has
	// handed them out and checked its subscribers' lag.
	appendAndPass := func(n int) {
		t.Helper()
		for range n {
			next++
			if _, err := st.ChannelAppend(ctx, []*store.ChannelAppendParams{{Ref: ref, TaskID: fmt.Sprint("t", next), Body: []byte(`{}`), Now: 1}}); err != nil {
				t.Fatal(err)
			}
		}
		h.Appended(ref)
		r := h.rooms[ref]
		for {
			select {
			case <-passes:
			case <-ctx.Done():
				t.Fatal("the room did not hand the messages out")
			}
			r.mu.Lock()
			done := r.next > int64(next)
			r.mu.Unlock()
			if done {
				return
			}
		}
	}
	appendAndPass(5) // more than their buffers: both leave the stream
	for want := int64(1); want <= 5; want++ {
		if ev, err := caughtUp.Next(ctx); err != nil || ev.ID != want {
			t.Fatalf("message %d: %+v %v", want, ev, err)
		}
	}
	fc.Advance(10*time.Second + time.Millisecond)
	appendAndPass(1)
	if ev, err := caughtUp.Next(ctx); err != nil || ev.ID != 6 {
		t.Fatalf("the caught-up subscriber after a quiet spell: %+v %v", ev, err)
	}
	if _, err := idle.Next(ctx); !errors.Is(err, ErrLagged) {
		t.Fatalf("the idle subscriber: %v, want ErrLagged", err)
	}
}
