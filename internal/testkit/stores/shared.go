package stores

import (
	"context"
	"net/url"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/errandhq/errand/internal/id"
	"github.com/errandhq/errand/internal/store/postgres"
	"github.com/errandhq/errand/internal/testkit"
)

// PostgresDatabase makes a fresh PostgreSQL database, dropped at the end,
// and returns its URL. It skips tb when ERRAND_TEST_POSTGRES is unset.
func PostgresDatabase(tb testing.TB) string {
	tb.Helper()
	base := os.Getenv("ERRAND_TEST_POSTGRES")
	if base == "" {
		testkit.SkipPostgres(tb)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		tb.Fatalf("ERRAND_TEST_POSTGRES is set but does not answer: %v", err)
	}
	defer conn.Close(ctx)
	name := "errand_kit_" + id.Secret(6)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), base)
		if err == nil {
			_, _ = c.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
			c.Close(context.Background())
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		tb.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

// OpenPostgresShared returns a function that opens a store on one fresh
// PostgreSQL database (dropped at the end): each call is another node on
// the same database. A database of its own, not a schema in the test
// database: notifications (wake-ups, config changes that drop the
// engine's cache) go to every session of a database, and another test's
// would reach these nodes. It skips tb when ERRAND_TEST_POSTGRES is unset;
// the caller closes every store it opens.
func OpenPostgresShared(tb testing.TB) func() *postgres.Store {
	tb.Helper()
	dbURL := PostgresDatabase(tb)
	return func() *postgres.Store {
		tb.Helper()
		st, err := postgres.Open(context.Background(), dbURL, postgres.Options{Logger: quiet})
		if err != nil {
			tb.Fatal(err)
		}
		return st
	}
}
