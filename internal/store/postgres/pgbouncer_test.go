package postgres_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/store/postgres"
	"github.com/errandhq/errand/internal/store/storetest"
	"github.com/errandhq/errand/internal/task"
	"github.com/errandhq/errand/internal/testkit"
)

// openThrough opens a store on a fresh schema through url (a pooler's),
// with the package's small pool; the schema is dropped, directly, when t
// ends.
func openThrough(t *testing.T, url string) store.Store {
	t.Helper()
	schema := postgres.FreshSchema(t)
	s, err := postgres.Open(context.Background(), postgres.WithParam(url, "pool_max_conns", "4"),
		postgres.Options{Logger: postgres.Quiet, Schema: schema})
	if err != nil {
		t.Fatalf("Open through PgBouncer: %v", err)
	}
	return s
}

// TestPgBouncerSession runs the conformance suite through a real PgBouncer
// in session mode, set up with nothing for errand (errand SETs its session
// settings and schema once connected, rather than sending them as startup
// parameters PgBouncer would refuse): each subtest migrates its own schema
// through the pooler and passes as it does against PostgreSQL directly.
func TestPgBouncerSession(t *testing.T) {
	url := testkit.PgBouncer(t, postgres.DatabaseURL(t), "session", "", 80)
	storetest.Run(t, func(t *testing.T) store.Store { return openThrough(t, url) })
}

// TestPgBouncerRefusals: what PgBouncer cannot take is refused as
// UNAVAILABLE with words that say what to do. A session setting the store
// URL adds is a startup parameter PgBouncer refuses (Open fails, naming
// ignore_startup_parameters; told to ignore it, Open works); in
// transaction mode two connections meet each other's prepared statements
// on its one server connection, which errand names too.
func TestPgBouncerRefusals(t *testing.T) {
	ctx := t.Context()
	bouncer := testkit.PgBouncer(t, postgres.DatabaseURL(t), "session", "lock_timeout", 4)
	withSetting := postgres.WithParam(strings.Replace(bouncer, "?", "?pool_max_conns=2&", 1), "idle_session_timeout", "0")
	_, err := postgres.Open(ctx, withSetting, postgres.Options{Logger: postgres.Quiet, Schema: postgres.FreshSchema(t)})
	var te *task.Error
	if !errors.As(err, &te) || te.Code != task.CodeUnavailable || !strings.Contains(te.Message, "ignore_startup_parameters") ||
		!strings.Contains(te.Message, "store URL") || !strings.Contains(err.Error(), "unsupported startup parameter: idle_session_timeout") {
		t.Fatalf("Open through PgBouncer with a setting in the URL it does not ignore: %v", err)
	}
	ignored := postgres.WithParam(strings.Replace(bouncer, "?", "?pool_max_conns=2&", 1), "lock_timeout", "5000")
	s, err := postgres.Open(ctx, ignored, postgres.Options{Logger: postgres.Quiet, Schema: postgres.FreshSchema(t)})
	if err != nil {
		t.Fatalf("Open through PgBouncer with a setting in the URL it ignores: %v", err)
	}
	s.Close()

	txURL := testkit.PgBouncer(t, postgres.DatabaseURL(t), "transaction", "", 1)
	pool, err := pgxpool.New(ctx, txURL)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	a, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Release()
	b, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release()
	const q = `SELECT $1::int + 1`
	if _, err := a.Exec(ctx, q, 1); err != nil {
		t.Fatal(err)
	}
	_, err = b.Exec(ctx, q, 1) // the same name, on the one server connection
	if err == nil {
		t.Fatal("a second connection prepared a statement already prepared on PgBouncer's one server connection")
	}
	err = postgres.InterpretError(err)
	if !errors.As(err, &te) || te.Code != task.CodeUnavailable || !strings.Contains(te.Message, "transaction or statement mode") {
		t.Fatalf("a prepared statement met again through transaction pooling: %v", err)
	}
}
