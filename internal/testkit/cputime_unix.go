//go:build unix

package testkit

import (
	"syscall"
	"time"
)

// CPUTime is the CPU time (user and system) this process has used.
// Benchmarks report it per operation beside the wall time: neighbours on a
// busy machine disturb it far less than the wall-clock rate.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
