package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
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
	u, name := pgFresh(t, "errand_kn_", "CREATE DATABASE %s", "DROP DATABASE IF EXISTS %s WITH (FORCE)")
	u.Path = "/" + name
	return u.String()
}
