//go:build unix

package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// lockDataDir takes the data directory for this process: an exclusive
// flock on DIR/errand.lock, which holds the owner's pid. A second errand
// dev on the directory is refused, naming the first one's pid. The kernel
// drops the lock when the process ends, however it ends.
func lockDataDir(dir string) (release func(), err error) {
	release, holder, err := lockFile(filepath.Join(dir, "errand.lock"), "errand dev")
	if errors.Is(err, errLockHeld) {
		return nil, fmt.Errorf("the data directory %s is in use by another errand dev (%s): stop it, or give this one another --data", dir, holder.pid())
	}
	return release, err
}

// lockSQLite takes the SQLite file at path for this process, who ("errand
// serve", "errand dev"): an exclusive flock on PATH.lock beside it, which
// holds the owner's pid and name. SQLite is one node's store: a second
// node on the file would run every service (deliveries, leases' expiry,
// schedules) a second time, so it is refused, naming the holder; what
// follows the message says what to do instead. Commands that only read or
// write the store briefly (keys, restore) do not take it.
func lockSQLite(path, who, instead string) (release func(), err error) {
	release, holder, err := lockFile(path+".lock", who)
	if errors.Is(err, errLockHeld) {
		if a, aerr := filepath.Abs(path); aerr == nil {
			path = a
		}
		return nil, fmt.Errorf("the SQLite store %s is in use by %s: a SQLite store serves one node; %s", path, holder, instead)
	}
	return release, err
}

// lockHolder is what a lock file says of its owner: "PID\nNAME\n".
type lockHolder struct {
	pidNum int // 0 when unknown
	name   string
}

// pid names the holder by pid alone: "process 123".
func (h lockHolder) pid() string {
	if h.pidNum == 0 {
		return "another process"
	}
	return "process " + strconv.Itoa(h.pidNum)
}

// String names the holder: "errand dev (process 123)".
func (h lockHolder) String() string {
	if h.name == "" {
		return h.pid()
	}
	return h.name + " (" + h.pid() + ")"
}

// errLockHeld is lockFile's error when another process holds the lock.
var errLockHeld = errors.New("the lock is held")

// lockFile takes an exclusive flock on path (made if missing, and its
// directory, owner-only) for this process and writes its pid and who into
// it. The file is left in place when the lock is released: removing it
// would let two processes lock two different files of one name.
func lockFile(path, who string) (release func(), holder lockHolder, err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, holder, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, holder, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		b := make([]byte, 256)
		n, _ := f.ReadAt(b, 0)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			pid, name, _ := strings.Cut(strings.TrimSpace(string(b[:n])), "\n")
			holder.pidNum, _ = strconv.Atoi(strings.TrimSpace(pid))
			holder.name = strings.TrimSpace(name)
			return nil, holder, errLockHeld
		}
		return nil, holder, fmt.Errorf("locking %s: %w", path, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"+who+"\n"), 0)
	}
	return func() { f.Close() }, holder, nil
}
