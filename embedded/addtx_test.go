package embedded

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/id"
)

// pgURL makes a fresh schema on ERRAND_TEST_POSTGRES and returns a URL
// whose connections use it (the engine's and the program's own).
func pgURL(t *testing.T) string {
	t.Helper()
	base := os.Getenv("ERRAND_TEST_POSTGRES")
	if base == "" {
		t.Skip("ERRAND_TEST_POSTGRES is not set: PostgreSQL tests skipped")
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	schema := "errand_tx_" + id.Secret(6)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if c, err := pgx.Connect(context.Background(), base); err == nil {
			_, _ = c.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
			c.Close(context.Background())
		}
	})
	u, _ := url.Parse(base)
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// TestAddTx: tasks added inside the program's transaction exist only once
// it commits, and are then delivered; a rolled-back add leaves nothing.
func TestAddTx(t *testing.T) {
	ctx := context.Background()
	dsn := pgURL(t)
	e, err := Open(ctx, Options{Store: dsn, Dev: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ran := make(chan string, 10)
	must(t, e.Handle("app/receipt", func(_ context.Context, tk *Task) (json.RawMessage, error) {
		ran <- tk.ID
		return nil, nil
	}))
	must(t, e.CreateQueue(ctx, "jobs", "receipts", QueueOptions{Function: "app/receipt"}))

	app, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close(ctx)
	if _, err := app.Exec(ctx, `CREATE TABLE orders (id int PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	notFound := func(id string) {
		t.Helper()
		if _, err := e.Get(ctx, "jobs", id); !errors.Is(err, errandapi.NewError(errandapi.CodeNotFound, "")) {
			t.Fatalf("task %s: %v; want NOT_FOUND", id, err)
		}
	}

	// Commit: the task appears with the order, and is delivered.
	tx, err := app.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO orders VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	added, err := e.AddTx(ctx, tx, "jobs", "receipts", NewTask{Payload: json.RawMessage(`{"order":1}`)})
	if err != nil || added[0].Err != nil {
		t.Fatalf("AddTx: %v %+v", err, added)
	}
	committed := added[0].ID
	notFound(committed) // not before the commit
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-ran:
		if got != committed {
			t.Fatalf("ran %s, want %s", got, committed)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the committed task was not delivered")
	}

	// Rollback: neither the order nor the task exists; a task added after
	// it is the next one delivered.
	tx, err = app.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO orders VALUES (2)`); err != nil {
		t.Fatal(err)
	}
	added, err = e.AddTx(ctx, tx, "jobs", "receipts", NewTask{Payload: json.RawMessage(`{"order":2}`)})
	if err != nil || added[0].Err != nil {
		t.Fatalf("AddTx: %v %+v", err, added)
	}
	rolledBack := added[0].ID
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	notFound(rolledBack)
	after, err := e.Add(ctx, "jobs", "receipts", NewTask{Payload: json.RawMessage(`{"order":3}`)})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-ran:
		if got != after[0].ID {
			t.Fatalf("ran %s after the rollback, want %s", got, after[0].ID)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the task added after the rollback was not delivered")
	}
	notFound(rolledBack)
}

// TestAddTxNeedsPostgres: on SQLite, AddTx is refused and adds nothing.
func TestAddTxNeedsPostgres(t *testing.T) {
	e, _ := open(t, "sqlite")
	_, err := e.AddTx(context.Background(), nil, "jobs", "default", NewTask{})
	var pe *Error
	if !errors.As(err, &pe) || pe.Code != errandapi.CodeInvalidArgument {
		t.Fatalf("AddTx on SQLite: %v", err)
	}
}
