//go:build unix

package filelock

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Lock takes an exclusive flock on path (made if missing, and its
// directory, owner-only) for this process and writes its pid and who into
// it. When another open file holds it (another process, or another Lock of
// this one), the error is ErrHeld and holder says who holds it. The file
// is left in place when the lock is released: removing it would let two
// processes lock two different files of one name.
func Lock(path, who string) (release func(), holder Holder, err error) {
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
			holder.PID, _ = strconv.Atoi(strings.TrimSpace(pid))
			holder.Name = strings.TrimSpace(name)
			return nil, holder, ErrHeld
		}
		return nil, holder, fmt.Errorf("locking %s: %w", path, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"+who+"\n"), 0)
	}
	return func() { f.Close() }, holder, nil
}
