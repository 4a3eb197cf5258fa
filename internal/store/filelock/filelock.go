// Package filelock holds a file for one process with an exclusive flock,
// and names the process holding it when another tries: errand dev's data
// directory and the SQLite file of a node are taken this way. The kernel
// drops a lock when its process ends, however it ends.
package filelock

import (
	"errors"
	"strconv"
)

// ErrHeld is Lock's error when another process holds the lock.
var ErrHeld = errors.New("the lock is held")

// Holder is what a lock file says of its owner: "PID\nNAME\n".
type Holder struct {
	PID  int    // 0 when unknown
	Name string // what the process is ("errand dev"), "" when unknown
}

// Process names the holder by pid alone: "process 123".
func (h Holder) Process() string {
	if h.PID == 0 {
		return "another process"
	}
	return "process " + strconv.Itoa(h.PID)
}

// String names the holder: "errand dev (process 123)".
func (h Holder) String() string {
	if h.Name == "" {
		return h.Process()
	}
	return h.Name + " (" + h.Process() + ")"
}
