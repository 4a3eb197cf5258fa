package main

import (
	"strings"
	"testing"
)

// TestSecondsFlag: --delay, --min-backoff and --max-backoff read seconds
// or a Go duration, and refuse what JSON cannot carry.
func TestSecondsFlag(t *testing.T) {
	for in, want := range map[string]float64{"90": 90, "1.5": 1.5, "0": 0, "-1": -1, "90s": 90, "5m": 300, "1h30m": 5400, "250ms": 0.25} {
		var s seconds
		if err := s.Set(in); err != nil || float64(s) != want {
			t.Errorf("Set(%q) = %v, %v; want %v", in, float64(s), err, want)
		}
	}
	for in, msg := range map[string]string{"1x": "neither seconds", "": "neither seconds", "NaN": "not a number", "Inf": "not a number", "-inf": "not a number", "1e400": "not a number"} {
		var s seconds
		if err := s.Set(in); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("Set(%q) = %v; want an error with %q", in, err, msg)
		}
	}
	if _, err := finite("NaN"); err == nil {
		t.Error("finite(NaN) is no error")
	}
	if f, err := finite("2.5"); err != nil || f != 2.5 {
		t.Errorf("finite(2.5) = %v, %v", f, err)
	}
	for in, want := range map[string]int64{"3600": 3600, "72h": 259200, "90m": 5400, "-5": -5} {
		if n, err := wholeSeconds(in); err != nil || n != want {
			t.Errorf("wholeSeconds(%q) = %v, %v; want %v", in, n, err, want)
		}
	}
	for _, in := range []string{"1.5", "1.5s", "250ms", "x"} {
		if _, err := wholeSeconds(in); err == nil {
			t.Errorf("wholeSeconds(%q) is no error", in)
		}
	}
}
