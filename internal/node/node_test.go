package node

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/errandhq/errand/internal/deliver"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
	"github.com/errandhq/errand/internal/testkit/stores"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestPublishesWhatItServes: a node writes its in-process functions to the
// workers table when it starts and when one is added, and removes its rows
// when it closes, on every backend.
func TestPublishesWhatItServes(t *testing.T) {
	for _, kind := range stores.Kinds {
		t.Run(kind, func(t *testing.T) {
			st := stores.Open(t, kind)
			defer st.Close()
			fns := &deliver.Functions{}
			h := func(context.Context, *task.Task) (json.RawMessage, error) { return nil, nil }
			if err := fns.Handle("app/a", h); err != nil {
				t.Fatal(err)
			}
			n := New(Config{Store: st, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Dev: true, Functions: fns})
			puts := publishes(n)
			if err := n.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			served := func() map[string]int {
				m, err := st.WorkersServed(context.Background(), &store.WorkersServedParams{InstanceID: "any", SeenAfter: 0})
				if err != nil {
					t.Fatal(err)
				}
				return m
			}
			waitFor(t, "app/a published", puts, func() bool { return served()["app/a"] > 0 })
			if err := fns.Handle("app/b", h); err != nil {
				t.Fatal(err)
			}
			n.Changed()
			waitFor(t, "app/b published", puts, func() bool { return served()["app/b"] > 0 })
			n.Close()
			if m := served(); len(m) != 0 {
				t.Fatalf("after Close the node still serves %v", m)
			}
		})
	}
}

// publishes turns on n's publish signal (before Start): the channel
// holds one pending signal when the publisher wrote its rows since the last
// receive, so no write goes unnoticed.
func publishes(n *Node) <-chan struct{} {
	puts := make(chan struct{}, 1)
	n.published = func() {
		select {
		case puts <- struct{}{}:
		default:
		}
	}
	return puts
}

// waitFor reads cond (the store) until it holds, and reads it again only
// after the publisher writes its rows once more (a test signal), never on
// a timer; it fails when cond does not hold within 10 s.
func waitFor(t *testing.T, what string, puts <-chan struct{}, cond func() bool) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for !cond() {
		select {
		case <-puts:
		case <-timeout:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}
