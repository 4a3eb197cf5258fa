package store_test

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/errandhq/errand/internal/store"
)

// TestMigrationLog: a store made from nothing logs one line at info (each
// migration at debug); a store upgraded logs each migration at info; a
// store already up to date logs nothing.
func TestMigrationLog(t *testing.T) {
	ms := []store.Migration{{Version: 1, Name: "0001_init.sql"}, {Version: 2, Name: "0002_more.sql"}, {Version: 3, Name: "0003_last.sql"}}
	run := func(from int, attrs ...any) string {
		var b bytes.Buffer
		l := &store.MigrationLog{Log: slog.New(slog.NewTextHandler(&b, &slog.HandlerOptions{Level: slog.LevelDebug})), Attrs: attrs}
		for i := range ms {
			if ms[i].Version >= from {
				l.Applied(&ms[i])
			}
		}
		l.Done(ms)
		return b.String()
	}
	fresh := run(1, "schema", "s1")
	for _, want := range []string{
		`level=DEBUG msg="store migrated" version=1 migration=0001_init.sql schema=s1`,
		`level=DEBUG msg="store migrated" version=3 migration=0003_last.sql schema=s1`,
		`level=INFO msg="store created" version=3 schema=s1`,
	} {
		if !strings.Contains(fresh, want) {
			t.Fatalf("a new store's log lacks %q:\n%s", want, fresh)
		}
	}
	if strings.Contains(fresh, `level=INFO msg="store migrated"`) {
		t.Fatalf("a new store logged its migrations at info:\n%s", fresh)
	}
	upgraded := run(2)
	if !strings.Contains(upgraded, `level=INFO msg="store migrated" version=2 migration=0002_more.sql`) ||
		!strings.Contains(upgraded, `level=INFO msg="store migrated" version=3`) || strings.Contains(upgraded, "store created") {
		t.Fatalf("an upgraded store's log:\n%s", upgraded)
	}
	if s := run(4); s != "" {
		t.Fatalf("a store up to date logged:\n%s", s)
	}
}
