package main

// nodes_report.go prints the nodes workload's table (node count ×
// workload) and its JSON form.

import (
	"fmt"
	"io"
	"runtime"
	"text/tabwriter"
)

// nodeSummary is one cell of the nodes table: the medians over the rounds.
type nodeSummary struct {
	nodes              int
	workload           string
	n, rounds          int
	perSecond          float64
	errandUS, pgUS     float64
	pgRunUS            float64
	harnessUS, seconds float64
}

// nodeSummaries is r's cells in the order measured, each the median of its
// rounds.
func nodeSummaries(r *row) []nodeSummary {
	var out []nodeSummary
	for _, k := range nodeCounts {
		for _, wl := range nodeWorkloads {
			var per, eus, pus, rus, hus, secs []float64
			n := 0
			for _, x := range r.rounds {
				for _, c := range x.nodes {
					if c.nodes == k && c.workload == wl {
						per, eus, pus = append(per, c.perSecond), append(eus, c.errandUS), append(pus, c.pgUS)
						rus, hus, secs = append(rus, c.pgRunUS), append(hus, c.harnessUS), append(secs, c.seconds)
						n = c.n
					}
				}
			}
			if len(per) == 0 {
				continue
			}
			out = append(out, nodeSummary{nodes: k, workload: wl, n: n, rounds: len(per), perSecond: median(per),
				errandUS: median(eus), pgUS: median(pus), pgRunUS: median(rus), harnessUS: median(hus), seconds: median(secs)})
		}
	}
	return out
}

// printNodes prints the nodes workload's table, if it ran.
func printNodes(w io.Writer, rows []*row) {
	for _, r := range rows {
		if r.workload != "nodes" || len(r.rounds) == 0 {
			continue
		}
		cells := nodeSummaries(r)
		if len(cells) == 0 {
			continue
		}
		fmt.Fprintf(w, "\nnodes (%s, %s tasks per cell, a fresh database per cell, %d round(s)):\n", r.system, thousands(float64(cells[0].n)), cells[0].rounds)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "nodes\tworkload\ttasks/s\terrand µs/task\tPG µs/task\trun's db only\t≈ tasks/s per PG core\tharness µs/task\t")
		for _, c := range cells {
			ceiling := "-"
			if c.pgUS > 0 {
				ceiling = thousands(1e6 / c.pgUS)
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%.0f\t%.0f\t%.0f\t%s\t%.0f\t\n", c.nodes, c.workload, thousands(c.perSecond), c.errandUS, c.pgUS, c.pgRunUS, ceiling, c.harnessUS)
		}
		tw.Flush()
		fmt.Fprint(w, `pull: burndown's lease workers spread round-robin over the nodes' addresses; push: a paused push
queue to the loopback receiver unpaused, every node's dispatcher delivering; add (--nodes-workloads):
single adds to a pull queue from the insert workload's callers spread over the nodes, no one leasing;
push-add (--nodes-workloads): the same single adds to a push queue, timed to the last delivery.
errand µs/task: the CPU
of all the serve processes over the timed window. PG µs/task: the CPU of every process named postgres
on this machine — the whole server, otherwise idle during the run — including backends that exited
(the postmaster's child times); run's db only: the live processes whose title names the run's
database (its backends and autovacuum workers; not the WAL writer, checkpointer or exited backends):
a gap well beyond those means something else used the server during the run.
`)
		cores := runtime.NumCPU()
		if cores <= 4 {
			fmt.Fprintf(w, "On this %d-core machine errand's nodes, PostgreSQL and the harness share %d cores: more nodes show\ntheir overhead, not scaling.", cores, cores)
		} else {
			fmt.Fprintf(w, "errand's nodes, PostgreSQL and the harness share this machine's %d cores: more nodes can scale\nonly as far as cores are free.", cores)
		}
		fmt.Fprint(w, ` PG µs/task predicts one database's ceiling on a bigger server, with errand's
nodes elsewhere: ≈ cores × 1e6 / PG µs per task (the "tasks/s per PG core" column times its cores).
`)
	}
}

// jsonNodeCell is one cell of the nodes table in the --json output.
type jsonNodeCell struct {
	Nodes            int     `json:"nodes"`
	Workload         string  `json:"workload"` // "pull" or "push"
	N                int     `json:"n"`
	Rounds           int     `json:"rounds"`
	Seconds          float64 `json:"seconds"`
	PerSecond        float64 `json:"perSecond"`
	ErrandCPUUSTask  float64 `json:"errandCpuUsPerTask"`
	PGCPUUSTask      float64 `json:"pgCpuUsPerTask"`    // the whole server
	PGRunCPUUSTask   float64 `json:"pgRunCpuUsPerTask"` // the run database's live processes only
	HarnessCPUUSTask float64 `json:"harnessCpuUsPerTask"`
}

func jsonNodes(r *row) []jsonNodeCell {
	var out []jsonNodeCell
	for _, c := range nodeSummaries(r) {
		out = append(out, jsonNodeCell{Nodes: c.nodes, Workload: c.workload, N: c.n, Rounds: c.rounds,
			Seconds: round3(c.seconds), PerSecond: round3(c.perSecond),
			ErrandCPUUSTask: round3(c.errandUS), PGCPUUSTask: round3(c.pgUS), PGRunCPUUSTask: round3(c.pgRunUS), HarnessCPUUSTask: round3(c.harnessUS)})
	}
	return out
}
