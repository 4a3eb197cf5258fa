// Package storeurl opens the store a URL names: sqlite://PATH (one node) or
// postgres://… (any number of nodes). `errand serve`, `errand keys` and the
// embedded engine open their stores through it.
package storeurl

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/store/filelock"
	"github.com/errandhq/errand/internal/store/postgres"
	"github.com/errandhq/errand/internal/store/sqlite"
)

// Options are the settings a store URL does not carry.
type Options struct {
	Sync string       // SQLite: NORMAL (default) or FULL
	Log  *slog.Logger // default slog.Default()
	// MustExist refuses a SQLite file that does not exist instead of
	// creating it (errand keys: a mistyped path must not make a new,
	// empty store).
	MustExist bool
}

// ErrNoStore is the error of Open with MustExist when the SQLite file does
// not exist.
var ErrNoStore = errors.New("no store there")

// Describe names the store a URL opens, for a person: the SQLite file's
// absolute path, or PostgreSQL's host and database (never a password).
func Describe(rawURL string) string {
	scheme, rest, _ := strings.Cut(rawURL, "://")
	switch scheme {
	case "sqlite":
		return "SQLite file " + abs(rest)
	case "postgres", "postgresql":
		u, err := url.Parse(rawURL)
		if err != nil {
			return "PostgreSQL"
		}
		d := "PostgreSQL database " + strings.TrimPrefix(u.Path, "/") + " on " + u.Host
		if sp := u.Query().Get("search_path"); sp != "" {
			d += " (schema " + sp + ")"
		}
		return d
	}
	return rawURL
}

// Shared reports whether the URL names a store that several nodes may share
// (PostgreSQL).
func Shared(rawURL string) bool {
	scheme, _, _ := strings.Cut(rawURL, "://")
	return scheme == "postgres" || scheme == "postgresql"
}

// LockNode takes the store a URL names for the node of this process, who
// ("errand serve", "the embedded engine"): a SQLite store serves one node,
// so its file is held (an exclusive lock on PATH.lock beside it, which
// records the holder's pid and who), and a second node on it — another
// process, or another open in this one — is refused, naming the holder. A
// PostgreSQL store is shared by any number of nodes: nothing is taken.
// Commands that work on a store briefly beside its node (errand keys,
// errand restore) take no lock. A URL that names no file is left to Open
// to refuse.
func LockNode(rawURL, who string) (release func(), err error) {
	scheme, path, _ := strings.Cut(rawURL, "://")
	if scheme != "sqlite" || !filePath(path) {
		return func() {}, nil
	}
	release, holder, err := filelock.Lock(path+".lock", who)
	if errors.Is(err, filelock.ErrHeld) {
		return nil, &InUseError{Path: abs(path), Holder: holder}
	}
	return release, err
}

// InUseError is LockNode's error when another node holds the SQLite store.
type InUseError struct {
	Path   string // the SQLite file, absolute
	Holder filelock.Holder
}

// Error implements error.
func (e *InUseError) Error() string {
	return fmt.Sprintf("the SQLite store %s is in use by %s: a SQLite store serves one node", e.Path, e.Holder)
}

// URLError is Open's refusal of a store URL. Its Error is worded for
// errand's command line (`--store "mysql://x": unknown scheme …`); the
// embedded engine words it for its Options from URL and Why.
type URLError struct {
	URL string
	Why string
	// InURL: options were put in the URL (a query or fragment), where they
	// go as flags (the command line's --sync) or Options fields.
	InURL bool
}

// Error implements error.
func (e *URLError) Error() string {
	s := fmt.Sprintf("--store %q: %s", e.URL, e.Why)
	if e.InURL {
		s += " (options are flags, such as --sync)"
	}
	return s
}

// Open opens the store a URL names; its scheme picks the backend:
// sqlite://PATH (a file; sqlite:///abs/path for an absolute path) or
// postgres://… (a pgx connection string, shared by any number of nodes).
func Open(ctx context.Context, rawURL string, o Options) (store.Store, error) {
	scheme, rest, ok := strings.Cut(rawURL, "://")
	if !ok {
		return nil, &URLError{URL: rawURL, Why: "want sqlite://PATH or postgres://…"}
	}
	switch scheme {
	case "sqlite":
		return openSQLite(ctx, rest, o)
	case "postgres", "postgresql":
		u, schema := urlSchema(rawURL)
		return postgres.Open(ctx, u, postgres.Options{Logger: o.Log, Schema: schema})
	}
	return nil, &URLError{URL: rawURL, Why: fmt.Sprintf("unknown scheme %q (want sqlite://PATH or postgres://…)", scheme)}
}

// urlSchema takes a search_path of one plain schema name out of a
// postgres:// URL and returns the URL without it and the schema, folded
// to lower case as PostgreSQL folds an unquoted name, for
// postgres.Options.Schema: the schema is then created if missing, and set
// by each connection once it is made, not sent as a startup parameter,
// which a connection pooler such as PgBouncer refuses. Any other URL, or
// search_path (a list, a quoted name, $user), is returned as it is.
func urlSchema(rawURL string) (string, string) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return rawURL, ""
	}
	q := u.Query()
	sp := q.Get("search_path")
	if len(q["search_path"]) != 1 || !postgres.PlainSchema(sp) {
		return rawURL, ""
	}
	q.Del("search_path")
	u.RawQuery = q.Encode()
	return u.String(), strings.ToLower(sp)
}

// openSQLite opens the SQLite file at path, creating it (and its
// directory) readable by its owner only: it holds webhook signing keys.
// SQLite gives its -wal and -shm files the mode of the database file.
func openSQLite(ctx context.Context, path string, o Options) (store.Store, error) {
	if !filePath(path) {
		return nil, &URLError{URL: "sqlite://" + path, Why: "not a file path", InURL: path != ""}
	}
	if o.MustExist {
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%w: the SQLite file %s does not exist", ErrNoStore, abs(path))
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	switch {
	case err == nil:
		if err := f.Close(); err != nil {
			return nil, err
		}
	case !errors.Is(err, os.ErrExist):
		return nil, err
	}
	sync := o.Sync
	if sync == "" {
		sync = "NORMAL"
	}
	return sqlite.Open(ctx, path, sqlite.Options{Synchronous: sync, Logger: o.Log})
}

// filePath reports whether what follows sqlite:// names a file: not empty,
// and no query or fragment (options are flags).
func filePath(path string) bool { return path != "" && !strings.ContainsAny(path, "?#") }

func abs(path string) string {
	if a, err := filepath.Abs(path); err == nil {
		return a
	}
	return path
}
