package postgres

import (
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/errandhq/errand/internal/task"
)

// TestPoolerRefusal: PgBouncer's refusal of a setting errand's connections
// start with (as PgBouncer 1.18 in session mode, not told to ignore them,
// answered `errand serve`: FATAL, 08P01) is UNAVAILABLE with words that
// say how to set the pooler up, naming every setting errand sends, and
// keeps the server's own words as its cause; another protocol violation
// is not taken for it. A statement the server connection never prepared,
// or prepared already (a pooler in transaction mode), says so too.
func TestPoolerRefusal(t *testing.T) {
	pe := &pgconn.PgError{Severity: "FATAL", Code: "08P01", Message: "unsupported startup parameter: jit"}
	err := interpretError(pe)
	var te *task.Error
	if !errors.As(err, &te) || te.Code != task.CodeUnavailable {
		t.Fatalf("the refusal: %v, want UNAVAILABLE", err)
	}
	for _, want := range []string{"session mode", "ignore_startup_parameters", "role", "Connection poolers"} {
		if !strings.Contains(te.Message, want) {
			t.Errorf("the refusal's words %q lack %q", te.Message, want)
		}
	}
	for _, d := range sessionDefaults {
		if !strings.Contains(te.Message, d.name) {
			t.Errorf("the refusal's words %q do not name %s", te.Message, d.name)
		}
	}
	if !strings.Contains(err.Error(), pe.Message) {
		t.Errorf("the error %q lost the server's words", err)
	}
	// Transaction pooling: a statement pgx prepared on another server
	// connection (as PgBouncer 1.18 in transaction mode answered errand's
	// services).
	lost := interpretError(&pgconn.PgError{Severity: "ERROR", Code: "26000",
		Message: `prepared statement "stmtcache_79438985daee4a952f61ad2747c469ccd2c797fe085a8cda" does not exist`})
	if !errors.As(lost, &te) || te.Code != task.CodeUnavailable || !strings.Contains(te.Message, "session mode") ||
		!strings.Contains(te.Message, "transaction or statement mode") {
		t.Errorf("a prepared statement lost: %v", lost)
	}
	dup := interpretError(&pgconn.PgError{Severity: "ERROR", Code: "42P05",
		Message: `prepared statement "stmtcache_79438985daee4a952f61ad2747c469ccd2c797fe085a8cda" already exists`})
	if !errors.As(dup, &te) || te.Code != task.CodeUnavailable || !strings.Contains(te.Message, "transaction or statement mode") {
		t.Errorf("a prepared statement met again: %v", dup)
	}
	other := interpretError(&pgconn.PgError{Severity: "FATAL", Code: "08P01", Message: "invalid frontend message type 0"})
	if other.(*task.Error).Message != "the store is unavailable; try again" {
		t.Errorf("another protocol violation: %v", other)
	}
}
