package embedded

import "time"

// wholeSeconds is d in whole seconds, a fraction rounded away from zero:
// up for a length (a caller asking for 1.5 s gets at least that), and down
// for a negative one, which then stays negative for the engine to refuse.
func wholeSeconds(d time.Duration) int {
	s := d / time.Second
	switch r := d % time.Second; {
	case r > 0:
		s++
	case r < 0:
		s--
	}
	return int(s)
}
