package main

// ratios.go prints the ratios BENCHMARKS.md reads: every errand system's
// throughput ÷ River on PostgreSQL's, per workload, from the same run.

import (
	"fmt"
	"io"
	"strings"
)

// ratioBase is the system the ratios divide by.
const ratioBase = "river-pg"

// printRatios prints, for each workload where river-pg has a throughput,
// each errand system's median per second ÷ river-pg's median (higher is
// better). Nothing when river-pg did not run.
func printRatios(w io.Writer, rows []*row) {
	var lines []string
	for _, base := range rows {
		if base.system != ratioBase || len(base.rounds) == 0 {
			continue
		}
		b := summarize(base).perSec
		if b <= 0 {
			continue
		}
		var parts []string
		for _, r := range rows {
			if r.workload != base.workload || !strings.HasPrefix(r.system, "errand-") || len(r.rounds) == 0 {
				continue
			}
			if s := summarize(r).perSec; s > 0 {
				parts = append(parts, fmt.Sprintf("%s %.2f", r.system, s/b))
			}
		}
		if len(parts) > 0 {
			lines = append(lines, fmt.Sprintf("  %-9s %s", base.workload, strings.Join(parts, ", ")))
		}
	}
	if len(lines) == 0 {
		return
	}
	fmt.Fprintf(w, "\nratios ÷ %s (medians per second, this run; higher is better):\n%s\n", ratioBase, strings.Join(lines, "\n"))
}

// printPushRatios prints each errand system's push rate ÷ raw-http's (the
// receiver over 64 connections, its best rate here) and ÷ raw-http-wide's
// (over as many connections as errand's push has deliveries in flight:
// what the connections alone cost the receiver).
// Nothing when neither raw system pushed.
func printPushRatios(w io.Writer, rows []*row) {
	raw := map[string]float64{}
	for _, r := range rows {
		if r.workload == "push" && strings.HasPrefix(r.system, "raw-http") && len(r.rounds) > 0 {
			raw[r.system] = summarize(r).perSec
		}
	}
	var parts []string
	for _, r := range rows {
		if r.workload != "push" || !strings.HasPrefix(r.system, "errand-") || len(r.rounds) == 0 {
			continue
		}
		s := summarize(r).perSec
		var of []string
		for _, name := range []string{"raw-http", "raw-http-wide"} {
			if b := raw[name]; b > 0 {
				of = append(of, fmt.Sprintf("%.2f of %s", s/b, name))
			}
		}
		if len(of) > 0 {
			parts = append(parts, r.system+" "+strings.Join(of, ", "))
		}
	}
	if len(parts) > 0 {
		fmt.Fprintf(w, "\npush ÷ the raw receiver (medians per second, this run):\n  %s\n", strings.Join(parts, "; "))
	}
}
