package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/store/postgres"
)

// TestNotifyListen: a NOTIFY from one store reaches the LISTEN of another
// on the same database, a change or a config change as it was sent;
// Listen calls fn once on connecting too, as a connect (anything may have
// changed, the configuration too).
func TestNotifyListen(t *testing.T) {
	a := postgres.OpenTest(t)
	b := postgres.OpenTest(t)
	t.Cleanup(func() { a.Close(); b.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	heard := make(chan store.Heard, 16)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = b.Listen(ctx, func(h store.Heard) { heard <- h })
	}()
	defer func() { cancel(); <-done }()
	// Other tests on the same database notify on the same channel: a
	// check waits for the notification it expects and lets others pass.
	until := func(what string, want store.Heard) {
		t.Helper()
		deadline := time.After(10 * time.Second)
		for {
			select {
			case h := <-heard:
				if h == want {
					return
				}
			case <-deadline:
				t.Fatalf("%s did not arrive", what)
			}
		}
	}
	until("the connect call", store.HeardConnect)
	if !store.HeardConnect.Config() || !store.HeardConfig.Config() || store.HeardChange.Config() {
		t.Fatal("a connect and a config notification drop cached configuration; a change does not")
	}
	if err := a.Notify(ctx, store.ChangeAny); err != nil {
		t.Fatal(err)
	}
	until("the notification", store.HeardChange)
	if err := a.Notify(ctx, store.ChangeWaiters); err != nil {
		t.Fatal(err)
	}
	until("the pull notification", store.HeardWaiters)
	if err := a.NotifyConfig(ctx); err != nil {
		t.Fatal(err)
	}
	until("the config notification", store.HeardConfig)
}

// TestServerNow: the database's clock is readable and close to ours here.
func TestServerNow(t *testing.T) {
	s := postgres.OpenTest(t)
	t.Cleanup(func() { s.Close() })
	now, err := s.ServerNow(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(now); d > time.Minute || d < -time.Minute {
		t.Fatalf("server clock %v is %v away", now, d)
	}
}

// TestChannelListen: an append committed through one store is announced,
// with its channel, to the ChannelListen of another on the same database;
// the listener is called with a zero ref when it connects.
func TestChannelListen(t *testing.T) {
	a := postgres.OpenTest(t)
	b := postgres.OpenTest(t)
	t.Cleanup(func() { a.Close(); b.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	heard := make(chan store.ChannelRef, 16)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = b.ChannelListen(ctx, func(ref store.ChannelRef) { heard <- ref })
	}()
	defer func() { cancel(); <-done }()
	select {
	case ref := <-heard:
		if ref != (store.ChannelRef{}) {
			t.Fatalf("on connecting: %+v, want a zero ref", ref)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ChannelListen did not connect")
	}
	ref := store.ChannelRef{InstanceID: "inst-" + t.Name(), Channel: "room-1"}
	if _, err := a.ChannelAppend(ctx, []*store.ChannelAppendParams{{Ref: ref, TaskID: "t1", Body: []byte(`{}`), Now: 1}}); err != nil {
		t.Fatal(err)
	}
	for {
		select {
		case got := <-heard:
			if got == ref {
				return
			}
			// Another test's append on the same database.
		case <-time.After(10 * time.Second):
			t.Fatal("the append was not announced")
		}
	}
}

// TestListenSkipsOwnNotify: a store's Listen does not pass on its own
// Notify of either kind (its node woke its own services), but passes on its
// own NotifyConfig and a notification with an empty payload (TaskAddTx's,
// sent at the application's commit); another store's Notify of a pull add
// arrives as such, and drops no cached configuration. On a database of its own, so that no other
// test's notification comes between: notifications arrive in commit order.
func TestListenSkipsOwnNotify(t *testing.T) {
	url := postgres.FreshDatabase(t)
	open := func() *postgres.Store {
		s, err := postgres.Open(context.Background(), url, postgres.Options{Logger: postgres.Quiet})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	a, b := open(), open()
	ctx, cancel := context.WithCancel(context.Background())
	heard := make(chan store.Heard, 16)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = b.Listen(ctx, func(h store.Heard) { heard <- h })
	}()
	defer func() { cancel(); <-done }()
	next := func(what string, want store.Heard) {
		t.Helper()
		select {
		case h := <-heard:
			if h != want {
				t.Fatalf("%s: heard %d, want %d", what, h, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s did not arrive", what)
		}
	}
	next("the connect call", store.HeardConnect)
	// b's own Notify of each kind, then a's config notification: the
	// first that arrives is a's (notifications arrive in commit order).
	for _, c := range []store.Change{store.ChangeAny, store.ChangeWaiters, store.ChangeFunctions} {
		if err := b.Notify(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.NotifyConfig(ctx); err != nil {
		t.Fatal(err)
	}
	next("a's config notification (b's own Notify skipped)", store.HeardConfig)
	// a's Notify arrives, as a plain wake, and its pull add as one; b's
	// own NotifyConfig arrives (its node's cache dropped already:
	// harmless), and so does an empty payload such as TaskAddTx queues.
	if err := a.Notify(ctx, store.ChangeAny); err != nil {
		t.Fatal(err)
	}
	next("a's notification", store.HeardChange)
	if err := a.Notify(ctx, store.ChangeWaiters); err != nil {
		t.Fatal(err)
	}
	next("a's pull notification", store.HeardWaiters)
	if store.HeardWaiters.Config() {
		t.Fatal("a pull add drops cached configuration")
	}
	if err := a.Notify(ctx, store.ChangeFunctions); err != nil {
		t.Fatal(err)
	}
	next("a's function notification", store.HeardFunctions)
	if store.HeardFunctions.Config() {
		t.Fatal("a function's add drops cached configuration")
	}
	if err := b.NotifyConfig(ctx); err != nil {
		t.Fatal(err)
	}
	next("b's own config notification", store.HeardConfig)
	if err := postgres.NotifyEmpty(ctx, b); err != nil {
		t.Fatal(err)
	}
	next("an empty notification", store.HeardChange)
}
