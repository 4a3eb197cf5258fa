package main

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
)

// seconds is a flag of seconds (fractions allowed, as the API takes them)
// that also reads a Go duration: "90", "1.5", "90s", "5m", "1h30m". NaN
// and infinities are refused here: JSON cannot carry them.
type seconds float64

// String prints the seconds as a number.
func (s *seconds) String() string { return strconv.FormatFloat(float64(*s), 'f', -1, 64) }

// Set reads a number of seconds or a duration.
func (s *seconds) Set(v string) error {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		d, derr := time.ParseDuration(v)
		if derr != nil {
			return fmt.Errorf("%q is neither seconds (90, 1.5) nor a duration (90s, 5m, 1h30m)", v)
		}
		f = d.Seconds()
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return fmt.Errorf("%q is not a number of seconds", v)
	}
	*s = seconds(f)
	return nil
}

// Type names the flag's value in the help.
func (s *seconds) Type() string { return "seconds" }

// finite reads a number that JSON can carry (not NaN, not an infinity).
func finite(v string) (float64, error) {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%q is not a finite number", v)
	}
	return f, nil
}

// wholeSeconds reads a whole number of seconds, or a duration of whole
// seconds ("24h", "90m").
func wholeSeconds(v string) (int64, error) {
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		return n, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d%time.Second != 0 {
		return 0, fmt.Errorf("%q is neither whole seconds nor a duration of them", v)
	}
	return int64(d / time.Second), nil
}
