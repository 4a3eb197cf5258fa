package stores

import (
	"context"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/errandhq/errand/internal/id"
	"github.com/errandhq/errand/internal/store/postgres"
	"github.com/errandhq/errand/internal/testkit"
)

// OpenPostgresShared returns a function that opens a store on one fresh
// PostgreSQL schema (dropped at the end): each call is another node on
// the same database. It skips tb when ERRAND_TEST_POSTGRES is unset; the
// caller closes every store it opens.
func OpenPostgresShared(tb testing.TB) func() *postgres.Store {
	tb.Helper()
	base := os.Getenv("ERRAND_TEST_POSTGRES")
	if base == "" {
		testkit.SkipPostgres(tb)
	}
	schema := "errand_kit_" + id.Secret(6)
	tb.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), base)
		if err == nil {
			_, _ = c.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+schema+" CASCADE")
			c.Close(context.Background())
		}
	})
	return func() *postgres.Store {
		tb.Helper()
		st, err := postgres.Open(context.Background(), base, postgres.Options{Logger: quiet, Schema: schema})
		if err != nil {
			tb.Fatal(err)
		}
		return st
	}
}
