package main

import (
	"bufio"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"
)

// percentile returns the p-th percentile (0–100) of d by nearest rank.
func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	rank := int(p/100*float64(len(s))+0.999999) - 1
	rank = max(0, min(rank, len(s)-1))
	return s[rank]
}

// median of xs (xs is not changed).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// resetPeakRSS frees what the Go heap can give back and resets this process's
// peak RSS (VmHWM) so that the next reading covers one run only.
func resetPeakRSS() {
	runtime.GC()
	debug.FreeOSMemory()
	resetPeakRSSOf("self")
}

// resetPeakRSSOf resets the peak RSS (VmHWM) of a process ("self" or a pid)
// to its current RSS.
func resetPeakRSSOf(pid string) {
	_ = os.WriteFile("/proc/"+pid+"/clear_refs", []byte("5"), 0)
}

// peakRSSMB reads VmHWM of a process ("self" or a pid) in MiB; 0 if unknown.
func peakRSSMB(pid string) float64 {
	return statusKB(pid, "VmHWM:") / 1024
}

// rssMB reads the current VmRSS of a process in MiB; 0 if unknown.
func rssMB(pid string) float64 {
	return statusKB(pid, "VmRSS:") / 1024
}

func statusKB(pid, field string) float64 {
	f, err := os.Open("/proc/" + pid + "/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, field) {
			fs := strings.Fields(line)
			if len(fs) >= 2 {
				v, _ := strconv.ParseFloat(fs[1], 64)
				return v
			}
		}
	}
	return 0
}

// thousands formats a number with thousands separators.
func thousands(v float64) string {
	n := int64(v + 0.5)
	s := strconv.FormatInt(n, 10)
	if n < 0 {
		return s
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func fmtMS(v float64) string {
	switch {
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
}
