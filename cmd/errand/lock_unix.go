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
	path := filepath.Join(dir, "errand.lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		b := make([]byte, 32)
		n, _ := f.ReadAt(b, 0)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			owner := "another process"
			if pid, perr := strconv.Atoi(strings.TrimSpace(string(b[:n]))); perr == nil {
				owner = "process " + strconv.Itoa(pid)
			}
			return nil, fmt.Errorf("the data directory %s is in use by another errand dev (%s): stop it, or give this one another --data", dir, owner)
		}
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return func() { f.Close() }, nil
}
