package storeurl

import (
	"context"
	"io"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/errandhq/errand/internal/id"
	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

var quiet = Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))}

// use writes an instance and reads it back, so the store has written to
// its files (SQLite makes the -wal and -shm files on the first write).
func use(t *testing.T, st store.Store) {
	t.Helper()
	ctx := context.Background()
	inst := &task.Instance{ID: id.New(time.Now()), Org: "acme", Name: "jobs", CreatedAt: 1, Settings: task.DefaultSettings()}
	if err := st.InstanceCreate(ctx, inst); err != nil {
		t.Fatal(err)
	}
	if got, err := st.InstanceGet(ctx, store.InstanceRef{Org: "acme", Name: "jobs"}); err != nil || got.ID != inst.ID {
		t.Fatalf("InstanceGet: %v %v", got, err)
	}
}

func mode(t *testing.T, path string) fs.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

// TestSQLiteFilesAreTheOwnersOnly: the store holds webhook signing keys, so
// the directory made for it is 0700 and the database, its -wal and its
// -shm are 0600, whatever the umask lets through.
func TestSQLiteFilesAreTheOwnersOnly(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "made", "for", "it")
	path := filepath.Join(dir, "errand.db")
	st, err := Open(context.Background(), "sqlite://"+path, quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	use(t, st)
	if m := mode(t, dir); m != 0o700 {
		t.Errorf("directory mode %v, want 0700", m)
	}
	for _, f := range []string{path, path + "-wal", path + "-shm"} {
		if m := mode(t, f); m != 0o600 {
			t.Errorf("%s mode %v, want 0600", filepath.Base(f), m)
		}
	}
}

// TestSQLiteReopensItsFile: an existing file is opened as it is, not
// truncated, and its mode is left alone.
func TestSQLiteReopensItsFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "errand.db")
	st, err := Open(context.Background(), "sqlite://"+path, quiet)
	if err != nil {
		t.Fatal(err)
	}
	use(t, st)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o640); err != nil {
		t.Fatal(err)
	}
	st, err = Open(context.Background(), "sqlite://"+path, Options{Sync: "FULL", Log: quiet.Log})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.InstanceGet(context.Background(), store.InstanceRef{Org: "acme", Name: "jobs"}); err != nil {
		t.Fatalf("the instance written before the reopen: %v", err)
	}
	if m := mode(t, path); m != 0o640 {
		t.Fatalf("mode %v after the reopen, want the operator's 0640 kept", m)
	}
}

func TestRefusedURLs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct{ url, want string }{
		{"errand.db", `want sqlite://PATH or postgres://`},
		{"mysql://localhost/errand", `unknown scheme "mysql"`},
		{"sqlite://", `"sqlite://": not a file path`},
		{"sqlite://" + dir + "/e.db?_pragma=journal_mode(DELETE)", `options are flags, such as --sync`},
		{"sqlite://" + dir + "/e.db#x", `not a file path (options are flags, such as --sync)`},
	} {
		st, err := Open(context.Background(), tc.url, quiet)
		if err == nil {
			st.Close()
			t.Errorf("%s: opened, want refused", tc.url)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "--store") {
			t.Errorf("%s: %q, want --store … %q", tc.url, err, tc.want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("a refused URL made files: %v", entries)
	}
}

func TestShared(t *testing.T) {
	t.Parallel()
	for u, want := range map[string]bool{
		"postgres://h/db": true, "postgresql://h/db": true, "sqlite:///var/lib/errand.db": false, "errand.db": false,
	} {
		if Shared(u) != want {
			t.Errorf("Shared(%q) = %v, want %v", u, !want, want)
		}
	}
}

// TestPostgres opens the PostgreSQL of ERRAND_TEST_POSTGRES, in a schema of
// its own named by the URL's search_path.
func TestPostgres(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	base, conn := postgresBase(t)
	schema := "errand_url_" + id.Secret(6)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	defer conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE") //nolint:errcheck // best effort
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	for _, scheme := range []string{"postgres", "postgresql"} {
		u.Scheme = scheme
		st, err := Open(ctx, u.String(), quiet)
		if err != nil {
			t.Fatalf("%s: %v", scheme, err)
		}
		if _, ok := st.(store.Notifier); !ok {
			t.Errorf("%s: the store is not shared (no Notifier)", scheme)
		}
		if scheme == "postgres" {
			use(t, st)
		} else if _, err := st.InstanceGet(ctx, store.InstanceRef{Org: "acme", Name: "jobs"}); err != nil {
			t.Errorf("%s: the instance written through postgres://: %v", scheme, err)
		}
		st.Close()
	}
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM "+schema+".instances").Scan(&n); err != nil || n != 1 {
		t.Fatalf("instances in the URL's schema: %d %v", n, err)
	}
}

// TestURLSchema: a search_path of one plain name leaves the URL for
// postgres.Options.Schema, folded to lower case as PostgreSQL folds an
// unquoted name; any other is left in the URL as it is.
func TestURLSchema(t *testing.T) {
	for _, c := range []struct{ in, url, schema string }{
		{"postgres://u@h:5432/db?search_path=Errand_1&sslmode=disable", "postgres://u@h:5432/db?sslmode=disable", "errand_1"},
		{"postgresql://u:p%40ss@h/db?search_path=jobs", "postgresql://u:p%40ss@h/db", "jobs"},
		{"postgres://u@h/db?search_path=a,b", "postgres://u@h/db?search_path=a,b", ""},
		{"postgres://u@h/db?search_path=%22Mixed%22", "postgres://u@h/db?search_path=%22Mixed%22", ""},
		{"postgres://u@h/db?search_path=$user", "postgres://u@h/db?search_path=$user", ""},
		{"postgres://u@h/db?search_path=a&search_path=b", "postgres://u@h/db?search_path=a&search_path=b", ""},
		{"postgres://u@h/db?sslmode=disable", "postgres://u@h/db?sslmode=disable", ""},
	} {
		u, schema := urlSchema(c.in)
		if u != c.url || schema != c.schema {
			t.Errorf("urlSchema(%q) = %q, %q; want %q, %q", c.in, u, schema, c.url, c.schema)
		}
	}
}

// TestPostgresNewSchema: a URL's search_path naming a schema that does not
// exist yet makes it (in lower case, as PostgreSQL reads the unquoted
// name) and keeps errand's tables there.
func TestPostgresNewSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	base, conn := postgresBase(t)
	schema := "errand_new_" + strings.ToLower(id.Secret(6))
	defer conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+schema+" CASCADE") //nolint:errcheck // best effort
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", strings.ToUpper(schema))
	u.RawQuery = q.Encode()
	st, err := Open(ctx, u.String(), quiet)
	if err != nil {
		t.Fatal(err)
	}
	use(t, st)
	st.Close()
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM "+schema+".instances").Scan(&n); err != nil || n != 1 {
		t.Fatalf("instances in the URL's new schema: %d %v", n, err)
	}
}

// postgresBase returns ERRAND_TEST_POSTGRES and a connection to it, closed
// when t ends, or skips t.
func postgresBase(t *testing.T) (string, *pgx.Conn) {
	t.Helper()
	base := os.Getenv("ERRAND_TEST_POSTGRES")
	if base == "" {
		t.Skip("ERRAND_TEST_POSTGRES is not set: PostgreSQL tests skipped")
	}
	conn, err := pgx.Connect(context.Background(), base)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return base, conn
}
