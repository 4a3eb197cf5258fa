//go:build unix

package filelock

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestLockIsExclusive: a second Lock of the file, even in this process,
// is ErrHeld and names the holder; after release the file can be taken
// again.
func TestLockIsExclusive(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "x.lock")
	release, _, err := Lock(path, "errand test")
	if err != nil {
		t.Fatal(err)
	}
	_, holder, err := Lock(path, "another")
	if !errors.Is(err, ErrHeld) || holder.PID != os.Getpid() || holder.String() != "errand test (process "+itoa(os.Getpid())+")" {
		t.Fatalf("second lock: %v, holder %v", err, holder)
	}
	release()
	again, _, err := Lock(path, "another")
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	again()
}

func itoa(n int) string { return Holder{PID: n}.Process()[len("process "):] }
