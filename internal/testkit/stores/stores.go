// Package stores opens a real store of each backend for tests and
// benchmarks above the seam (engine, HTTP): a SQLite file in a temp dir, or
// a fresh schema on the PostgreSQL of ERRAND_TEST_POSTGRES, dropped at the
// end. Only tests import it.
package stores

import (
	"context"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/errandhq/errand/internal/auth"
	"github.com/errandhq/errand/internal/id"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/store/postgres"
	"github.com/errandhq/errand/internal/store/sqlite"
	"github.com/errandhq/errand/internal/testkit"
)

// Kinds are the backends, in the order benchmarks run them.
var Kinds = []string{"sqlite", "postgres"}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// Open opens a fresh store of kind; the caller closes it. A postgres store
// skips tb when ERRAND_TEST_POSTGRES is unset.
func Open(tb testing.TB, kind string) store.Store {
	tb.Helper()
	ctx := context.Background()
	switch kind {
	case "sqlite":
		st, err := sqlite.Open(ctx, filepath.Join(tb.TempDir(), "errand.db"), sqlite.Options{Logger: quiet})
		if err != nil {
			tb.Fatal(err)
		}
		return st
	case "postgres":
		base := os.Getenv("ERRAND_TEST_POSTGRES")
		if base == "" {
			testkit.SkipPostgres(tb)
		}
		schema := "errand_kit_" + id.Secret(6)
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			tb.Fatalf("ERRAND_TEST_POSTGRES is set but does not answer: %v", err)
		}
		conn.Close(ctx)
		tb.Cleanup(func() {
			c, err := pgx.Connect(context.Background(), base)
			if err == nil {
				_, _ = c.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+schema+" CASCADE")
				c.Close(context.Background())
			}
		})
		u, err := url.Parse(base)
		if err != nil {
			tb.Fatal(err)
		}
		st, err := postgres.Open(ctx, u.String(), postgres.Options{Logger: quiet, Schema: schema})
		if err != nil {
			tb.Fatal(err)
		}
		return st
	}
	tb.Fatalf("unknown store kind %q", kind)
	return nil
}

// Key stores a new API key of org on st with grants (ROLE:INSTANCE, as
// `errand keys create --grant`) and returns its secret.
func Key(tb testing.TB, st store.Store, org string, now time.Time, grants ...string) string {
	tb.Helper()
	var gs []store.Grant
	for _, g := range grants {
		pg, err := auth.ParseGrant(g)
		if err != nil {
			tb.Fatal(err)
		}
		gs = append(gs, pg)
	}
	secret, k, err := auth.NewKey(org, gs, now)
	if err != nil {
		tb.Fatal(err)
	}
	if err := st.KeyCreate(context.Background(), k); err != nil {
		tb.Fatal(err)
	}
	return secret
}
