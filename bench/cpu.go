package main

// cpu.go reads CPU time from /proc: of a process, of this one, and of the
// local PostgreSQL server; and the CPU of an errand run's timed windows.

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// procCPUSeconds reads a process's user+system CPU time from
// /proc/<pid>/stat, its own and that of its children it has waited for
// (cutime+cstime); 0, 0 if the process is gone.
func procCPUSeconds(pid string) (own, children float64) {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0, 0
	}
	// Fields after the command (which is in parentheses): state is field 3,
	// utime, stime, cutime and cstime are fields 14–17, in clock ticks (100
	// per second).
	s := string(b)
	fs := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fs) < 15 {
		return 0, 0
	}
	var t [4]float64
	for i := range t {
		t[i], _ = strconv.ParseFloat(fs[11+i], 64)
	}
	return (t[0] + t[1]) / 100, (t[2] + t[3]) / 100
}

// selfCPUSeconds is this process's user+system CPU time so far.
func selfCPUSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// postgresCPUSeconds is the user+system CPU time of the whole local
// PostgreSQL server so far: every process whose comm is "postgres" (the
// postmaster, its background processes and every backend, of any
// database), plus the children they have waited for (backends that have
// exited count in the postmaster's cutime/cstime), so that the difference
// of two readings holds the backends that ended between them. db is the
// part of it used by the processes whose title names database dbName (its
// backends and autovacuum workers, while they live; "" = none). It sees the
// server only when it runs on this machine, in this PID namespace; 0 if
// there is none.
func postgresCPUSeconds(dbName string) (all, db float64) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0, 0
	}
	for _, d := range ents {
		pid := d.Name()
		if pid[0] < '0' || pid[0] > '9' {
			continue
		}
		comm, err := os.ReadFile("/proc/" + pid + "/comm")
		if err != nil || strings.TrimSpace(string(comm)) != "postgres" {
			continue
		}
		own, children := procCPUSeconds(pid)
		all += own + children
		if dbName == "" {
			continue
		}
		// The title: "postgres: 15/main: USER DBNAME HOST(PORT) STATE".
		if title, err := os.ReadFile("/proc/" + pid + "/cmdline"); err == nil &&
			strings.Contains(" "+strings.TrimRight(string(title), "\x00")+" ", " "+dbName+" ") {
			db += own
		}
	}
	return all, db
}

// cpuMark is the CPU time used so far by errand (each serve process of the
// run), this harness and, for a PostgreSQL store, the PostgreSQL server.
type cpuMark struct {
	nodes     []float64 // each serve process: node 1, then the extra nodes
	self      float64
	pg, pgRun float64 // the whole server; the run's database's processes
}

// errand is the CPU of every serve process.
func (m cpuMark) errand() float64 {
	var s float64
	for _, x := range m.nodes {
		s += x
	}
	return s
}

// cpuWindow is the CPU a timed window used: the difference of two marks.
type cpuWindow struct {
	cpuMark
	n int           // tasks of the window
	d time.Duration // its wall time
}

// markCPU reads errand's, the harness's and PostgreSQL's CPU time.
func (e *errandSystem) markCPU() cpuMark {
	m := cpuMark{self: selfCPUSeconds()}
	if e.proc != nil {
		m.nodes = append(m.nodes, e.proc.CPUSeconds())
	}
	for _, x := range e.extra {
		m.nodes = append(m.nodes, x.proc.CPUSeconds())
	}
	if e.store == "postgres" {
		m.pg, m.pgRun = postgresCPUSeconds(e.dbName)
	}
	return m
}

// cpuNote describes the CPU errand, the harness and (PostgreSQL store)
// the PostgreSQL server used for n tasks since the mark, and keeps the
// figures in e.lastCPU for the nodes workload.
func (e *errandSystem) cpuNote(n int, since cpuMark, d time.Duration) string {
	now := e.markCPU()
	w := cpuWindow{cpuMark: cpuMark{self: now.self - since.self, pg: now.pg - since.pg, pgRun: now.pgRun - since.pgRun}, n: n, d: d}
	for i, x := range now.nodes {
		if i < len(since.nodes) {
			x -= since.nodes[i]
		}
		w.nodes = append(w.nodes, x)
	}
	e.lastCPU = w
	ec := w.errand()
	s := fmt.Sprintf("errand %.2f CPU-s (%.0f µs/task, %.0f%% of a core), harness %.2f CPU-s, over %.2fs",
		ec, ec/float64(n)*1e6, ec/d.Seconds()*100, w.self, d.Seconds())
	if len(w.nodes) > 1 {
		var per []string
		for _, x := range w.nodes {
			per = append(per, fmt.Sprintf("%.2f", x))
		}
		s = fmt.Sprintf("%d nodes (CPU-s %s): %s", len(w.nodes), strings.Join(per, " + "), s)
	}
	if e.store == "postgres" {
		s += fmt.Sprintf("; PostgreSQL %.2f CPU-s (%.0f µs/task; the run's database's backends %.0f µs/task)",
			w.pg, w.pg/float64(n)*1e6, w.pgRun/float64(n)*1e6)
	}
	return s
}

// selfMark is the CPU time used so far by this process (River, or errand
// embedded, runs in it with the harness's producers) and, on PostgreSQL, by
// the server.
type selfMark struct {
	self, pg, pgRun float64
}

// markSelf reads the CPU time of this process and, if dbName is not "", of
// PostgreSQL (the whole server, and the processes of database dbName).
func markSelf(dbName string) selfMark {
	m := selfMark{self: selfCPUSeconds()}
	if dbName != "" {
		m.pg, m.pgRun = postgresCPUSeconds(dbName)
	}
	return m
}

// selfCPUNote describes the CPU this process (who: what runs in it) and, if
// dbName is not "", the PostgreSQL server used for n units of work (unit:
// "job", "task") since the mark: the figures errand's cpuNote gives, so that
// PostgreSQL's cost per task can be read side by side.
func selfCPUNote(who, unit string, n int, since selfMark, d time.Duration, dbName string) string {
	now := markSelf(dbName)
	self := now.self - since.self
	out := fmt.Sprintf("%s (one process) %.2f CPU-s (%.0f µs/%s, %.0f%% of a core), over %.2fs",
		who, self, self/float64(n)*1e6, unit, self/d.Seconds()*100, d.Seconds())
	if dbName != "" {
		pg, pgRun := now.pg-since.pg, now.pgRun-since.pgRun
		out += fmt.Sprintf("; PostgreSQL %.2f CPU-s (%.0f µs/%s; the run's database's backends %.0f µs/%s)",
			pg, pg/float64(n)*1e6, unit, pgRun/float64(n)*1e6, unit)
	}
	return out
}

// markCPU reads the CPU time of this process and of PostgreSQL.
func (s *riverSystem[TTx]) markCPU() selfMark { return markSelf(s.db()) }

// cpuNote is selfCPUNote for River's n jobs.
func (s *riverSystem[TTx]) cpuNote(n int, since selfMark, d time.Duration) string {
	return selfCPUNote("River and the harness", "job", n, since, d, s.db())
}

// db is the name of River's PostgreSQL database, "" on SQLite.
func (s *riverSystem[TTx]) db() string {
	if s.dbName == nil {
		return ""
	}
	return s.dbName()
}
