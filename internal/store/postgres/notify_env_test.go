package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// FreshDatabase makes a database of its own on the test server, dropped
// when tb ends, and returns its URL with a small pool: notifications are
// per database, so none of another test reaches it.
func FreshDatabase(tb testing.TB) string {
	tb.Helper()
	base := DatabaseURL(tb)
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		tb.Fatal(err)
	}
	name := "errand_testdb_" + hex.EncodeToString(b[:])
	admin := func(sql string) error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, sql)
		return err
	}
	if err := admin("CREATE DATABASE " + name); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := admin("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)"); err != nil {
			tb.Errorf("drop database %s: %v", name, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		tb.Fatalf("ERRAND_TEST_POSTGRES must be a postgres:// URL here: %v", err)
	}
	u.Path = "/" + name
	return WithParam(u.String(), "pool_max_conns", strconv.Itoa(testPoolConns))
}

// NotifyEmpty sends what TaskAddTx queues: a wake with an empty payload.
func NotifyEmpty(ctx context.Context, s *Store) error {
	_, err := s.pool.Exec(ctx, "SELECT pg_notify('"+wakeChannel+"', '')")
	return err
}
