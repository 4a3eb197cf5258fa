package postgres

import (
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/errandhq/errand/internal/task"
)

// TestPoolerRefusal: PgBouncer's refusal of a startup parameter (FATAL,
// 08P01: one the store URL adds, since errand SETs its own once connected)
// is UNAVAILABLE with words that say what to do, and keeps the server's
// own words as its cause; another protocol violation is not taken for it. A statement the server connection never prepared,
// or prepared already (a pooler in transaction mode), says so too.
func TestPoolerRefusal(t *testing.T) {
	pe := &pgconn.PgError{Severity: "FATAL", Code: "08P01", Message: "unsupported startup parameter: lock_timeout"}
	err := interpretError(pe)
	var te *task.Error
	if !errors.As(err, &te) || te.Code != task.CodeUnavailable {
		t.Fatalf("the refusal: %v, want UNAVAILABLE", err)
	}
	for _, want := range []string{"store URL", "ignore_startup_parameters", "role", "Connection poolers"} {
		if !strings.Contains(te.Message, want) {
			t.Errorf("the refusal's words %q lack %q", te.Message, want)
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

// TestSessionSets: a connection SETs each of errand's defaults the URL does
// not set, and the schema as a quoted identifier; with nothing to set it
// runs nothing.
func TestSessionSets(t *testing.T) {
	all := sessionSets(map[string]string{}, "Errand_1")
	for _, d := range sessionDefaults {
		if !strings.Contains(all, "SET "+d.name+" = '"+d.value+"'") {
			t.Errorf("%q does not set %s", all, d.name)
		}
	}
	if !strings.HasSuffix(all, `; SET search_path = "Errand_1"`) {
		t.Errorf("%q does not end by setting the schema", all)
	}
	some := sessionSets(map[string]string{"jit": "on", "statement_timeout": "5000", "options": "-c max_parallel_maintenance_workers=2"}, "")
	if some != "SET idle_in_transaction_session_timeout = '60s'" {
		t.Errorf("%q sets what the URL set, or a schema", some)
	}
	everything := map[string]string{}
	for _, d := range sessionDefaults {
		everything[d.name] = "x"
	}
	if got := sessionSets(everything, ""); got != "" {
		t.Errorf("with every setting in the URL and no schema: %q", got)
	}
}
