package embedded

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/errandhq/errand/internal/clock"
	"github.com/errandhq/errand/internal/testkit/stores"
)

// storeURL is a fresh store of kind that can be opened again after Close:
// a SQLite file, or a PostgreSQL database of its own.
func storeURL(t *testing.T, kind string) string {
	t.Helper()
	if kind == "sqlite" {
		return "sqlite://" + filepath.Join(t.TempDir(), "errand.db")
	}
	return stores.PostgresDatabase(t)
}

// openURL opens an engine in dev mode on store with the fake clock fc;
// the test closes it.
func openURL(t *testing.T, store string, fc *clock.Fake) *Engine {
	t.Helper()
	e, err := Open(context.Background(), Options{Store: store, Dev: true, clock: fc, outcomes: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestCloseKeepsAHandlersSuccess: Close cancels the handlers' ctx and waits
// for them; a handler that returns a result after that has succeeded, and
// the engine opened again finds the task succeeded with that result, not
// given back to run again.
func TestCloseKeepsAHandlersSuccess(t *testing.T) {
	eachStore(t, func(t *testing.T, kind string) {
		url, fc := storeURL(t, kind), clock.NewFake(t0)
		e := openURL(t, url, fc)
		ctx := context.Background()
		started := make(chan struct{})
		must(t, e.Handle("app/finish", func(ctx context.Context, _ *Task) (json.RawMessage, error) {
			close(started)
			<-ctx.Done() // Close began
			return json.RawMessage(`{"done":true}`), nil
		}))
		must(t, e.CreateQueue(ctx, "jobs", "q", QueueOptions{Function: "app/finish"}))
		id := add(t, e, "q", NewTask{})[0]
		<-started
		must(t, e.Close())

		e = openURL(t, url, fc)
		defer func() { must(t, e.Close()) }()
		tk, err := e.Get(ctx, "jobs", id)
		if err != nil || tk.State != "succeeded" || string(tk.Result) != `{"done":true}` || tk.Attempt != 1 {
			t.Fatalf("after Close: %+v %v; want succeeded with the handler's result, attempt 1", tk, err)
		}
	})
}
