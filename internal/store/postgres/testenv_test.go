package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/errandhq/errand/internal/testkit"
)

// The test helpers live in the package so that its internal tests (plans,
// settings) and its external ones (the conformance suite) share them.

// Quiet is a logger that drops everything.
var Quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// testPoolConns is the pool size of a test store. With at most
// maxTestStores stores open at once (each subtest has its own), the tests
// use at most 4 × 16 = 64 connections, under the server's default
// max_connections of 100, however high -parallel is.
const (
	testPoolConns = 4
	maxTestStores = 16
)

// storeSlots bounds the test stores open at once.
var storeSlots = make(chan struct{}, maxTestStores)

// DatabaseURL returns the database URL of ERRAND_TEST_POSTGRES, or skips tb.
func DatabaseURL(tb testing.TB) string {
	tb.Helper()
	url := os.Getenv("ERRAND_TEST_POSTGRES")
	if url == "" {
		testkit.SkipPostgres(tb)
	}
	return url
}

// WithParam adds key=value to a postgres:// URL or a key=value connection
// string.
func WithParam(url, key, value string) string {
	if !strings.Contains(url, "://") {
		return url + " " + key + "=" + value
	}
	if strings.Contains(url, "?") {
		return url + "&" + key + "=" + value
	}
	return url + "?" + key + "=" + value
}

// FreshSchema returns a fresh schema name and drops that schema when tb
// ends (after the stores opened on it are closed, as cleanups run last
// registered first).
func FreshSchema(tb testing.TB) string {
	tb.Helper()
	url := DatabaseURL(tb)
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		tb.Fatal(err)
	}
	schema := "errand_test_" + hex.EncodeToString(b[:])
	tb.Cleanup(func() { DropSchema(tb, url, schema) })
	return schema
}

// DropSchema drops schema and everything in it.
func DropSchema(tb testing.TB, url, schema string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		tb.Errorf("drop schema %s: %v", schema, err)
		return
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`); err != nil {
		tb.Errorf("drop schema %s: %v", schema, err)
	}
}

// OpenTest opens a store on a fresh schema with a small pool; the schema is
// dropped when tb ends. The caller closes the store (storetest does).
func OpenTest(tb testing.TB) *Store {
	tb.Helper()
	return OpenTestSchema(tb, FreshSchema(tb))
}

// OpenTestSchema opens a store with a small pool on schema, which the
// caller made with FreshSchema.
func OpenTestSchema(tb testing.TB, schema string) *Store {
	tb.Helper()
	url := DatabaseURL(tb)
	storeSlots <- struct{}{}
	tb.Cleanup(func() { <-storeSlots })
	s, err := Open(context.Background(), WithParam(url, "pool_max_conns", strconv.Itoa(testPoolConns)), Options{Logger: Quiet, Schema: schema})
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	return s
}

// ClaimLockKey is the advisory lock of an instance's claims (queue "") or
// of one queue's.
func ClaimLockKey(instanceID, queue string) int64 { return claimLockKey(instanceID, queue) }

// InterpretError is interpretError, for the package's external tests.
func InterpretError(err error) error { return interpretError(err) }
