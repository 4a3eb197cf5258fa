package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/errandhq/errand/internal/store/postgres"
)

// TestNotifyListen: a NOTIFY from one store reaches the LISTEN of another
// on the same database, config or not as it was sent; Listen calls fn once
// on connecting too, as a config change (anything may have changed).
func TestNotifyListen(t *testing.T) {
	a := postgres.OpenTest(t)
	b := postgres.OpenTest(t)
	t.Cleanup(func() { a.Close(); b.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	heard := make(chan bool, 16)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = b.Listen(ctx, func(config bool) { heard <- config })
	}()
	defer func() { cancel(); <-done }()
	next := func(what string) bool {
		t.Helper()
		select {
		case config := <-heard:
			return config
		case <-time.After(10 * time.Second):
			t.Fatalf("%s did not arrive", what)
		}
		return false
	}
	if !next("the connect call") {
		t.Fatal("the connect call is not a config change")
	}
	if err := a.Notify(ctx); err != nil {
		t.Fatal(err)
	}
	if next("the notification") {
		t.Fatal("a wake-up came as a config change")
	}
	if err := a.NotifyConfig(ctx); err != nil {
		t.Fatal(err)
	}
	if !next("the config notification") {
		t.Fatal("a config change came as a wake-up")
	}
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
