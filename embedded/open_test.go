package embedded

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/errandhq/errand/client"
)

// TestOpenUnreachablePostgres: a PostgreSQL that does not answer is an
// UNAVAILABLE *Error, the driver's cause in its message.
func TestOpenUnreachablePostgres(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	_, err = Open(context.Background(), Options{Store: "postgres://postgres@" + addr + "/x?sslmode=disable&connect_timeout=2",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	var pe *Error
	if !errors.As(err, &pe) || !errors.Is(err, client.ErrUnavailable) || !strings.Contains(pe.Message, addr) || strings.Contains(pe.Message, "store.Migration") {
		t.Fatalf("%v (%T); want an UNAVAILABLE *Error naming %s", err, err, addr)
	}
}

// TestOpenRefusalsAreErrors: Open refuses a bad Org, Sync or Store with an
// *Error (INVALID_ARGUMENT) in the embedded API's words: the field
// Store, not the command line's --store flag.
func TestOpenRefusalsAreErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, c := range []struct {
		name string
		o    Options
		want string
	}{
		{"bad Org", Options{Store: "sqlite://" + filepath.Join(dir, "a.db"), Org: "bad org!"}, "org: may hold only"},
		{"unknown scheme", Options{Store: "mysql://x"}, `Store: "mysql://x": unknown scheme "mysql" (want sqlite://PATH or postgres://…)`},
		{"no scheme", Options{Store: filepath.Join(dir, "b.db")}, `Store: "` + filepath.Join(dir, "b.db") + `": want sqlite://PATH or postgres://…`},
		{"empty path", Options{Store: "sqlite://"}, `Store: "sqlite://": not a file path`},
		{"bad Sync", Options{Store: "sqlite://" + filepath.Join(dir, "c.db"), Sync: "fast"}, `Sync: must be NORMAL or FULL (or empty for NORMAL), not "fast"`},
		{"options in the URL", Options{Store: "sqlite://x.db?sync=FULL"}, `Store: "sqlite://x.db?sync=FULL": not a file path (options are Options fields, such as Sync)`},
	} {
		c.o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
		e, err := Open(context.Background(), c.o)
		if e != nil {
			e.Close()
		}
		var pe *Error
		if !errors.As(err, &pe) || !errors.Is(err, client.ErrInvalidArgument) || !strings.HasPrefix(pe.Message, c.want) {
			t.Errorf("%s: %v (%T); want an INVALID_ARGUMENT *Error saying %s", c.name, err, err, c.want)
		}
		if err != nil && (strings.Contains(err.Error(), "--") || strings.Contains(err.Error(), "flag")) {
			t.Errorf("%s: %v speaks of the command line", c.name, err)
		}
	}
}
