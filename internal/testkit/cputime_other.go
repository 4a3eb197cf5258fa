//go:build !unix

package testkit

import "time"

// CPUTime is not measured on this platform.
func CPUTime() time.Duration { return 0 }
