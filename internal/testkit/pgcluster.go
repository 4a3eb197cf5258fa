package testkit

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// PGCluster is a private PostgreSQL cluster in a temp directory, started
// by the test that needs to crash a database: never the machine's shared
// one. When the test runs as root, initdb and the server run as the
// "postgres" user (initdb refuses root).
type PGCluster struct {
	tb   testing.TB
	bin  string // directory of initdb, pg_ctl, postgres
	dir  string // the cluster's data directory
	log  string // the server's log file
	port int
	cred *syscall.Credential // nil when not root
}

// StartPGCluster makes a cluster with initdb and starts it on a free
// loopback port with settings (postgresql.conf lines) added; it is stopped
// and removed at the end of the test. The test is skipped, saying why, when
// no PostgreSQL binaries are installed.
func StartPGCluster(tb testing.TB, settings ...string) *PGCluster {
	tb.Helper()
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(bins) == 0 {
		tb.Skip("no PostgreSQL binaries in /usr/lib/postgresql/*/bin: the private-cluster test is skipped")
	}
	sort.Strings(bins)
	c := &PGCluster{tb: tb, bin: filepath.Dir(bins[len(bins)-1])}
	root, err := os.MkdirTemp("", "errand-pg-")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(root) })
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			tb.Skip("running as root and there is no postgres user to run initdb as")
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		c.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chmod(root, 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.Chown(root, uid, gid); err != nil {
			tb.Fatal(err)
		}
	}
	c.dir = filepath.Join(root, "data")
	c.log = filepath.Join(root, "server.log")
	c.run("initdb", "-D", c.dir, "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8", "--locale=C")
	c.port = freePort(tb)
	conf := append([]string{
		"listen_addresses = '127.0.0.1'",
		fmt.Sprintf("port = %d", c.port),
		fmt.Sprintf("unix_socket_directories = '%s'", root),
		"max_connections = 100",
		"shared_buffers = 32MB",
	}, settings...)
	f, err := os.OpenFile(filepath.Join(c.dir, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		tb.Fatal(err)
	}
	_, err = f.WriteString("\n" + strings.Join(conf, "\n") + "\n")
	f.Close()
	if err != nil {
		tb.Fatal(err)
	}
	c.Start()
	tb.Cleanup(func() { _ = c.pgctl("stop", "-m", "immediate") })
	return c
}

// URL is the cluster's connection URL (database postgres, trust auth).
func (c *PGCluster) URL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", c.port)
}

// Start starts the server and waits until it accepts connections.
func (c *PGCluster) Start() {
	c.tb.Helper()
	if err := c.pgctl("start", "-w", "-t", "60", "-l", c.log); err != nil {
		log, _ := os.ReadFile(c.log)
		c.tb.Fatalf("pg_ctl start: %v\n%s", err, log)
	}
}

// Crash stops the server the way a crash does (pg_ctl stop -m immediate):
// no checkpoint, whatever was not flushed to the WAL is lost.
func (c *PGCluster) Crash() {
	c.tb.Helper()
	if err := c.pgctl("stop", "-m", "immediate", "-w"); err != nil {
		c.tb.Fatalf("pg_ctl stop -m immediate: %v", err)
	}
}

func (c *PGCluster) pgctl(args ...string) error {
	cmd := c.command("pg_ctl", append([]string{"-D", c.dir}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%v: %s", err, out)
	}
	return nil
}

func (c *PGCluster) run(name string, args ...string) {
	c.tb.Helper()
	if out, err := c.command(name, args...).CombinedOutput(); err != nil {
		c.tb.Fatalf("%s: %v\n%s", name, err, out)
	}
}

func (c *PGCluster) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(c.bin, name), args...)
	cmd.Dir = os.TempDir()
	if c.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	}
	return cmd
}

// freePort returns a loopback TCP port free at the moment of the call.
func freePort(tb testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
