//go:build unix

package embedded_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/errandhq/errand/embedded"
	"github.com/errandhq/errand/errandapi"
)

// TestSQLiteServesOneEngine: while an embedded engine has a SQLite store
// open, a second engine on the same file is refused, naming the holder
// (a second node would run every service a second time); once the first
// is closed, the file opens again.
func TestSQLiteServesOneEngine(t *testing.T) {
	ctx := context.Background()
	o := embedded.Options{Store: "sqlite://" + filepath.Join(t.TempDir(), "errand.db"), Dev: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	first, err := embedded.Open(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if second, err := embedded.Open(ctx, o); err == nil {
		second.Close()
		t.Fatal("a second engine opened the SQLite store the first holds")
	} else if e := (*embedded.Error)(nil); !errors.As(err, &e) || e.Code != errandapi.CodeUnavailable ||
		!strings.Contains(err.Error(), "is in use by an embedded errand engine (process "+strconv.Itoa(os.Getpid())+")") {
		t.Fatalf("second engine: %v", err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := embedded.Open(ctx, o)
	if err != nil {
		t.Fatalf("after the first closed: %v", err)
	}
	if err := again.Close(); err != nil {
		t.Fatal(err)
	}
}
