//go:build !unix

package deliver

import "time"

// cpuTime is unknown here; the benchmarks then report 0 CPU per delivery.
func cpuTime() time.Duration { return 0 }
