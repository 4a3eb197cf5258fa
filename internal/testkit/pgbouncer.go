package testkit

import (
	"bufio"
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
)

// PgBouncer runs a real PgBouncer in front of the server of direct (a
// postgres:// URL), in mode (session or transaction) with a pool of size
// server connections per database and user, its ignore_startup_parameters
// set to ignore, until t ends; it returns the URL of direct's database and
// user through it. Without the pgbouncer binary it skips t, or fails it
// when ERRAND_PGBOUNCER_REQUIRED is set (as CI sets it, having installed
// it).
func PgBouncer(t testing.TB, direct, mode, ignore string, size int) string {
	t.Helper()
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
