package console_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/url"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/errandhq/errand/internal/store/postgres"
	"github.com/errandhq/errand/internal/testkit/stores"
)

// TestSessionStoreUnreadable: while the store cannot read or keep the
// console's sessions (here their table is renamed away on a real
// PostgreSQL database), a page answers 503 with the reason and a login
// 503 without a cookie — neither sends the browser to log in again, since
// the session may well be live — and once the store answers again the
// same cookie opens the console.
func TestSessionStoreUnreadable(t *testing.T) {
	dbURL := stores.PostgresDatabase(t)
	ctx := context.Background()
	st, err := postgres.Open(ctx, dbURL, postgres.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, envOptions{store: st, realClock: true})
	e.fixture()
	u := e.user()
	u.login(e.full)
	u.get("/console/i/jobs/").want(t, http.StatusOK, "Log out")

	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rename := func(from, to string) {
		t.Helper()
		if _, err := conn.Exec(ctx, "ALTER TABLE "+from+" RENAME TO "+to); err != nil {
			t.Fatal(err)
		}
	}
	rename("console_sessions", "console_sessions_away")
	p := u.get("/console/i/jobs/").want(t, http.StatusServiceUnavailable, "the console&#39;s sessions could not be read: try again")
	if loc := p.header.Get("Location"); loc != "" {
		t.Fatalf("an unreadable store sent the browser to %s", loc)
	}
	other := e.user()
	p = other.post("/console/login", url.Values{"key": {e.full}}).want(t, http.StatusServiceUnavailable, "the session could not be stored: try again")
	if c := p.header.Get("Set-Cookie"); c != "" {
		t.Fatalf("a login the store could not keep set a cookie: %s", c)
	}

	rename("console_sessions_away", "console_sessions")
	u.get("/console/i/jobs/").want(t, http.StatusOK, "Log out")
}
