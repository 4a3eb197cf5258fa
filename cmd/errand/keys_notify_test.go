package main

import (
	"context"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/errandhq/errand/internal/id"
	"github.com/errandhq/errand/internal/testkit"
)

// TestKeysRevokeTellsNodes: on PostgreSQL, `errand keys revoke` sends the
// config notification on which every running node drops the keys it has
// cached (engine's cache, tested in TestKeyCacheAcrossNodes), so that a
// revoked key is refused as soon as the nodes hear it.
func TestKeysRevokeTellsNodes(t *testing.T) {
	storeURL := pgDatabaseURL(t)
	adminKey(t, storeURL)
	code, list, errs := runMain("keys", "list", "--store", storeURL)
	if code != 0 {
		t.Fatalf("keys list: %s", errs)
	}
	id := strings.Fields(strings.Split(list, "\n")[1])[0]

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, storeURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "LISTEN errand_wake"); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := runMain("keys", "revoke", "--store", storeURL, id); code != 0 {
		t.Fatalf("keys revoke: %s", errs)
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			t.Fatalf("no config notification after keys revoke: %v", err)
		}
		if n.Payload == "config" {
			return
		}
	}
}

// pgDatabaseURL makes a fresh database on the test PostgreSQL and returns
// its URL; the database is dropped at cleanup. Notifications are per
// database: no other test's reach it.
func pgDatabaseURL(t *testing.T) string {
	t.Helper()
	base := os.Getenv("ERRAND_TEST_POSTGRES")
	if base == "" {
		testkit.SkipPostgres(t)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("ERRAND_TEST_POSTGRES is set but PostgreSQL does not answer: %v", err)
	}
	defer conn.Close(ctx)
	name := "errand_kn_" + id.Secret(6)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), base)
		if err == nil {
			_, _ = c.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
			c.Close(context.Background())
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}
