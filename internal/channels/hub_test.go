package channels

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/errandhq/errand/internal/clock"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/testkit/stores"
)

// startHub starts a hub with a buffer of buffer messages on a SQLite
// store of its own; both close when the test ends, the hub first.
func startHub(t *testing.T, buffer int) (store.Store, *Hub) {
	t.Helper()
	st, h, _ := startHubWith(t, Config{Buffer: buffer, PageSize: 16, MaxLag: 1 << 20, LagTimeout: time.Hour})
	return st, h
}

// startHubWith starts a hub of cfg on a SQLite store of its own, with a
// fake clock and a silent logger; both close when the test ends, the hub
// first.
func startHubWith(t *testing.T, cfg Config) (store.Store, *Hub, *clock.Fake) {
	t.Helper()
	st := stores.Open(t, "sqlite")
	fc := clock.NewFake(time.UnixMilli(1_790_000_000_000))
	cfg.Store, cfg.Clock, cfg.Logger = st, fc, slog.New(slog.NewTextHandler(io.Discard, nil))
	h := New(cfg)
	if err := h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		h.Stop()
		_ = st.Close()
	})
	return st, h, fc
}

// TestEveryMessageOnceInOrder: subscribers join at random moments of a
// stream of appends, live or from an earlier position, with buffers too
// small for a page (so they leave the stream, read the log and rejoin);
// each gets every message from its start once, in order, and the hub
// leaves no goroutine behind.
func TestEveryMessageOnceInOrder(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) }) // after the hub stops (cleanups run last first)
	st, h := startHub(t, 8)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ref := store.ChannelRef{InstanceID: "inst-1", Channel: "room-1"}
	const total = 400
	appended := make(chan int64, total)
	go func() {
		defer close(appended)
		for i := range total {
			ms, err := st.ChannelAppend(ctx, []*store.ChannelAppendParams{{Ref: ref, TaskID: fmt.Sprint("t", i), Body: []byte(fmt.Sprintf(`{"n":%d}`, i)), Now: 1}})
			if err != nil {
				t.Error(err)
				return
			}
			h.Appended(ref)
			appended <- ms[0].Seq
		}
	}()
	var wg sync.WaitGroup
	join := func(since int64) {
		defer wg.Done()
		sub, err := h.Subscribe(ctx, ref, since)
		if err != nil {
			t.Error(err)
			return
		}
		defer sub.Close()
		if since == Live && sub.Head != sub.Last() {
			t.Errorf("a live subscriber's head %d is not where it starts, %d", sub.Head, sub.Last())
		}
		want := sub.Last() + 1
		for want <= total {
			ev, err := sub.Next(ctx)
			if err != nil {
				t.Errorf("subscriber from %d: %v at %d", since, err, want)
				return
			}
			if ev.Kind != KindMessage || ev.ID != want || string(ev.Body) != fmt.Sprintf(`{"n":%d}`, want-1) {
				t.Errorf("subscriber from %d: got %+v, want message %d", since, ev, want)
				return
			}
			want++
		}
	}
	n := 0
	for seq := range appended {
		if seq%20 == 0 {
			wg.Add(2)
			go join(Live)
			go join(seq / 2)
			n += 2
		}
	}
	wg.Wait()
	if n == 0 {
		t.Fatal("no subscriber joined")
	}
}

// Live is a live subscription's since.
const Live = -1

// TestLiveHeadIsWhereTheStreamStarts: a live subscriber that joins a room
// whose fan-out may be behind the log (appends whose notification has not
// come) is told the room's position as its head, where its stream starts,
// and gets every message after it, none at or before it.
func TestLiveHeadIsWhereTheStreamStarts(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) }) // after the hub stops (cleanups run last first)
	st, h := startHub(t, 64)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ref := store.ChannelRef{InstanceID: "inst-1", Channel: "room-1"}
	first, err := h.Subscribe(ctx, ref, Live) // the room, at 0
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	for i := range 3 { // in the log, not yet told to the hub
		if _, err := st.ChannelAppend(ctx, []*store.ChannelAppendParams{{Ref: ref, TaskID: fmt.Sprint("t", i), Body: []byte(`1`), Now: 1}}); err != nil {
			t.Fatal(err)
		}
	}
	sub, err := h.Subscribe(ctx, ref, Live)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if sub.Head != sub.Last() {
		t.Fatalf("head %d, but the stream starts after %d", sub.Head, sub.Last())
	}
	h.Appended(ref)
	for want := sub.Head + 1; want <= 3; want++ {
		if ev, err := sub.Next(ctx); err != nil || ev.ID != want {
			t.Fatalf("event %+v %v, want message %d", ev, err, want)
		}
	}
}
