package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/errandhq/errand/internal/task"
)

// TestDiskFullIsUnavailable: SQLite's "database or disk is full" (here a
// real one, from a database capped with max_page_count) is UNAVAILABLE, a
// 503 the client may retry once space is freed, not an INTERNAL 500 with
// SQLite's message. The fault suite's disk-full test found it on a full
// tmpfs (cmd/errand TestFaultsDiskFull).
func TestDiskFullIsUnavailable(t *testing.T) {
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "full.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	for _, q := range []string{"PRAGMA max_page_count = 4", "CREATE TABLE t (b BLOB)"} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	var full error
	for i := 0; i < 100 && full == nil; i++ {
		_, full = db.ExecContext(ctx, "INSERT INTO t VALUES (?)", strings.Repeat("x", 4096))
	}
	if full == nil || !strings.Contains(full.Error(), "full") {
		t.Fatalf("the capped database never filled: %v", full)
	}
	err = interpretError(full)
	if !task.IsCode(err, task.CodeUnavailable) || strings.Contains(err.Error(), "(13)") {
		t.Fatalf("disk full → %v; want UNAVAILABLE without SQLite's message", err)
	}
}
