package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/errandhq/errand/internal/store/postgres"
)

// TestNotifyListen: a NOTIFY from one store reaches the LISTEN of another
// on the same database; Listen calls fn once on connecting too.
func TestNotifyListen(t *testing.T) {
	a := postgres.OpenTest(t)
	b := postgres.OpenTest(t)
	t.Cleanup(func() { a.Close(); b.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	heard := make(chan struct{}, 16)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = b.Listen(ctx, func() { heard <- struct{}{} })
	}()
	defer func() { cancel(); <-done }()
	select {
	case <-heard: // connected
	case <-time.After(10 * time.Second):
		t.Fatal("Listen did not connect")
	}
	if err := a.Notify(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-heard:
	case <-time.After(10 * time.Second):
		t.Fatal("the notification did not arrive")
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
