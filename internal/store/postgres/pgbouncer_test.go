package postgres_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/store/postgres"
	"github.com/errandhq/errand/internal/store/storetest"
	"github.com/errandhq/errand/internal/task"
)

// startPgBouncer runs a real PgBouncer in front of ERRAND_TEST_POSTGRES's
// server, in mode (session or transaction) with a pool of size server
// connections per database and user, its ignore_startup_parameters set to
// ignore, until t ends; it returns the test database's URL through it.
// Without the pgbouncer binary it skips t, or fails it when
// ERRAND_PGBOUNCER_REQUIRED is set (as CI sets it, having installed it).
func startPgBouncer(t *testing.T, mode, ignore string, size int) string {
	t.Helper()
	direct := postgres.DatabaseURL(t)
	bin, err := exec.LookPath("pgbouncer")
	if err != nil {
		bin = "/usr/sbin/pgbouncer" // Debian's package puts it here, off a user's PATH
		if _, err := os.Stat(bin); err != nil {
			if os.Getenv("ERRAND_PGBOUNCER_REQUIRED") != "" {
				t.Fatal("pgbouncer is not installed, and ERRAND_PGBOUNCER_REQUIRED is set")
			}
			t.Skip("pgbouncer is not installed (apt-get install pgbouncer): the tests through a connection pooler skip")
		}
	}
	cfg, err := pgx.ParseConfig(direct)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	// PgBouncer refuses to run as root; as root it is told to become
	// nobody, who must read its files.
	dir, err := os.MkdirTemp("", "pgbouncer")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ini := filepath.Join(dir, "pgbouncer.ini")
	users := filepath.Join(dir, "users.txt")
	server := fmt.Sprintf("host=%s port=%d", cfg.Host, cfg.Port)
	if cfg.Password != "" {
		server += " password=" + cfg.Password
	}
	conf := fmt.Sprintf(`[databases]
* = %s

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = trust
auth_file = %s
pool_mode = %s
default_pool_size = %d
max_client_conn = 200
ignore_startup_parameters = %s
`, server, port, users, mode, size, ignore)
	for name, body := range map[string]string{ini: conf, users: fmt.Sprintf("%q \"\"\n", cfg.User)} {
		if err := os.WriteFile(name, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{ini}
	if os.Geteuid() == 0 {
		args = []string{"-u", "nobody", ini}
	}
	cmd := exec.Command(bin, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// It says when it listens; its log is kept for a failure's message.
	listening := make(chan struct{})
	logDone := make(chan struct{})
	var log strings.Builder
	go func() {
		defer close(logDone)
		sc := bufio.NewScanner(stderr)
		said := false
		for sc.Scan() {
			log.WriteString(sc.Text() + "\n")
			if !said && strings.Contains(sc.Text(), "listening on 127.0.0.1:"+strconv.Itoa(port)) {
				said = true
				close(listening)
			}
		}
	}()
	exited := make(chan error, 1)
	go func() { <-logDone; exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	select {
	case <-listening:
	case err := <-exited:
		exited <- err
		t.Fatalf("pgbouncer ended before it listened: %v\n%s", err, log.String())
	case <-time.After(30 * time.Second):
		t.Fatal("pgbouncer did not say it listens within 30 s")
	}
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable", cfg.User, port, cfg.Database)
}

// openThrough opens a store on a fresh schema through url (a pooler's),
// with the package's small pool; the schema is dropped, directly, when t
// ends.
func openThrough(t *testing.T, url string) store.Store {
	t.Helper()
	schema := postgres.FreshSchema(t)
	s, err := postgres.Open(context.Background(), postgres.WithParam(url, "pool_max_conns", "4"),
		postgres.Options{Logger: postgres.Quiet, Schema: schema})
	if err != nil {
		t.Fatalf("Open through PgBouncer: %v", err)
	}
	return s
}

// TestPgBouncerSession runs the conformance suite through a real PgBouncer
// in session mode, set up with nothing for errand (errand SETs its session
// settings and schema once connected, rather than sending them as startup
// parameters PgBouncer would refuse): each subtest migrates its own schema
// through the pooler and passes as it does against PostgreSQL directly.
func TestPgBouncerSession(t *testing.T) {
	url := startPgBouncer(t, "session", "", 80)
	storetest.Run(t, func(t *testing.T) store.Store { return openThrough(t, url) })
}

// TestPgBouncerRefusals: what PgBouncer cannot take is refused as
// UNAVAILABLE with words that say what to do. A session setting the store
// URL adds is a startup parameter PgBouncer refuses (Open fails, naming
// ignore_startup_parameters; told to ignore it, Open works); in
// transaction mode two connections meet each other's prepared statements
// on its one server connection, which errand names too.
func TestPgBouncerRefusals(t *testing.T) {
	ctx := t.Context()
	bouncer := startPgBouncer(t, "session", "lock_timeout", 4)
	withSetting := postgres.WithParam(strings.Replace(bouncer, "?", "?pool_max_conns=2&", 1), "idle_session_timeout", "0")
	_, err := postgres.Open(ctx, withSetting, postgres.Options{Logger: postgres.Quiet, Schema: postgres.FreshSchema(t)})
	var te *task.Error
	if !errors.As(err, &te) || te.Code != task.CodeUnavailable || !strings.Contains(te.Message, "ignore_startup_parameters") ||
		!strings.Contains(te.Message, "store URL") || !strings.Contains(err.Error(), "unsupported startup parameter: idle_session_timeout") {
		t.Fatalf("Open through PgBouncer with a setting in the URL it does not ignore: %v", err)
	}
	ignored := postgres.WithParam(strings.Replace(bouncer, "?", "?pool_max_conns=2&", 1), "lock_timeout", "5000")
	s, err := postgres.Open(ctx, ignored, postgres.Options{Logger: postgres.Quiet, Schema: postgres.FreshSchema(t)})
	if err != nil {
		t.Fatalf("Open through PgBouncer with a setting in the URL it ignores: %v", err)
	}
	s.Close()

	txURL := startPgBouncer(t, "transaction", "", 1)
	pool, err := pgxpool.New(ctx, txURL)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	a, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Release()
	b, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release()
	const q = `SELECT $1::int + 1`
	if _, err := a.Exec(ctx, q, 1); err != nil {
		t.Fatal(err)
	}
	_, err = b.Exec(ctx, q, 1) // the same name, on the one server connection
	if err == nil {
		t.Fatal("a second connection prepared a statement already prepared on PgBouncer's one server connection")
	}
	err = postgres.InterpretError(err)
	if !errors.As(err, &te) || te.Code != task.CodeUnavailable || !strings.Contains(te.Message, "transaction or statement mode") {
		t.Fatalf("a prepared statement met again through transaction pooling: %v", err)
	}
}
